//! A store another process holds, taken over when it lets go (issue 39). A window reload starts the new
//! server while the old one still runs (it ends after `exit`, or when its pipe closes, writing its state
//! first): the new one cannot have the lock and opens a temporary store, in which the changes that wait
//! for review are not. It waits for the lock on a thread of its own (a blocking `flock`: woken when the
//! other process ends, no polling), then opens the real store, which the workspace puts in the
//! temporary one's place if nothing was recorded there meanwhile (`workspace/checkpoints.rs`).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{Checkpoints, Limits};

impl Checkpoints {
    /// The state directory another process held when this store opened (this one is temporary meanwhile).
    pub fn held_elsewhere(&self) -> Option<&Path> {
        self.held_elsewhere.as_deref()
    }

    /// Blocks until this process has the lock of `dir`, then opens the store there (as `open` does).
    pub fn open_when_free(dir: &Path, root: &Path, limits: Limits) -> std::io::Result<Checkpoints> {
        let root = std::fs::canonicalize(root)?;
        let lock = wait_for_lock(dir)?;
        Self::open_in(dir.to_path_buf(), false, lock, root, limits)
    }

    /// Nothing was recorded here yet (no checkpoint, no command being followed): another store can take
    /// its place without anything being lost.
    pub fn untouched(&self) -> bool {
        self.cps.is_empty() && !self.armed && self.unflushed.is_empty()
    }

    /// Takes `old`'s place: the user's saves are noted where they were (the workspace holds that set).
    pub fn replace(&mut self, old: &Checkpoints) {
        self.user_saved = old.user_saved.clone();
    }

    /// Where this store lives.
    pub fn dir(&self) -> PathBuf {
        self.dir.clone()
    }
}

/// The lock of `dir`, waited for.
fn wait_for_lock(dir: &Path) -> std::io::Result<File> {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(dir)?;
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("lock"))?;
    loop {
        // SAFETY: a valid fd.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store opened while another holds the directory is temporary and says which directory it stands
    /// in for; the one waiting gets the directory once the holder is gone.
    #[test]
    fn a_store_held_elsewhere_is_opened_when_its_holder_lets_go() {
        let base = std::env::temp_dir().join(format!("stepwise-handover-{}", std::process::id()));
        let (root, state) = (base.join("root"), base.join("state"));
        std::fs::create_dir_all(&root).unwrap();
        let holder = Checkpoints::open(Some(&state), &root, Limits::default()).unwrap();
        assert!(holder.held_elsewhere().is_none());
        let stand_in = Checkpoints::open(Some(&state), &root, Limits::default()).unwrap();
        assert_eq!(stand_in.held_elsewhere(), Some(state.as_path()));
        assert!(stand_in.untouched());
        assert_ne!(stand_in.dir(), state);

        let (r, s) = (root.clone(), state.clone());
        let waiter = std::thread::spawn(move || Checkpoints::open_when_free(&s, &r, Limits::default()));
        drop(holder);
        let opened = waiter.join().unwrap().unwrap();
        assert_eq!(opened.dir(), state);
        assert!(opened.held_elsewhere().is_none());
        let stand_in_dir = stand_in.dir();
        drop(stand_in);
        assert!(!stand_in_dir.exists(), "the temporary store is removed with it");
        drop(opened);
        let _ = std::fs::remove_dir_all(&base);
    }
}
