//! What a shell command changed: a shadow copy of the workspace in the object store, change notifications
//! (`watch/`) to name the paths to look at, and `lstat` to tell which of them to read again.
//!
//! The copy (`copy_step`, one folder at a time, in the background from when the workspace opens: see
//! `copy.rs`) stores every file the walk finds (the walk honours `.gitignore` and `.ignore` as ripgrep
//! does, skips every `.git`, and never reads inside it), each folder watched before it is listed. A later
//! scan looks only at the paths the notifications named since the previous one (a folder named is walked
//! whole); when they cannot be trusted (events lost, a folder that could not be watched, a file system
//! that does not report changes, an ignore file changed, or notifications turned off) it walks the whole
//! workspace, and says which it did in the log. Either way a file is read again only when its `lstat`
//! (size, mtime, ctime, inode, mode) differs from what was stored, or when it was stored so soon after its
//! last change that a second change could have kept the same mtime (the "racy" case git knows). A scan
//! before a command brings the copy up to date (the user's edits, the file tools', a process a previous
//! command left running), so the scan after it sees only what the command did, and the copy holds each
//! changed file's content from before the command.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use super::entry::{fingerprint, read, Entry, Kept};
use super::files::{self, Seen};
use super::state::{in_git, Mark, Pre, Stat};
use super::store::{Hash, Pack};
use super::walk::{self, Job, Walked};
use super::watch::Watch;
use super::Limits;
use crate::ignore_files::{ignored, Rules};

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

/// How the last scan found what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanKind {
    /// It looked at the paths the change notifications named, this many.
    Named(usize),
    /// It walked the whole workspace, for this reason.
    Full(String),
}

enum Copy {
    NotStarted,
    /// Folders still to copy.
    Partial(Vec<Job>),
    Done,
}

pub struct Scanner {
    root: PathBuf,
    /// The checkpoints' own folder (the macOS watcher writes its markers there).
    state: PathBuf,
    /// The state directory, when it lies inside the workspace.
    skip: Option<PathBuf>,
    /// `.gitignore` files above the workspace, up to the repository it is in.
    parents: Rules,
    threads: usize,
    index: BTreeMap<Box<str>, Entry>,
    /// Followed folders ("" is the workspace), with the ignore rules in force inside each.
    dirs: HashMap<String, Rules>,
    walks: u32,
    copy: Copy,
    watch: Option<Watch>,
    /// Why there are no notifications, when there are none.
    unwatched: String,
    last: Option<ScanKind>,
}

impl Scanner {
    pub fn new(root: PathBuf, state: PathBuf, skip: Option<PathBuf>) -> Scanner {
        let parents = walk::parent_rules(&root);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
        Scanner {
            root,
            state,
            skip,
            parents,
            threads,
            index: BTreeMap::new(),
            dirs: HashMap::new(),
            walks: 0,
            copy: Copy::NotStarted,
            watch: None,
            unwatched: "not started".into(),
            last: None,
        }
    }

    /// Whether the copy is complete.
    pub fn ready(&self) -> bool {
        matches!(self.copy, Copy::Done)
    }

    /// Whether the copy has begun.
    pub fn started(&self) -> bool {
        !matches!(self.copy, Copy::NotStarted)
    }

    pub fn last(&self) -> Option<ScanKind> {
        self.last.clone()
    }

    /// Folders the change notifications watch (0 without them).
    pub fn watched(&self) -> usize {
        self.watch.as_ref().map_or(0, |w| w.watched())
    }

    /// Files the copy follows.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// What the copy holds for `key`.
    pub fn mark_of(&self, key: &str) -> Option<Mark> {
        self.index.get(key).map(Entry::mark)
    }

