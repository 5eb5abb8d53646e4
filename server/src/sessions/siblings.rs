//! The sessions of one folder in this process know of each other, so that no session's work silently
//! becomes another's (issue 47): every session's checkpoints follow the whole folder, and without a word
//! a session's command would claim what another session did meanwhile.
//!
//! - A session's file tools say what they wrote; every other session of the folder then treats that path
//!   as the user's save (`Sibling::other_wrote`): not its command's change, and a conflict at its rewind.
//! - A session's commands are windows in time (open while its checkpoints follow a command). Two windows
//!   of different sessions that overlap and both found a path changed cannot be told apart: each session
//!   is told (`Sibling::overlapped`) and its review and rewind say so rather than guess. A path only one
//!   of them found changed belongs to that one: the other's scans, before and after, saw it unchanged.
//!
//! Sessions join by their folder's canonical path (the sidecar's sessions and the ACP agent's with the
//! same `cwd` alike); a worktree session has a folder of its own and no siblings.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::locks;

/// What a session is told of its siblings' work.
pub trait Sibling: Send + Sync {
    /// Another session of the folder wrote `rel` (relative) with its file tools.
    fn other_wrote(&self, rel: &Path);
    /// A change of `rel` that this session's command found may be the session `with`'s, whose command
    /// ran at the same time.
    fn overlapped(&self, rel: &str, with: &str);
}

/// One folder's sessions and their recent command windows.
#[derive(Default)]
pub struct Folder {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: u64,
    members: Vec<Member>,
    windows: Vec<Window>,
}

struct Member {
    key: u64,
    label: String,
    sibling: Weak<dyn Sibling>,
}

/// A session's command (or its background tasks) followed from `start` to `end`, with what it changed.
struct Window {
    key: u64,
    start: u64,
    end: Option<u64>,
    changed: HashSet<String>,
}

fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<Folder>>> {
    static FOLDERS: OnceLock<Mutex<HashMap<PathBuf, Weak<Folder>>>> = OnceLock::new();
    FOLDERS.get_or_init(Default::default)
}

/// A session's place among its folder's sessions; it leaves when dropped.
pub struct Membership {
    folder: Arc<Folder>,
    key: u64,
}

/// Joins the sessions of the folder `root` (canonical) as `label` (how the others' reviews name it).
pub fn join(root: &Path, label: String, sibling: Weak<dyn Sibling>) -> Membership {
    let folder = {
        let mut all = locks::lock(registry());
        all.retain(|_, f| f.strong_count() > 0);
        match all.get(root).and_then(Weak::upgrade) {
            Some(f) => f,
            None => {
                let f = Arc::new(Folder::default());
                all.insert(root.to_path_buf(), Arc::downgrade(&f));
                f
            }
        }
    };
    let key = {
        let mut s = locks::lock(&folder.state);
        s.next += 1;
        let key = s.next;
        s.members.push(Member { key, label, sibling });
        key
    };
    Membership { folder, key }
}

impl Drop for Membership {
    fn drop(&mut self) {
        let mut s = locks::lock(&self.folder.state);
        s.members.retain(|m| m.key != self.key);
        s.windows.retain(|w| w.key != self.key);
    }
}

impl Membership {
    /// How the folder's other sessions name this one.
    pub fn set_label(&self, label: String) {
        let mut s = locks::lock(&self.folder.state);
        if let Some(m) = s.members.iter_mut().find(|m| m.key == self.key) {
            m.label = label;
        }
    }

    /// The other sessions of the folder in this process.
    pub fn others(&self) -> usize {
        locks::lock(&self.folder.state).members.len().saturating_sub(1)
    }

    /// This session's file tools wrote `rel`: every other session is told.
    pub fn wrote(&self, rel: &Path) {
        let others: Vec<Arc<dyn Sibling>> = {
            let s = locks::lock(&self.folder.state);
            s.members.iter().filter(|m| m.key != self.key).filter_map(|m| m.sibling.upgrade()).collect()
        };
        for o in others {
            o.other_wrote(rel);
        }
    }

    /// A look at what this session's commands changed: `changed` (relative paths) since the last look,
    /// and whether its checkpoints still follow a command (`following`: the window stays open, or opens).
    pub fn looked(&self, changed: &[PathBuf], following: bool) {
        let told = {
            let mut s = locks::lock(&self.folder.state);
            let told = s.record(self.key, changed);
            s.set_following(self.key, following);
            told
        };
        for (sibling, rel, with) in told {
            sibling.overlapped(&rel, &with);
        }
    }
}

