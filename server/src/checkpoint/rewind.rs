//! Rewinding, in three steps kept apart: what to put back (`Checkpoints::rewind`, a plan that changes
//! nothing), putting it back on disk (`apply_on_disk`), and recording that it was (`Checkpoints::finish`).
//! The sidecar puts open documents back through `workspace/applyEdit` (so the editor can undo the rewind)
//! and only the rest on disk; the command line does it all on disk (`rewind_on_disk`).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::files;
use super::journal::Record;
use super::state::{in_git, key_of, Mark, Pre};
use super::{conversation, Checkpoints};
use crate::session::Session;

// What a rewind puts back: the files, the conversation (and plan), or both (no doc comment: it would enter the schema).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Restore {
    #[default]
    Both,
    Files,
    Conversation,
}

impl Restore {
    /// The contract's `"both" | "files" | "conversation"`.
    pub fn parse(s: &str) -> Option<Restore> {
        match s {
            "both" => Some(Restore::Both),
            "files" => Some(Restore::Files),
            "conversation" => Some(Restore::Conversation),
            _ => None,
        }
    }

    pub fn files(self) -> bool {
        self != Restore::Conversation
    }

    pub fn conversation(self) -> bool {
        self != Restore::Files
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Put this content back (mode: permission bits).
    Write {
        bytes: Vec<u8>,
        mode: u32,
    },
    Link {
        target: String,
    },
    /// The file did not exist at the checkpoint.
    Delete,
}

impl Action {
    fn mark(&self) -> Mark {
        match self {
            Action::Write { bytes, .. } => Mark::of_bytes(bytes),
            Action::Link { target } => Mark::of_link(target.as_bytes()),
            Action::Delete => Mark::Absent,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRestore {
    /// Relative to the workspace.
    pub path: PathBuf,
    pub action: Action,
}

impl FileRestore {
    /// The content to put back as text (for an editor buffer); `None` for a deletion, a symlink or bytes
    /// that are not UTF-8.
    pub fn text(&self) -> Option<&str> {
        match &self.action {
            Action::Write { bytes, .. } => std::str::from_utf8(bytes).ok(),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RewindPlan {
    pub checkpoint: String,
    pub restore: Restore,
    /// What to put back, by path.
    pub files: Vec<FileRestore>,
    /// Changed by someone else after the agent's last change: left alone.
    pub conflicts: Vec<PathBuf>,
    /// Changed after the checkpoint but not kept (with why): left alone, and said.
    pub unrestorable: Vec<(PathBuf, String)>,
    /// Folders created after the checkpoint, deepest first: removed if empty once the files are back.
    pub dirs: Vec<PathBuf>,
    /// The conversation and plan as they were (unless only files are rewound).
    pub session: Option<Session>,
}

impl RewindPlan {
    /// A plan that puts nothing back (a caller fills in `files`: `apply_on_disk` for files from elsewhere).
    pub fn empty() -> RewindPlan {
        RewindPlan {
            checkpoint: String::new(),
            restore: Restore::Files,
            files: Vec::new(),
            conflicts: Vec::new(),
            unrestorable: Vec::new(),
            dirs: Vec::new(),
            session: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    pub done: Vec<PathBuf>,
    pub failed: Vec<(PathBuf, String)>,
}

#[derive(Debug)]
pub struct Rewound {
    pub plan: RewindPlan,
    pub applied: Applied,
}

impl Checkpoints {
    /// What rewinding to checkpoint `id` would put back. `current` gives a path's text where the host sees
    /// something other than the disk (an open editor buffer), `None` to read the disk.
    pub fn rewind(
        &self,
        id: &str,
        restore: Restore,
        current: impl Fn(&Path) -> Option<String>,
    ) -> Result<RewindPlan, String> {
        let idx = id
            .trim()
            .parse::<u64>()
            .ok()
            .and_then(|n| self.cps.iter().position(|c| c.id == n))
            .ok_or_else(|| format!("No checkpoint {id}"))?;
        let mut plan = RewindPlan {
            checkpoint: self.cps[idx].id.to_string(),
            restore,
            files: Vec::new(),
            conflicts: Vec::new(),
            unrestorable: Vec::new(),
            dirs: Vec::new(),
            session: None,
        };
        if restore.conversation() {
            let list = self.message_list(idx)?;
            plan.session = Some(conversation::load(&self.pack, &self.cps[idx].session.rest, &list)?);
        }
        if !restore.files() {
            return Ok(plan);
        }
        // Each path as it was at the checkpoint: its first recorded state from there on.
        let mut then: BTreeMap<&str, &Pre> = BTreeMap::new();
        for c in &self.cps[idx..] {
            for (k, p) in &c.pre {
                then.entry(k.as_str()).or_insert(p);
            }
        }
        let root = File::open(&self.root).map_err(|e| format!("cannot open the workspace: {e}"))?;
        for (key, pre) in then {
            let path = PathBuf::from(key);
            let target = match pre {
                _ if in_git(key) => {
                    plan.unrestorable.push((path, "it is inside .git, which checkpoints never write".into()));
                    continue;
                }
                Pre::Absent => Action::Delete,
                Pre::File { hash, mode } => match self.pack.get(hash) {
                    Ok(bytes) => Action::Write { bytes, mode: *mode },
                    Err(e) => {
                        plan.unrestorable.push((path, format!("its saved copy cannot be read: {e}")));
                        continue;
                    }
                },
                Pre::Link { target } => Action::Link { target: target.clone() },
                Pre::Lost { reason } => {
                    plan.unrestorable.push((path, reason.clone()));
                    continue;
                }
            };
            let now = match current(&path) {
                Some(text) => Mark::of_bytes(text.as_bytes()),
                None => match files::look(&root, key, self.limits.max_file) {
                    Ok(seen) => seen.mark(),
                    Err(e) => {
                        plan.unrestorable.push((path, refusal(&e)));
                        continue;
                    }
                },
            };
            if now == target.mark() {
                continue;
            }
            // Another session's change too, or the user's since the agent's last: left alone.
            if self.marks.get(key) != Some(&now) || self.cps[idx..].iter().any(|c| c.shared.contains_key(key)) {
                plan.conflicts.push(path);
                continue;
            }
            plan.files.push(FileRestore { path, action: target });
        }
        let mut dirs: Vec<&String> = self.cps[idx..].iter().flat_map(|c| &c.dirs).collect();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
        dirs.dedup();
        plan.dirs = dirs.into_iter().map(PathBuf::from).collect();
        Ok(plan)
    }

    /// Records a rewind: the paths in `done` now hold what the plan put back, and (unless only the
    /// conversation was rewound) the checkpoints from the one rewound to on are dropped.
    pub fn finish(&mut self, plan: &RewindPlan, done: &[PathBuf]) {
        // A set: a rewind of a command that changed 10,000 files compared every pair (seconds).
        let done: std::collections::HashSet<&PathBuf> = done.iter().collect();
        let mut records: Vec<Record> = plan
            .files
            .iter()
            .filter(|f| done.contains(&f.path))
            .filter_map(|f| Some(Record::Agent { path: key_of(&f.path)?, mark: f.action.mark() }))
            .collect();
        if plan.restore.files() {
            if let Ok(from) = plan.checkpoint.parse::<u64>() {
                records.push(Record::Drop { from });
            }
            self.last_list = None;
        }
        self.record(records);
    }

    /// Rewinds to checkpoint `id` on disk (no editor buffers): plan, apply, record.
    pub fn rewind_on_disk(&mut self, id: &str, restore: Restore) -> Result<Rewound, String> {
        let plan = self.rewind(id, restore, |_| None)?;
        let applied = apply_on_disk(&self.root, &plan, |_| false);
        self.finish(&plan, &applied.done);
        Ok(Rewound { plan, applied })
    }
}

fn refusal(e: &std::io::Error) -> String {
    if crate::host::beneath::is_escape(e) {
        "refused: the path now leads outside the workspace".into()
    } else {
        format!("cannot be read: {e}")
    }
}

/// Puts the plan's files back beneath `root`, except those `skip` names (put back by the editor), then
/// removes the folders created after the checkpoint that are left empty.
pub fn apply_on_disk(root: &Path, plan: &RewindPlan, skip: impl Fn(&Path) -> bool) -> Applied {
    let mut out = Applied::default();
    let dir = match File::open(root) {
        Ok(d) => d,
        Err(e) => {
            out.failed =
                plan.files.iter().map(|f| (f.path.clone(), format!("cannot open the workspace: {e}"))).collect();
            return out;
        }
    };
    for f in plan.files.iter().filter(|f| !skip(&f.path)) {
        let Some(key) = key_of(&f.path).filter(|k| !in_git(k)) else {
            out.failed.push((f.path.clone(), "refused: not a path checkpoints restore".into()));
            continue;
        };
        let done = match &f.action {
            Action::Write { bytes, mode } => files::write(&dir, root, &key, bytes, *mode),
            Action::Link { target } => files::link(&dir, root, &key, target),
            Action::Delete => files::remove(&dir, &key),
        };
        match done {
            Ok(()) => out.done.push(f.path.clone()),
            Err(e) if crate::host::beneath::is_escape(&e) => {
                out.failed.push((f.path.clone(), "refused: the path now leads outside the workspace".into()))
            }
            Err(e) => out.failed.push((f.path.clone(), e.to_string())),
        }
    }
    for d in &plan.dirs {
        if let Some(key) = key_of(d).filter(|k| !in_git(k)) {
            let _ = files::remove_empty_dir(&dir, &key);
        }
    }
    out
}
