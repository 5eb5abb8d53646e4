//! inotify: a watch on every followed folder (not the ignored ones, not `.git`), events read without
//! blocking when a scan starts. `IN_OPEN` and `IN_ACCESS` are left out, so a command that only reads
//! (a build, `grep -r`) adds nothing to the queue. The descriptor, and with it every watch, is released
//! when the checkpoints are dropped.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use inotify::{EventMask, Inotify, WatchDescriptor};

use super::{trusted_fs, Pending};
use crate::locks;

pub struct Watch {
    inner: Mutex<Inner>,
}

struct Inner {
    fd: Inotify,
    /// The folder each watch is on, by key ("" for the workspace).
    dirs: HashMap<WatchDescriptor, String>,
    pending: Pending,
    /// Why the notifications can no longer be trusted at all (a folder could not be watched).
    broken: Option<String>,
}

impl Watch {
    /// A watcher for the workspace `root` (no folder watched yet: `add_dir` each before listing it).
    pub fn start(root: &Path, _state: &Path) -> Result<Watch, String> {
        trusted_fs(root)?;
        let fd = Inotify::init().map_err(|e| format!("inotify: {e}"))?;
        Ok(Watch { inner: Mutex::new(Inner { fd, dirs: HashMap::new(), pending: Pending::default(), broken: None }) })
    }

    /// Watches the folder `key` at `path` (again: the kernel gives the same watch for the same folder).
    pub fn add_dir(&self, key: &str, path: &Path) {
        let mut inner = locks::lock(&self.inner);
        if inner.broken.is_some() {
            return;
        }
        if let Err(e) = trusted_fs(path) {
            inner.broken = Some(e);
            return;
        }
        match inner.fd.watches().add(path, crate::sandbox::watch_mask()) {
            Ok(wd) => {
                inner.dirs.insert(wd, key.to_string());
            }
            // Gone since it was listed: its parent's event says so.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                inner.broken = Some(
                    "the inotify watch limit is reached (fs.inotify.max_user_watches; other programs hold watches too)"
                        .into(),
                )
            }
            Err(e) => inner.broken = Some(format!("{} cannot be watched: {e}", path.display())),
        }
    }

    /// Releases the watches of folders no longer followed (gone, moved out, ignored now).
    pub fn forget(&self, keys: &[String]) {
        let mut inner = locks::lock(&self.inner);
        let keys: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        let gone: Vec<WatchDescriptor> =
            inner.dirs.iter().filter(|(_, k)| keys.contains(k.as_str())).map(|(wd, _)| wd.clone()).collect();
        for wd in gone {
            inner.dirs.remove(&wd);
            let _ = inner.fd.watches().remove(wd);
        }
    }

    /// Why the notifications cannot be used any more, if they cannot.
    pub fn broken(&self) -> Option<String> {
        locks::lock(&self.inner).broken.clone()
    }

    /// Folders watched.
    pub fn watched(&self) -> usize {
        locks::lock(&self.inner).dirs.len()
    }

    /// The paths changed since the last call (keys, unordered), or why events were lost.
    pub fn take(&self) -> Result<Vec<String>, String> {
        let mut inner = locks::lock(&self.inner);
        let mut buf = [0u8; 16384];
        loop {
            let Inner { fd, dirs, pending, .. } = &mut *inner;
            let events = match fd.read_events(&mut buf) {
                Ok(events) => events,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    pending.lose(&format!("inotify: {e}"));
                    break;
                }
            };
            for ev in events {
                if ev.mask.contains(EventMask::Q_OVERFLOW) {
                    pending.lose("the kernel's inotify queue overflowed");
                    continue;
                }
                if ev.mask.contains(EventMask::IGNORED) {
                    dirs.remove(&ev.wd);
                    continue;
                }
                let Some(dir) = dirs.get(&ev.wd) else { continue };
                let key = match ev.name.map(|n| n.to_str()) {
                    None => dir.clone(),
                    // Not UTF-8: checkpoints do not keep it.
                    Some(None) => continue,
                    Some(Some(name)) if dir.is_empty() => name.to_string(),
                    Some(Some(name)) => format!("{dir}/{name}"),
                };
                if !key.is_empty() {
                    pending.add(key);
                }
            }
        }
        if let Some(b) = &inner.broken {
            return Err(b.clone());
        }
        inner.pending.take()
    }
}
