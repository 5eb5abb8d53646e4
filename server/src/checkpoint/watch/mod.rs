//! Which paths changed, from the file system's change notifications, so that a scan looks at those only
//! (`scan.rs`). Linux: inotify, one watch per followed folder, read without blocking when a scan starts
//! (the kernel queues every event as the change is made, so a scan after a command sees all of its
//! changes). macOS: one FSEvents stream for the workspace (`notify`), flushed by a marker file the
//! checkpoints write in their own folder.
//!
//! Notifications are only trusted where they are complete: a lost event (the kernel's queue overflowed),
//! more changed paths than `MAX_PATHS`, a folder that could not be watched (the watch limit) or a file
//! system that does not report every change (network and FUSE mounts) make the next scan a full one.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;

#[cfg(target_os = "linux")]
pub use linux::Watch;
#[cfg(target_os = "macos")]
pub use macos::Watch;

use std::collections::HashSet;
use std::path::Path;

/// Past this many changed paths a full scan costs less than looking at each: the set is dropped, so
/// memory stays bounded whatever a command does.
pub const MAX_PATHS: usize = 8192;

/// The changed paths named since the last `take`, or why they cannot be trusted.
#[derive(Default)]
struct Pending {
    paths: HashSet<String>,
    /// Events were lost since the last `take`: the next scan is a full one.
    lost: Option<String>,
}

impl Pending {
    fn add(&mut self, key: String) {
        if self.lost.is_some() {
            return;
        }
        if self.paths.len() >= MAX_PATHS {
            self.lost = Some(format!("more than {MAX_PATHS} paths changed"));
            self.paths = HashSet::new();
            return;
        }
        self.paths.insert(key);
    }

    fn lose(&mut self, why: &str) {
        if self.lost.is_none() {
            self.lost = Some(why.to_string());
        }
        self.paths = HashSet::new();
    }

    fn take(&mut self) -> Result<Vec<String>, String> {
        let p = std::mem::take(self);
        match p.lost {
            Some(why) => Err(why),
            None => Ok(p.paths.into_iter().collect()),
        }
    }
}

/// Whether the file system holding `path` reports every change made on this machine through its
/// notifications (local disk file systems do; network, FUSE and virtual-machine shares may not).
pub fn trusted_fs(path: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| "a path with a NUL byte".to_string())?;
    // SAFETY: zeroed plain data, filled by the kernel.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a live statfs.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(format!("statfs {}: {}", path.display(), std::io::Error::last_os_error()));
    }
    local(&st)
        .map_err(|fs| format!("{} is on a {fs} file system, whose notifications may miss changes", path.display()))
}

#[cfg(target_os = "linux")]
fn local(st: &libc::statfs) -> Result<(), String> {
    // The magic numbers of `statfs(2)`.
    const LOCAL: [i64; 10] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0x794C_7630, // overlayfs (containers)
        0xF2F5_2010, // f2fs
        0x2FC1_2FC1, // zfs
        0xCA45_1A4E, // bcachefs
        0x5265_4973, // reiserfs
        0x3153_464A, // jfs
    ];
    #[allow(clippy::unnecessary_cast)]
    let t = st.f_type as i64;
    if LOCAL.contains(&t) {
        Ok(())
    } else {
        Err(format!("type {t:#x}"))
    }
}

#[cfg(target_os = "macos")]
fn local(st: &libc::statfs) -> Result<(), String> {
    // SAFETY: the kernel NUL-terminates the name.
    let name = unsafe { std::ffi::CStr::from_ptr(st.f_fstypename.as_ptr()) }.to_string_lossy().into_owned();
    if ["apfs", "hfs"].contains(&name.as_str()) {
        Ok(())
    } else {
        Err(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_many_paths_or_a_loss_make_the_next_scan_a_full_one_and_memory_stays_bounded() {
        let mut p = Pending::default();
        for i in 0..MAX_PATHS {
            p.add(format!("f{i}"));
        }
        assert_eq!(p.take().map(|v| v.len()), Ok(MAX_PATHS));
        for i in 0..=MAX_PATHS {
            p.add(format!("f{i}"));
        }
        assert!(p.paths.is_empty(), "dropped once over the bound");
        assert!(p.take().is_err_and(|e| e.contains("more than")));
        p.add("a".into());
        p.lose("the kernel's inotify queue overflowed");
        p.add("b".into());
        assert_eq!(p.take(), Err("the kernel's inotify queue overflowed".to_string()));
        assert_eq!(p.take(), Ok(vec![]), "trusted again after a full scan");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn only_local_file_systems_are_trusted() {
        assert!(trusted_fs(&std::env::temp_dir()).is_ok());
        // procfs reports no changes through inotify.
        assert!(trusted_fs(Path::new("/proc/self")).is_err_and(|e| e.contains("file system")));
    }
}
