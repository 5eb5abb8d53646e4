//! Review of what the agent changed (issue 28), read from the checkpoints: for a run (or from a
//! checkpoint on) each path's text before the agent's first change (`Pre`, already kept) against what it
//! holds now, cut into hunks. Keeping a hunk records its fingerprint in the journal (`Record::Kept`), so
//! the review survives a restart and a hunk the agent changes again is unreviewed again; undoing one
//! writes the file with that hunk's old lines (through the editor where the adapter can).

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::journal::Record;
use super::rewind::{Action, FileRestore};
use super::state::{in_git, key_of, Mark, Pre};
use super::store::Hash;
use super::{files, Checkpoints};

/// Which changes: the latest run that changed files, a run by id, or everything since a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    #[default]
    Latest,
    Run(String),
    Since(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeStatus {
    Modified,
    Created,
    Deleted,
}

/// One hunk: a run of changed lines. Lines are 0-based, `end` exclusive; `start..end` in the text now,
/// `beforeStart..beforeEnd` in `before` (an empty range is where lines were only added or removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    pub index: usize,
    pub start: usize,
    pub end: usize,
    pub before_start: usize,
    pub before_end: usize,
    pub reviewed: bool,
    #[serde(skip)]
    pub id: Hash,
}

/// A changed file as `stepwise.changes` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChanges {
    /// Relative to the workspace, `/`-separated.
    pub path: String,
    pub status: ChangeStatus,
    /// The text before the agent's first change (`null`: the file did not exist, or is not text).
    pub before: Option<String>,
    /// The text now (`null`: the file is gone, or is not text).
    pub after: Option<String>,
    /// The plan steps in progress in the rounds that changed it, first first.
    pub steps: Vec<String>,
    /// Every hunk is reviewed.
    pub reviewed: bool,
    pub hunks: Vec<Hunk>,
    /// Other sessions of the folder whose commands ran at the same time as the one that changed it and
    /// also found it changed: whose change it is cannot be told (Undo and rewind leave it alone).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_with: Vec<String>,
}

/// What a path held before the scope's first change to it: what review compares the text now with.
#[derive(Debug, Clone, PartialEq)]
pub struct Base {
    pub path: String,
    /// `None`: absent.
    pub before: Option<Vec<u8>>,
    pub mode: u32,
    pub steps: Vec<String>,
    /// Other sessions that may have made this change too (`FileChanges::shared_with`).
    pub shared_with: Vec<String>,
}

/// The scope's run and the bases of the paths it changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bases {
    pub run_id: Option<String>,
    pub files: Vec<Base>,
    /// Fingerprints of kept hunks.
    pub kept: HashSet<Hash>,
}

/// What undoing hunks would write.
#[derive(Debug, Clone, PartialEq)]
pub enum Undo {
    Restore(FileRestore),
    /// Changed by someone else after the agent's last change: left alone.
    Conflict(PathBuf),
}

fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|&b| b == b'\n').collect()
}

fn fingerprint(path: &str, old: &[&[u8]], new: &[&[u8]]) -> Hash {
    let mut buf = path.as_bytes().to_vec();
    buf.push(0);
    old.iter().for_each(|l| buf.extend_from_slice(l));
    buf.push(0);
    new.iter().for_each(|l| buf.extend_from_slice(l));
    Hash::of(&buf)
}

