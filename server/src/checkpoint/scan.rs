//! What a shell command changed: a shadow copy of the workspace in the object store, and `lstat` to tell
//! which files to look at again.
//!
//! The first scan stores every file the walk finds (the walk honours `.gitignore` and `.ignore` as
//! ripgrep does, skips every `.git`, and never reads inside it). Every later scan walks again and reads only
//! files whose `lstat` (size, mtime, ctime, inode, mode) differs from what was stored, or that were stored
//! so soon after their last change that a second change could have kept the same mtime (the "racy" case
//! git knows): those are read again however they look. A scan before a command brings the copy up to date
//! (the user's edits, the file tools'), so the scan after it sees only what the command did, and the copy
//! holds each changed file's content from before the command.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use ignore::gitignore::Gitignore;

use super::files::{self, Seen};
use super::state::{now_ns, Mark, Pre, Stat};
use super::store::{Hash, Pack};
use super::walk;
use super::Limits;

/// Kernel timestamps come from a clock that ticks every few milliseconds: a file read less than this after
/// its mtime may change again without its mtime moving.
const RACY_NS: i64 = 100_000_000;

struct Entry {
    stat: Stat,
    pre: Pre,
    mark: Mark,
    /// When its content was read (nanoseconds since the epoch).
    read_at: i64,
    /// The scan that last saw it.
    seen: u64,
}

/// A file whose content differs from the previous scan.
#[derive(Debug)]
pub struct Change {
    pub key: String,
    /// What it held before, as stored.
    pub pre: Pre,
    /// What it holds now.
    pub mark: Mark,
}

#[derive(Default)]
pub struct Synced {
    pub changes: Vec<Change>,
    /// Folders that appeared since the previous scan.
    pub new_dirs: Vec<String>,
}

pub struct Scanner {
    root: PathBuf,
    /// The state directory, when it lies inside the workspace.
    skip: Option<PathBuf>,
    /// `.gitignore` files above the workspace, up to the repository it is in.
    parents: Vec<Arc<Gitignore>>,
    threads: usize,
    index: HashMap<String, Entry>,
    dirs: HashSet<String>,
    scans: u64,
}

impl Scanner {
    pub fn new(root: PathBuf, skip: Option<PathBuf>) -> Scanner {
        let parents = walk::parent_rules(&root);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
        Scanner { root, skip, parents, threads, index: HashMap::new(), dirs: HashSet::new(), scans: 0 }
    }

    /// Whether a first scan has made the copy.
    pub fn ready(&self) -> bool {
        self.scans > 0
    }

    /// What the copy holds for `key`.
    pub fn mark_of(&self, key: &str) -> Option<&Mark> {
        self.index.get(key).map(|e| &e.mark)
    }

    /// Every object the copy needs.
    pub fn objects(&self) -> impl Iterator<Item = Hash> + '_ {
        self.index.values().filter_map(|e| match e.pre {
            Pre::File { hash, .. } => Some(hash),
            _ => None,
        })
    }

    /// Reads one file into the store.
    fn read(&self, root: &File, key: &str, walked: Stat, pack: &mut Pack, limits: &Limits) -> Option<Entry> {
        let read_at = now_ns();
        let entry = |stat, pre, mark| Some(Entry { stat, pre, mark, read_at, seen: self.scans });
        match files::look(root, key, limits.max_file) {
            Ok(Seen::Absent) | Ok(Seen::Other) => None,
            Ok(seen @ Seen::File { stat, bytes: None }) => {
                let reason = format!(
                    "{} MB, over the {} MB limit for a file",
                    stat.size.div_ceil(1 << 20),
                    limits.max_file.div_ceil(1 << 20)
                );
                entry(stat, Pre::Lost { reason }, seen.mark())
            }
            Ok(Seen::File { stat, bytes: Some(bytes) }) => {
                let hash = Hash::of(&bytes);
                let pre = if !pack.contains(&hash) && pack.size() + bytes.len() as u64 > limits.max_total {
                    Pre::Lost { reason: "the checkpoint storage limit (STEPWISE_CHECKPOINT_MB) was reached".into() }
                } else {
                    match pack.put_hashed(hash, &bytes) {
                        Ok(()) => Pre::File { hash, mode: stat.mode & 0o777 },
                        Err(e) => Pre::Lost { reason: format!("could not be stored: {e}") },
                    }
                };
                entry(stat, pre, Mark::Hash { hash })
            }
            Ok(seen @ Seen::Link { stat, .. }) => {
                let mark = seen.mark();
                let Seen::Link { target, .. } = seen else { return None };
                let pre = match String::from_utf8(target) {
                    Ok(target) => Pre::Link { target },
                    Err(_) => Pre::Lost { reason: "its symlink target is not UTF-8".into() },
                };
                entry(stat, pre, mark)
            }
            Err(e) => entry(walked, Pre::Lost { reason: format!("could not be read: {e}") }, Mark::Other),
        }
    }

    /// Walks the workspace and brings the copy up to date; reports what changed since the previous scan
    /// (nothing on the first, which makes the copy).
    pub fn sync(&mut self, pack: &mut Pack, limits: &Limits) -> io::Result<Synced> {
        let first = !self.ready();
        self.scans += 1;
        // Threads pay off once there is enough to list (spawning one costs tens of microseconds).
        let threads = match limits.threads {
            0 if self.index.len() < 2000 && !first => 1,
            0 => self.threads,
            n => n,
        };
        let walk::Walked { files: walked, dirs } = walk::walk(&self.root, self.skip.as_deref(), &self.parents, threads);
        let root = File::open(&self.root)?;
        let mut out = Synced::default();
        for (key, stat) in walked {
            if let Some(e) = self.index.get_mut(&key) {
                if e.stat == stat && e.stat.mtime < e.read_at - RACY_NS {
                    e.seen = self.scans;
                    continue;
                }
            }
            // Gone since the walk, or no longer a file: counted below if it was known.
            let Some(fresh) = self.read(&root, &key, stat, pack, limits) else { continue };
            let mark = fresh.mark.clone();
            match self.index.insert(key.clone(), fresh) {
                None if !first => out.changes.push(Change { key, pre: Pre::Absent, mark }),
                Some(old) if old.mark != mark => out.changes.push(Change { key, pre: old.pre, mark }),
                _ => {}
            }
        }
        let missing: Vec<String> =
            self.index.iter().filter(|(_, e)| e.seen != self.scans).map(|(k, _)| k.clone()).collect();
        for key in missing {
            // A file still there but no longer walked (ignored now, or unreadable) is only no longer followed.
            let deleted = matches!(files::look(&root, &key, 0), Ok(Seen::Absent));
            if let Some(old) = self.index.remove(&key) {
                if deleted {
                    out.changes.push(Change { key, pre: old.pre, mark: Mark::Absent });
                }
            }
        }
        if !first {
            out.new_dirs = dirs.difference(&self.dirs).cloned().collect();
        }
        self.dirs = dirs;
        Ok(out)
    }
}