impl State {
    fn tick(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn label(&self, key: u64) -> String {
        self.members.iter().find(|m| m.key == key).map(|m| m.label.clone()).unwrap_or_default()
    }

    fn sibling(&self, key: u64) -> Option<Arc<dyn Sibling>> {
        self.members.iter().find(|m| m.key == key).and_then(|m| m.sibling.upgrade())
    }

    /// Adds `changed` to `key`'s open window; what another session's overlapping window also found is
    /// returned, to be told to both sides (outside the lock).
    fn record(&mut self, key: u64, changed: &[PathBuf]) -> Vec<(Arc<dyn Sibling>, String, String)> {
        let now = self.tick();
        let Some(mine) = self.windows.iter().position(|w| w.key == key && w.end.is_none()) else {
            return Vec::new();
        };
        let start = self.windows[mine].start;
        let keys: Vec<String> = changed.iter().filter_map(|p| crate::checkpoint::key_of(p)).collect();
        let mut told = Vec::new();
        for w in self.windows.iter().filter(|w| w.key != key && w.start <= now && w.end.is_none_or(|e| e >= start)) {
            for k in keys.iter().filter(|k| w.changed.contains(*k)) {
                told.push((w.key, key, k.clone()));
            }
        }
        self.windows[mine].changed.extend(keys);
        told.into_iter()
            .flat_map(|(theirs, mine, rel)| {
                let (their_label, my_label) = (self.label(theirs), self.label(mine));
                let a = self.sibling(mine).map(|s| (s, rel.clone(), their_label));
                let b = self.sibling(theirs).map(|s| (s, rel, my_label));
                a.into_iter().chain(b)
            })
            .collect()
    }

    /// Opens `key`'s window when it starts following a command, closes it when it stops; windows no open
    /// one can overlap any more are forgotten.
    fn set_following(&mut self, key: u64, following: bool) {
        let open = self.windows.iter().position(|w| w.key == key && w.end.is_none());
        match (open, following) {
            (None, true) => {
                let start = self.tick();
                self.windows.push(Window { key, start, end: None, changed: HashSet::new() });
            }
            (Some(i), false) => {
                let end = self.tick();
                self.windows[i].end = Some(end);
            }
            _ => {}
        }
        let oldest_open = self.windows.iter().filter(|w| w.end.is_none()).map(|w| w.start).min();
        self.windows.retain(|w| match (w.end, oldest_open) {
            (None, _) => true,
            (Some(end), Some(oldest)) => end >= oldest,
            (Some(_), None) => false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Told {
        wrote: Mutex<Vec<PathBuf>>,
        overlapped: Mutex<Vec<(String, String)>>,
    }

    impl Sibling for Told {
        fn other_wrote(&self, rel: &Path) {
            locks::lock(&self.wrote).push(rel.to_path_buf());
        }
        fn overlapped(&self, rel: &str, with: &str) {
            locks::lock(&self.overlapped).push((rel.to_string(), with.to_string()));
        }
    }

    fn member(root: &Path, label: &str) -> (Arc<Told>, Membership) {
        let told = Arc::new(Told::default());
        let weak: Weak<dyn Sibling> = Arc::downgrade(&(told.clone() as Arc<dyn Sibling>));
        (told.clone(), join(root, label.into(), weak))
    }

    fn paths(p: &[&str]) -> Vec<PathBuf> {
        p.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn a_write_is_told_to_the_other_sessions_of_the_folder_only() {
        let root = PathBuf::from("/stepwise-test/siblings-write");
        let (a, ma) = member(&root, "a");
        let (b, _mb) = member(&root, "b");
        let (other, _mo) = member(Path::new("/stepwise-test/elsewhere"), "c");
        assert_eq!(ma.others(), 1);
        ma.wrote(Path::new("src/x.rs"));
        assert_eq!(*locks::lock(&b.wrote), paths(&["src/x.rs"]));
        assert!(locks::lock(&a.wrote).is_empty() && locks::lock(&other.wrote).is_empty());
    }

    #[test]
    fn overlapping_commands_that_both_found_a_path_are_each_told_and_the_rest_is_theirs() {
        let root = PathBuf::from("/stepwise-test/siblings-overlap");
        let (a, ma) = member(&root, "a");
        let (b, mb) = member(&root, "b");
        // a's command starts, b's starts, b ends having found x and y; a ends having found x and z.
        ma.looked(&[], true);
        mb.looked(&[], true);
        mb.looked(&paths(&["x", "y"]), false);
        ma.looked(&paths(&["x", "z"]), false);
        assert_eq!(*locks::lock(&a.overlapped), [("x".to_string(), "b".to_string())]);
        assert_eq!(*locks::lock(&b.overlapped), [("x".to_string(), "a".to_string())]);

        // Apart in time: nothing is shared, whatever they found.
        ma.looked(&[], true);
        ma.looked(&paths(&["w"]), false);
        mb.looked(&[], true);
        mb.looked(&paths(&["w"]), false);
        assert_eq!(locks::lock(&a.overlapped).len(), 1);
        assert_eq!(locks::lock(&b.overlapped).len(), 1);
    }

    #[test]
    fn a_session_that_leaves_is_forgotten() {
        let root = PathBuf::from("/stepwise-test/siblings-leave");
        let (_a, ma) = member(&root, "a");
        {
            let (_b, mb) = member(&root, "b");
            mb.looked(&[], true);
            assert_eq!(ma.others(), 1);
        }
        assert_eq!(ma.others(), 0);
        assert!(locks::lock(&ma.folder.state).windows.is_empty());
    }
}