    /// Every object the copy needs.
    pub fn objects(&self) -> impl Iterator<Item = Hash> + '_ {
        self.index.values().filter_map(|e| match &e.kept {
            Kept::File(hash) => Some(*hash),
            Kept::Other(b) => match b.0 {
                Pre::File { hash, .. } => Some(hash),
                _ => None,
            },
            Kept::Link(_) => None,
        })
    }

    /// Copies one folder's files into the store; whether any folder is left. The first call starts the
    /// change notifications (`watch`: wanted), so that nothing changed during the copy goes unseen.
    pub fn copy_step(&mut self, pack: &Pack, limits: &Limits) -> io::Result<bool> {
        if let Copy::NotStarted = self.copy {
            if limits.watch {
                match Watch::start(&self.root, &self.state) {
                    Ok(w) => self.watch = Some(w),
                    Err(e) => self.unwatched = e,
                }
            } else {
                self.unwatched = "change notifications are turned off".into();
            }
            let start = Job { dir: self.root.clone(), key: String::new(), rules: self.parents.clone() };
            self.copy = Copy::Partial(vec![start]);
        }
        let Copy::Partial(jobs) = &mut self.copy else { return Ok(false) };
        let Some(job) = jobs.pop() else {
            self.copy = Copy::Done;
            return Ok(false);
        };
        let root = File::open(&self.root)?;
        let mut walked = Walked::default();
        let watch = self.watch.as_ref();
        let on_dir = |key: &str, path: &Path| {
            if let Some(w) = watch {
                w.add_dir(key, path)
            }
        };
        let more = walk::visit(job, self.skip.as_deref(), &mut walked, &on_dir);
        for (key, stat) in walked.files {
            if let Some(e) = read(&root, &key, stat, pack, limits, self.walks) {
                self.index.insert(key.into(), e);
            }
        }
        self.dirs.extend(walked.dirs);
        jobs.extend(more);
        if jobs.is_empty() {
            self.copy = Copy::Done;
        }
        Ok(!self.ready())
    }

    /// Brings the copy up to date (first finishing it, if it is not complete) and reports what changed
    /// since the previous scan.
    pub fn sync(&mut self, pack: &Pack, limits: &Limits) -> io::Result<Synced> {
        while self.copy_step(pack, limits)? {}
        let started = std::time::Instant::now();
        let root = File::open(&self.root)?;
        let mut out = Synced::default();
        let named = match &self.watch {
            Some(w) => w.take(),
            None => Err(self.unwatched.clone()),
        };
        if let Some(why) = self.watch.as_ref().and_then(Watch::broken) {
            // Its watches are released: full scans from now on.
            tracing::info!("checkpoints: change notifications given up, every scan walks the workspace: {why}");
            self.watch = None;
            self.unwatched = why;
        }
        let named = named.and_then(|keys| match keys.iter().find(|k| ignore_file(k)) {
            Some(k) => Err(format!("{k} changed")),
            None => Ok(keys),
        });
        let kind = match named {
            Ok(keys) => {
                let n = keys.len();
                for key in outermost(keys) {
                    self.reconcile(&root, &key, pack, limits, 1, &mut out);
                }
                ScanKind::Named(n)
            }
            Err(why) => {
                let threads = match limits.threads {
                    0 if self.index.len() < 2000 => 1,
                    0 => self.threads,
                    n => n,
                };
                self.reconcile(&root, "", pack, limits, threads, &mut out);
                ScanKind::Full(why)
            }
        };
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        match &kind {
            ScanKind::Named(n) => tracing::debug!(
                "checkpoint scan: {n} paths named by change notifications, {} changed ({ms:.1} ms)",
                out.changes.len()
            ),
            ScanKind::Full(why) => tracing::debug!(
                "checkpoint scan: walked all {} files ({why}), {} changed ({ms:.1} ms)",
                self.index.len(),
                out.changes.len()
            ),
        }
        self.last = Some(kind);
        Ok(out)
    }

    /// What is at `key` now: a followed folder (with the rules in force where it is), a followed file or
    /// symlink, or nothing followed.
    fn look(&self, root: &File, key: &str) -> Found {
        if key.is_empty() {
            return Found::Dir(self.parents.clone());
        }
        let path = self.root.join(key);
        if in_git(key) || self.skip.as_deref() == Some(path.as_path()) {
            return Found::Nothing;
        }
        let parent = key.rsplit_once('/').map_or("", |(p, _)| p);
        // A parent not followed (ignored, or gone) leaves nothing followed under it.
        let Some(rules) = self.dirs.get(parent) else { return Found::Nothing };
        match files::lstat(root, key) {
            Ok(Some((files::Kind::Dir, _))) => {
                if ignored(rules, &path, true) {
                    Found::Nothing
                } else {
                    Found::Dir(rules.clone())
                }
            }
            Ok(Some((files::Kind::File | files::Kind::Link, stat))) => {
                if ignored(rules, &path, false) {
                    Found::Nothing
                } else {
                    Found::File(stat)
                }
            }
            Ok(_) => Found::Nothing,
            Err(e) => {
                tracing::debug!("checkpoint scan: {key}: {e}");
                Found::Nothing
            }
        }
    }

    /// Brings the copy of `key` ("" for the workspace) and everything under it up to date.
    fn reconcile(&mut self, root: &File, key: &str, pack: &Pack, limits: &Limits, threads: usize, out: &mut Synced) {
        self.walks = self.walks.wrapping_add(1);
        let walk = self.walks;
        let mut listed: Option<HashSet<String>> = None;
        match self.look(root, key) {
            Found::Dir(rules) => {
                let dir = if key.is_empty() { self.root.clone() } else { self.root.join(key) };
                let watch = self.watch.as_ref();
                let on_dir = |key: &str, path: &Path| {
                    if let Some(w) = watch {
                        w.add_dir(key, path)
                    }
                };
                let start = Job { dir, key: key.to_string(), rules };
                let walked = walk::walk(start, self.skip.as_deref(), threads, &on_dir);
                for (k, stat) in walked.files {
                    self.update(root, k, stat, walk, pack, limits, out);
                }
                let mut names = HashSet::with_capacity(walked.dirs.len());
                for (d, rules) in walked.dirs {
                    if !self.dirs.contains_key(&d) {
                        out.new_dirs.push(d.clone());
                    }
                    names.insert(d.clone());
                    self.dirs.insert(d, rules);
                }
                listed = Some(names);
            }
            Found::File(stat) => self.update(root, key.to_string(), stat, walk, pack, limits, out),
            Found::Nothing => {}
        }
        // Files followed at or under `key` and not seen now: deleted, or no longer followed.
        let gone: Vec<Box<str>> = self.under(key).filter(|(_, e)| e.seen != walk).map(|(k, _)| k.clone()).collect();
        for k in gone {
            // A file still there but no longer walked (ignored now, or unreadable) is only no longer followed.
            let deleted = matches!(files::look(root, &k, 0), Ok(Seen::Absent));
            if let Some(old) = self.index.remove(&k) {
                if deleted {
                    out.changes.push(Change { key: k.into(), pre: old.pre(), mark: Mark::Absent });
                }
            }
        }
        // Folders at or under `key` not listed now.
        let within = |d: &str| key.is_empty() || d == key || d.strip_prefix(key).is_some_and(|r| r.starts_with('/'));
        if self.dirs.contains_key(key) || listed.is_some() {
            let mut dropped = Vec::new();
            self.dirs.retain(|d, _| {
                let keep = !within(d) || listed.as_ref().is_some_and(|l| l.contains(d));
                if !keep {
                    dropped.push(d.clone());
                }
                keep
            });
            if let (Some(w), false) = (&self.watch, dropped.is_empty()) {
                w.forget(&dropped);
            }
        }
    }

    /// The entries at `key` and under it.
    fn under<'a>(&'a self, key: &str) -> Box<dyn Iterator<Item = (&'a Box<str>, &'a Entry)> + 'a> {
        if key.is_empty() {
            return Box::new(self.index.iter());
        }
        let (lo, hi) = (format!("{key}/"), format!("{key}0"));
        let below = self.index.range::<str, _>((Bound::Included(lo.as_str()), Bound::Excluded(hi.as_str())));
        Box::new(self.index.get_key_value(key).into_iter().chain(below))
    }

    /// One file found by a walk: read again unless its `lstat` says it is what was stored.
    #[allow(clippy::too_many_arguments)]
    fn update(
        &mut self,
        root: &File,
        key: String,
        stat: Stat,
        walk: u32,
        pack: &Pack,
        limits: &Limits,
        out: &mut Synced,
    ) {
        if let Some(e) = self.index.get_mut(key.as_str()) {
            if e.stat == fingerprint(&stat) && !e.racy {
                e.seen = walk;
                return;
            }
        }
        // Gone since the walk, or no longer a file: counted as gone by the caller if it was known.
        let Some(fresh) = read(root, &key, stat, pack, limits, walk) else { return };
        let mark = fresh.mark();
        match self.index.insert(key.as_str().into(), fresh) {
            None => out.changes.push(Change { key, pre: Pre::Absent, mark }),
            Some(old) if old.mark() != mark => out.changes.push(Change { key, pre: old.pre(), mark }),
            _ => {}
        }
    }
}

enum Found {
    Dir(Rules),
    File(Stat),
    Nothing,
}

/// Whether `key` names an ignore file (a change to one changes what is followed: a full scan).
fn ignore_file(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    name == ".gitignore" || name == ".ignore"
}

/// The keys with none of their folders among them (a folder named is walked whole).
fn outermost(mut keys: Vec<String>) -> Vec<String> {
    keys.sort_by_key(|k| k.matches('/').count());
    let mut kept: HashSet<String> = HashSet::new();
    for k in keys {
        let covered = k.match_indices('/').any(|(i, _)| kept.contains(&k[..i]));
        if !covered {
            kept.insert(k);
        }
    }
    let mut out: Vec<String> = kept.into_iter().collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_named_covers_what_is_under_it() {
        let keys = ["a/b/c", "a", "a-b", "a/x", "z/y", "z/y2"].map(String::from).to_vec();
        assert_eq!(outermost(keys), ["a", "a-b", "z/y", "z/y2"]);
        assert!(ignore_file("x/.gitignore") && ignore_file(".ignore") && !ignore_file("a.gitignore"));
    }
}
