//! The keeper's inotify watch: one per followed folder of the workspace, read without blocking before
//! and after each sandboxed command (the kernel queues an event as each change is made, so once the
//! command's processes are gone every change they made is in the queue). `IN_OPEN`/`IN_ACCESS` are
//! left out, so a command that only reads adds nothing. Separate from the checkpoints' watch: the
//! keeper works whether or not checkpoints are on, and it follows what they skip (`.git`'s hooks).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

/// Past this many changed paths in one take, checking each costs more than a walk: the set is dropped.
const MAX_PATHS: usize = 16384;

pub struct Watch {
    fd: Inotify,
    dirs: HashMap<WatchDescriptor, PathBuf>,
    /// The other way round: which folders are watched under their present names.
    names: HashMap<PathBuf, WatchDescriptor>,
    /// Why the events cannot be trusted any more (a folder could not be watched): every check walks.
    broken: Option<String>,
}

/// What a folder's watch reports: every change to a name in it or to itself, never a read. The checkpoints'
/// watch (`checkpoint/watch/linux.rs`) uses the same.
pub(crate) fn mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::MODIFY
        | WatchMask::ATTRIB
        | WatchMask::CLOSE_WRITE
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::ONLYDIR
        | WatchMask::DONT_FOLLOW
}

impl Watch {
    pub fn new() -> Result<Watch, String> {
        let fd = Inotify::init().map_err(|e| format!("inotify: {e}"))?;
        Ok(Watch { fd, dirs: HashMap::new(), names: HashMap::new(), broken: None })
    }

    /// Watches the folder `rel` at `abs` (again: the kernel gives the same watch, now under this name).
    pub fn add(&mut self, rel: &Path, abs: &Path) {
        if self.broken.is_some() {
            return;
        }
        match self.fd.watches().add(abs, mask()) {
            Ok(wd) => {
                // A folder moved since it was watched comes back under its new name.
                if let Some(old) = self.dirs.insert(wd.clone(), rel.to_path_buf()) {
                    self.names.remove(&old);
                }
                self.names.insert(rel.to_path_buf(), wd);
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                self.broken = Some("the inotify watch limit is reached (fs.inotify.max_user_watches)".into())
            }
            Err(e) => self.broken = Some(format!("{} cannot be watched: {e}", abs.display())),
        }
    }

    /// Whether the folder `rel` is watched under that name (a folder made or moved there is not yet).
    pub fn watching(&self, rel: &Path) -> bool {
        self.names.contains_key(rel)
    }

    /// The paths changed since the last take (relative), each with whether an event said it is (or was) a
    /// folder, or why some may have been missed. The kernel marks every event whose subject is a folder
    /// (`IN_ISDIR`: made, moved in, removed, changed), so a name no event marked cannot have become a
    /// folder in this window: the keeper asks the disk only about the marked ones (issue 39: a `statx`
    /// per changed file of every command).
    pub fn take(&mut self) -> Result<HashMap<PathBuf, bool>, String> {
        let mut out: HashMap<PathBuf, bool> = HashMap::new();
        let mut lost: Option<String> = self.broken.clone();
        let mut buf = [0u8; 16384];
        loop {
            let events = match self.fd.read_events(&mut buf) {
                Ok(events) => events,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    lost.get_or_insert(format!("inotify: {e}"));
                    break;
                }
            };
            for ev in events {
                if ev.mask.contains(EventMask::Q_OVERFLOW) {
                    lost.get_or_insert("the kernel's inotify queue overflowed".into());
                    continue;
                }
                if ev.mask.contains(EventMask::IGNORED) {
                    if let Some(old) = self.dirs.remove(&ev.wd) {
                        self.names.remove(&old);
                    }
                    continue;
                }
                let Some(dir) = self.dirs.get(&ev.wd) else { continue };
                // An event on a watched folder itself (no name) is about a folder.
                let folder = ev.name.is_none() || ev.mask.contains(EventMask::ISDIR);
                let path = match ev.name {
                    None => dir.clone(),
                    Some(name) => dir.join(name),
                };
                if let Some(seen) = out.get_mut(&path) {
                    *seen |= folder;
                } else if lost.is_none() && out.len() < MAX_PATHS {
                    out.insert(path, folder);
                } else {
                    lost.get_or_insert(format!("more than {MAX_PATHS} paths changed"));
                }
            }
        }
        match lost {
            Some(why) => Err(why),
            None => Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_take_marks_the_names_that_are_folders_and_only_those() {
        let dir = std::env::temp_dir().join(format!("stepwise-keep-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("old")).unwrap();
        let mut w = Watch::new().unwrap();
        w.add(Path::new(""), &dir);
        std::fs::create_dir(dir.join("made")).unwrap();
        std::fs::write(dir.join("file"), "x").unwrap();
        std::fs::rename(dir.join("old"), dir.join("moved")).unwrap();
        // A file removed and a folder made at its name: the folder's event marks it.
        std::fs::remove_file(dir.join("file")).unwrap();
        std::fs::create_dir(dir.join("file")).unwrap();
        std::fs::write(dir.join("plain"), "y").unwrap();
        let taken = w.take().unwrap();
        let folder = |n: &str| taken.get(Path::new(n)).copied();
        assert_eq!(folder("made"), Some(true));
        assert_eq!(folder("moved"), Some(true));
        assert_eq!(folder("old"), Some(true));
        assert_eq!(folder("file"), Some(true));
        assert_eq!(folder("plain"), Some(false));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