impl Base {
    /// The hunks between `before` and `now` (`None`: absent). A created or deleted file, or one that is
    /// not text, is one hunk.
    pub fn hunks(&self, now: Option<&[u8]>, kept: &HashSet<Hash>) -> Vec<Hunk> {
        let text = |b: &[u8]| std::str::from_utf8(b).is_ok();
        let (old, new) = match (self.before.as_deref(), now) {
            (Some(o), Some(n)) if text(o) && text(n) => (lines(o), lines(n)),
            (o, n) => {
                let (o, n) = (o.unwrap_or_default(), n.unwrap_or_default());
                let id = fingerprint(&self.path, &[o], &[n]);
                let (ol, nl) = (lines(o).len(), lines(n).len());
                return vec![Hunk {
                    index: 0,
                    start: 0,
                    end: nl,
                    before_start: 0,
                    before_end: ol,
                    reviewed: kept.contains(&id),
                    id,
                }];
            }
        };
        let mut out: Vec<Hunk> = Vec::new();
        for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new) {
            let (tag, o, n) = op.as_tag_tuple();
            if tag == similar::DiffTag::Equal {
                continue;
            }
            // Adjacent changes (a deletion then an insertion) are one hunk.
            match out.last_mut() {
                Some(h) if h.before_end == o.start && h.end == n.start => {
                    h.before_end = o.end;
                    h.end = n.end;
                }
                _ => out.push(Hunk {
                    index: out.len(),
                    start: n.start,
                    end: n.end,
                    before_start: o.start,
                    before_end: o.end,
                    reviewed: false,
                    id: Hash([0; 32]),
                }),
            }
        }
        for h in &mut out {
            h.id = fingerprint(&self.path, &old[h.before_start..h.before_end], &new[h.start..h.end]);
            h.reviewed = kept.contains(&h.id);
        }
        out
    }

    /// The file as `changes` lists it, given what it holds now; `None` when nothing is left changed.
    pub fn changes(&self, now: Option<&[u8]>, kept: &HashSet<Hash>) -> Option<FileChanges> {
        if self.before.as_deref() == now {
            return None;
        }
        let status = match (&self.before, now) {
            (None, _) => ChangeStatus::Created,
            (_, None) => ChangeStatus::Deleted,
            _ => ChangeStatus::Modified,
        };
        let hunks = self.hunks(now, kept);
        let as_text = |b: Option<&[u8]>| b.and_then(|b| std::str::from_utf8(b).ok()).map(str::to_string);
        Some(FileChanges {
            path: self.path.clone(),
            status,
            before: as_text(self.before.as_deref()),
            after: as_text(now),
            steps: self.steps.clone(),
            reviewed: hunks.iter().all(|h| h.reviewed),
            hunks,
            shared_with: self.shared_with.clone(),
        })
    }

    /// The text with the hunks in `undo` put back as they were (all of them: `before`).
    fn undone(&self, now: Option<&[u8]>, undo: &[usize]) -> Result<Option<Vec<u8>>, String> {
        let hunks = self.hunks(now, &HashSet::new());
        if let Some(bad) = undo.iter().find(|&&i| i >= hunks.len()) {
            return Err(format!("{} has {} hunks; there is no hunk {bad}", self.path, hunks.len()));
        }
        let whole = hunks.len() == 1 && (self.before.is_none() || now.is_none() || hunks[0].id == self.whole_id(now));
        if whole || undo.len() == hunks.len() {
            return Ok(self.before.clone());
        }
        let (old, new) = (lines(self.before.as_deref().unwrap_or_default()), lines(now.unwrap_or_default()));
        let mut out = Vec::new();
        let mut at = 0;
        for h in &hunks {
            new[at..h.start].iter().for_each(|l| out.extend_from_slice(l));
            let side = if undo.contains(&h.index) { &old[h.before_start..h.before_end] } else { &new[h.start..h.end] };
            side.iter().for_each(|l| out.extend_from_slice(l));
            at = h.end;
        }
        new[at..].iter().for_each(|l| out.extend_from_slice(l));
        Ok(Some(out))
    }

    fn whole_id(&self, now: Option<&[u8]>) -> Hash {
        fingerprint(&self.path, &[self.before.as_deref().unwrap_or_default()], &[now.unwrap_or_default()])
    }
}

impl Bases {
    /// The changed files as they are now beneath `root` (or in `current`), read without the store.
    pub fn changes(&self, root: &Path, max_file: u64, current: impl Fn(&Path) -> Option<String>) -> Vec<FileChanges> {
        self.files
            .iter()
            .filter_map(|b| b.changes(now_of(root, max_file, &b.path, &current).ok()?.as_deref(), &self.kept))
            .collect()
    }
}

/// What `rel` holds now: `current`'s text (an open document), else the disk. `Err`: not readable as a
/// file (a symlink, a folder, over the size limit, outside the workspace).
fn now_of(
    root: &Path,
    max_file: u64,
    rel: &str,
    current: &impl Fn(&Path) -> Option<String>,
) -> Result<Option<Vec<u8>>, String> {
    if let Some(text) = current(Path::new(rel)) {
        return Ok(Some(text.into_bytes()));
    }
    let dir = File::open(root).map_err(|e| format!("cannot open the workspace: {e}"))?;
    match files::look(&dir, rel, max_file) {
        Ok(files::Seen::Absent) => Ok(None),
        Ok(files::Seen::File { bytes: Some(b), .. }) => Ok(Some(b)),
        Ok(_) => Err(format!("{rel} is no longer a regular file stepwise can read")),
        Err(e) => Err(format!("{rel} cannot be read: {e}")),
    }
}

impl Checkpoints {
    /// The index range of the checkpoints `scope` covers, and its run.
    fn scope_range(&self, scope: &Scope) -> Result<Option<(usize, usize, String)>, String> {
        let run_range = |run: &str| {
            let first = self.cps.iter().position(|c| c.run_id == run)?;
            let last = self.cps.iter().rposition(|c| c.run_id == run)?;
            Some((first, last + 1, run.to_string()))
        };
        match scope {
            Scope::Latest => Ok(self.cps.iter().rev().find(|c| !c.pre.is_empty()).and_then(|c| run_range(&c.run_id))),
            Scope::Run(id) => run_range(id).map(Some).ok_or_else(|| format!("No run {id} among the checkpoints")),
            Scope::Since(id) => {
                let idx = id.trim().parse::<u64>().ok().and_then(|n| self.cps.iter().position(|c| c.id == n));
                let idx = idx.ok_or_else(|| format!("No checkpoint {id}"))?;
                Ok(Some((idx, self.cps.len(), self.cps[idx].run_id.clone())))
            }
        }
    }

