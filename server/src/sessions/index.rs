//! A folder's saved sessions beyond its own: their ids, titles and worktrees, so they survive a restart
//! and a closed one can be reopened. The folder's own session (`main`) is the folder's state file as
//! before (`store::file_for`); the others are `<state>/sessions/<id>.json` (checkpoints beside), listed in
//! `<state>/folders/<folder>-<hash>.json`. The list is changed under a lock on its file, so two processes
//! (the sidecar and `stepwise run --worktree`) add to it without losing each other's sessions.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::worktree::Worktree;

/// The folder's own session, as commands and notifications name it.
pub const MAIN: &str = "main";

/// One saved session of a folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub id: String,
    pub title: String,
    /// Milliseconds since the epoch.
    pub created: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<Worktree>,
    /// Closed: kept (with its worktree) until it is reopened or discarded.
    #[serde(default)]
    pub closed: bool,
}

#[derive(Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    folder: PathBuf,
    #[serde(default)]
    sessions: Vec<Entry>,
}

/// The list of a folder's sessions in a state directory.
#[derive(Debug, Clone)]
pub struct Index {
    file: PathBuf,
    folder: PathBuf,
}

/// A session's saved conversation: `<state>/sessions/<id>.json`.
pub fn state_file(dir: &Path, id: &str) -> PathBuf {
    dir.join("sessions").join(format!("{id}.json"))
}

/// What a copy's files held at the start, and what was applied since: `<state>/sessions/<id>.base.json`.
pub fn manifest_file(dir: &Path, id: &str) -> PathBuf {
    dir.join("sessions").join(format!("{id}.base.json"))
}

/// Whether `id` can name a session file (letters, digits, `-`, `_`).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl Index {
    /// The list for `folder` (canonical) in the state directory `dir`.
    pub fn of(dir: &Path, folder: &Path) -> Index {
        let own = crate::store::file_for(dir, folder);
        let name = own.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        Index { file: dir.join("folders").join(name), folder: folder.to_path_buf() }
    }

    /// The saved sessions, oldest first (an unreadable list is empty, and said in the log).
    pub fn list(&self) -> Vec<Entry> {
        self.read().sessions
    }

    pub fn get(&self, id: &str) -> Option<Entry> {
        self.list().into_iter().find(|e| e.id == id)
    }

    fn read(&self) -> File {
        match std::fs::read(&self.file) {
            Ok(b) => serde_json::from_slice(&b).unwrap_or_else(|e| {
                tracing::warn!("{} cannot be read ({e}); its sessions are not listed", self.file.display());
                File::default()
            }),
            Err(_) => File::default(),
        }
    }

    /// Changes the list under its lock and writes it.
    pub fn update<T>(&self, change: impl FnOnce(&mut Vec<Entry>) -> T) -> Result<T, String> {
        let dir = self.file.parent().ok_or("no folder for the sessions' list")?;
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.file.with_extension("lock"))
            .map_err(|e| format!("cannot lock the sessions' list: {e}"))?;
        // SAFETY: a valid fd; released when `lock` closes.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) } != 0 {
            return Err(format!("cannot lock the sessions' list: {}", std::io::Error::last_os_error()));
        }
        let mut file = self.read();
        let out = change(&mut file.sessions);
        file.folder = self.folder.clone();
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
        crate::store::write_atomic(&self.file, &bytes).map_err(|e| format!("cannot save the sessions' list: {e}"))?;
        Ok(out)
    }

    /// Adds (or replaces) a session.
    pub fn put(&self, entry: Entry) -> Result<(), String> {
        self.update(|all| match all.iter_mut().find(|e| e.id == entry.id) {
            Some(e) => *e = entry,
            None => all.push(entry),
        })
    }

    /// Forgets a session (its files are the caller's to remove).
    pub fn remove(&self, id: &str) -> Result<(), String> {
        self.update(|all| all.retain(|e| e.id != id))
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_listed_per_folder_and_survive_a_reread() {
        let dir = std::env::temp_dir().join(format!("stepwise-index-{}", std::process::id()));
        let a = Index::of(&dir, Path::new("/work/a"));
        let b = Index::of(&dir, Path::new("/work/b"));
        let entry = |id: &str| Entry { id: id.into(), title: id.into(), created: 1, worktree: None, closed: false };
        a.put(entry("s1")).unwrap();
        a.put(entry("s2")).unwrap();
        b.put(entry("s3")).unwrap();
        a.update(|all| all.iter_mut().for_each(|e| e.closed = e.id == "s1")).unwrap();
        let ids: Vec<_> = a.list().into_iter().map(|e| (e.id, e.closed)).collect();
        assert_eq!(ids, [("s1".to_string(), true), ("s2".to_string(), false)]);
        assert_eq!(b.list().len(), 1);
        a.remove("s1").unwrap();
        assert_eq!(a.get("s2").map(|e| e.id), Some("s2".into()));
        assert!(a.get("s1").is_none());
        assert!(valid_id("s1a-2_b") && !valid_id("../x") && !valid_id(""));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