    /// What each path `scope` changed held before its first change (symlinks and what was not kept are
    /// left out: a rewind reports those).
    pub fn bases(&self, scope: &Scope) -> Result<Bases, String> {
        let Some((from, to, run)) = self.scope_range(scope)? else {
            return Ok(Bases { kept: self.kept.clone(), ..Bases::default() });
        };
        let mut first: BTreeMap<&str, (&Pre, Vec<String>)> = BTreeMap::new();
        let mut shared: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for c in &self.cps[from..to] {
            for (k, p) in &c.pre {
                let e = first.entry(k.as_str()).or_insert((p, Vec::new()));
                if let Some(step) = c.step.as_ref().filter(|s| !e.1.contains(s)) {
                    e.1.push(step.clone());
                }
            }
            for (k, with) in &c.shared {
                let e = shared.entry(k.as_str()).or_default();
                e.extend(with.iter().filter(|w| !e.contains(w)).cloned().collect::<Vec<_>>());
            }
        }
        let mut files = Vec::new();
        for (key, (pre, steps)) in first {
            let (before, mode) = match pre {
                _ if in_git(key) => continue,
                Pre::Absent => (None, 0o644),
                Pre::File { hash, mode } => match self.pack.get(hash) {
                    Ok(b) => (Some(b), *mode),
                    Err(e) => {
                        tracing::warn!("review: the text of {key} before the run cannot be read: {e}");
                        continue;
                    }
                },
                Pre::Link { .. } | Pre::Lost { .. } => continue,
            };
            let shared_with = shared.remove(key).unwrap_or_default();
            files.push(Base { path: key.to_string(), before, mode, steps, shared_with });
        }
        Ok(Bases { run_id: Some(run), files, kept: self.kept.clone() })
    }

    /// What `rel` holds now: `current`'s text (an open document), else the disk.
    pub fn now_of(&self, rel: &str, current: &impl Fn(&Path) -> Option<String>) -> Result<Option<Vec<u8>>, String> {
        now_of(&self.root, self.limits.max_file, rel, current)
    }

    /// `stepwise.changes`: the scope's run and its changed files, as they are now.
    pub fn changes(
        &self,
        scope: &Scope,
        current: impl Fn(&Path) -> Option<String>,
    ) -> Result<(Option<String>, Vec<FileChanges>), String> {
        let bases = self.bases(scope)?;
        Ok((bases.run_id.clone(), bases.changes(&self.root, self.limits.max_file, current)))
    }

    /// The largest file read (the checkpoints' limit), for reading the texts now without the store.
    pub fn max_file(&self) -> u64 {
        self.limits.max_file
    }

    fn base_of(&self, scope: &Scope, path: &str) -> Result<Base, String> {
        let key = key_of(Path::new(path)).ok_or_else(|| format!("not a path in the workspace: {path}"))?;
        let bases = self.bases(scope)?;
        bases.files.into_iter().find(|b| b.path == key).ok_or_else(|| format!("the agent did not change {path}"))
    }

    /// Marks the listed hunks of `path` (all: `None`) reviewed; recorded in the journal.
    pub fn keep(
        &mut self,
        scope: &Scope,
        path: &str,
        hunks: Option<&[usize]>,
        current: impl Fn(&Path) -> Option<String>,
    ) -> Result<(), String> {
        let base = self.base_of(scope, path)?;
        let now = self.now_of(&base.path, &current)?;
        let all = base.hunks(now.as_deref(), &HashSet::new());
        if let Some(bad) = hunks.unwrap_or_default().iter().find(|&&i| i >= all.len()) {
            return Err(format!("{path} has {} hunks; there is no hunk {bad}", all.len()));
        }
        let records = all
            .iter()
            .filter(|h| hunks.is_none_or(|l| l.contains(&h.index)))
            .filter(|h| !self.kept.contains(&h.id))
            .map(|h| Record::Kept { hunk: h.id })
            .collect();
        self.record(records);
        Ok(())
    }

    /// What undoing the listed hunks of `path` (all: `None`) would write, or that it is a conflict: the
    /// text now is not what the agent left (the user changed it since).
    pub fn plan_undo(
        &self,
        scope: &Scope,
        path: &str,
        hunks: Option<&[usize]>,
        current: impl Fn(&Path) -> Option<String>,
    ) -> Result<Undo, String> {
        let base = self.base_of(scope, path)?;
        let now = self.now_of(&base.path, &current)?;
        let mark = now.as_deref().map_or(Mark::Absent, Mark::of_bytes);
        if self.marks.get(&base.path) != Some(&mark) || !base.shared_with.is_empty() {
            return Ok(Undo::Conflict(PathBuf::from(&base.path)));
        }
        if base.before.as_deref() == now.as_deref() {
            return Err(format!("{path} has no change left to undo"));
        }
        let all: Vec<usize> = (0..base.hunks(now.as_deref(), &HashSet::new()).len()).collect();
        let target = base.undone(now.as_deref(), hunks.unwrap_or(&all))?;
        let mode = match self.now_stat_mode(&base.path) {
            Some(m) if base.before.is_some() && target != base.before => m,
            _ => base.mode,
        };
        let action = match target {
            None => Action::Delete,
            Some(bytes) => Action::Write { bytes, mode },
        };
        Ok(Undo::Restore(FileRestore { path: PathBuf::from(&base.path), action }))
    }

    fn now_stat_mode(&self, key: &str) -> Option<u32> {
        let root = File::open(&self.root).ok()?;
        match files::look(&root, key, 0) {
            Ok(files::Seen::File { stat, .. }) => Some(stat.mode & 0o777),
            _ => None,
        }
    }

    /// An undo was applied: the path now holds what it put back, as if the agent had left it so (a
    /// later undo or rewind does not take it for the user's change).
    pub fn finish_undo(&mut self, done: &FileRestore) {
        if let Some(key) = key_of(&done.path) {
            let mark = match &done.action {
                Action::Write { bytes, .. } => Mark::of_bytes(bytes),
                Action::Link { target } => Mark::of_link(target.as_bytes()),
                Action::Delete => Mark::Absent,
            };
            self.record(vec![Record::Agent { path: key, mark }]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(before: Option<&str>) -> Base {
        let before = before.map(|b| b.as_bytes().to_vec());
        Base { path: "a.txt".into(), before, mode: 0o644, steps: vec![], shared_with: vec![] }
    }

    #[test]
    fn hunks_are_runs_of_changed_lines_and_undo_takes_back_only_the_listed_ones() {
        let b = base(Some("1\n2\n3\n4\n5\n6\n7\n"));
        let now = "1\nTWO\n3\n4\n5\n6\nseven\n7\nend\n";
        let hunks = b.hunks(Some(now.as_bytes()), &HashSet::new());
        let spans: Vec<_> = hunks.iter().map(|h| (h.index, h.start, h.end, h.before_start, h.before_end)).collect();
        assert_eq!(spans, [(0, 1, 2, 1, 2), (1, 6, 7, 6, 6), (2, 8, 9, 7, 7)]);
        let one = b.undone(Some(now.as_bytes()), &[1]).unwrap().unwrap();
        assert_eq!(String::from_utf8(one).unwrap(), "1\nTWO\n3\n4\n5\n6\n7\nend\n");
        let two = b.undone(Some(now.as_bytes()), &[0, 2]).unwrap().unwrap();
        assert_eq!(String::from_utf8(two).unwrap(), "1\n2\n3\n4\n5\n6\nseven\n7\n");
        assert!(b.undone(Some(now.as_bytes()), &[3]).unwrap_err().contains("no hunk 3"));
        // A kept hunk stays kept while its lines are the same, wherever it moves.
        let kept = HashSet::from([hunks[0].id]);
        let moved = format!("0\n{now}");
        let again = b.hunks(Some(moved.as_bytes()), &kept);
        assert!(again.iter().any(|h| h.reviewed && h.start == 2));
        assert_eq!(again.iter().filter(|h| h.reviewed).count(), 1);
    }

    #[test]
    fn created_and_deleted_files_are_one_hunk() {
        let created = base(None);
        let c = created.changes(Some(b"new\nfile\n"), &HashSet::new()).unwrap();
        assert_eq!((c.status, c.hunks.len(), c.hunks[0].end), (ChangeStatus::Created, 1, 2));
        assert_eq!(created.undone(Some(b"new\nfile\n"), &[0]).unwrap(), None, "undoing it removes it");
        let deleted = base(Some("old\n"));
        let d = deleted.changes(None, &HashSet::new()).unwrap();
        assert_eq!((d.status, d.after.as_deref(), d.before.as_deref()), (ChangeStatus::Deleted, None, Some("old\n")));
        assert_eq!(deleted.undone(None, &[0]).unwrap().as_deref(), Some(&b"old\n"[..]));
        assert_eq!(base(Some("same")).changes(Some(b"same"), &HashSet::new()), None, "changed back: nothing to review");
    }
}
