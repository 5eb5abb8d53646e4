//! What a shell command changed: the workspace's copy brought up to date before it, scanned after it, the
//! changes recorded against the newest checkpoint; the user's saves meanwhile (`UserSaves`) left out.

use std::path::{Path, PathBuf};

use super::journal::Record;
use super::state::{self, Mark, Pre};
use super::Checkpoints;
use crate::locks;

/// Where the sidecar notes the user's saves (keys as `state::key_of` makes them); clones share the set.
#[derive(Clone, Default)]
pub struct UserSaves(std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>);

impl UserSaves {
    /// The user saved `rel` in the editor: while a command runs, what the scan after it finds there is
    /// the user's, left alone by a rewind (a conflict), unless it is the text the agent wrote.
    pub fn note(&self, rel: &Path) {
        if let Some(k) = state::key_of(rel) {
            crate::locks::lock(&self.0).insert(k);
        }
    }

    fn take(&self) -> std::collections::HashSet<String> {
        std::mem::take(&mut *crate::locks::lock(&self.0))
    }
}

impl Checkpoints {
    /// Whether a command is being followed (between `before_command` and `after_command`).
    pub fn following(&self) -> bool {
        self.armed
    }

    /// A change of `rel` that a command of this session found may be the session `with`'s, whose command
    /// ran at the same time (the folder's sibling sessions): kept with the checkpoint that holds its state before,
    /// so the review says so and a rewind leaves it alone.
    pub fn note_overlap(&mut self, rel: &str, with: &str) {
        let Some(cp) = self.cps.iter().rev().find(|c| c.pre.contains_key(rel)).map(|c| c.id) else { return };
        if self.cps.iter().any(|c| c.id == cp && c.shared.get(rel).is_some_and(|w| w.contains(with))) {
            return;
        }
        self.record(vec![Record::Overlap { cp, path: rel.to_string(), with: with.to_string() }]);
    }

    /// Before a shell command: brings the workspace's copy up to date (the first time, makes it).
    /// Already armed (a background task runs): what changed since the last look is recorded first, not
    /// taken into the copy unrecorded; those files are returned.
    pub fn before_command(&mut self) -> Vec<PathBuf> {
        let seen = match self.armed {
            true => self.after_command(),
            false => Vec::new(),
        };
        self.user_saved.take();
        if self.cps.is_empty() {
            return seen;
        }
        // A copy still being made is finished here, at this thread's priority.
        if let Some(c) = &self.copy {
            c.stop();
        }
        let mut scan = locks::lock(&self.scan);
        match scan.sync(&self.pack, &self.limits) {
            Ok(_) => self.armed = true,
            Err(e) => tracing::warn!("checkpoints cannot follow this command: {e}"),
        }
        let marks = &self.marks;
        self.unflushed.retain(|k| scan.mark_of(k).as_ref() != marks.get(k));
        seen
    }

    /// A shell command starts (`before_command`, counted: see `command_ended`).
    pub fn command_started(&mut self) -> Vec<PathBuf> {
        let seen = self.before_command();
        self.commands += 1;
        seen
    }

    /// A shell command ended: what changed is recorded (`after_command`); the scan stays armed while
    /// another of the session's commands still runs (a child agent's), so its changes are recorded too.
    pub fn command_ended(&mut self) -> Vec<PathBuf> {
        self.commands = self.commands.saturating_sub(1);
        self.after_command()
    }

    /// After a shell command: what it created, modified or deleted (relative paths), now recorded.
    pub fn after_command(&mut self) -> Vec<PathBuf> {
        let armed = match self.commands {
            0 => std::mem::take(&mut self.armed),
            _ => self.armed,
        };
        if !armed {
            return Vec::new();
        }
        let synced = locks::lock(&self.scan).sync(&self.pack, &self.limits);
        let synced = match synced {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("checkpoints cannot tell what this command changed: {e}");
                return Vec::new();
            }
        };
        let id = self.cps.last().map_or(0, |c| c.id);
        let mut records = Vec::new();
        let mut changed = Vec::new();
        let user_saved = self.user_saved.take();
        for d in synced.new_dirs {
            records.push(Record::Dir { cp: id, path: d });
        }
        let known = self.cps.last().map(|c| &c.pre);
        for c in synced.changes {
            // A file tool's text still in an editor buffer at the scan before the command: the editor
            // saving it (before the command runs) is not the command's change, and what the file held
            // before the command is that text, not the older disk content.
            let agent = self.marks.get(&c.key);
            let unflushed = self.unflushed.remove(&c.key);
            if unflushed && agent == Some(&c.mark) {
                continue;
            }
            let pre = match (unflushed, agent, &c.pre) {
                (true, Some(Mark::Hash { hash }), old) if self.pack.contains(hash) => {
                    let mode = if let Pre::File { mode, .. } = old { *mode } else { 0o644 };
                    Pre::File { hash: *hash, mode }
                }
                _ => c.pre,
            };
            // Saved by the user meanwhile (and not the agent's text): not the command's change. A file
            // the agent changed earlier keeps its old agent mark, so a rewind reports a conflict.
            if user_saved.contains(&c.key) && agent != Some(&c.mark) {
                continue;
            }
            if !known.is_some_and(|k| k.contains_key(&c.key)) {
                records.push(Record::Pre { cp: id, path: c.key.clone(), pre });
            }
            changed.push(PathBuf::from(&c.key));
            records.push(Record::Agent { path: c.key, mark: c.mark });
        }
        self.record(records);
        self.enforce_limit();
        changed
    }
}

/// What a path held when the newest checkpoint was taken (the round's start), for code intelligence.
#[derive(Debug, PartialEq, Eq)]
pub enum Held {
    Bytes(Vec<u8>),
    /// Nothing was there.
    Nothing,
}

impl Checkpoints {
    /// What `rel` held at the round's start, if the newest checkpoint kept it and it is at most `max`
    /// bytes; `None`: not known (unchanged since, a link, not kept, too large, unreadable).
    pub fn held_at_round_start(&self, rel: &Path, max: u64) -> Option<Held> {
        let pre = self.cps.last()?.pre.get(&state::key_of(rel)?)?;
        match pre {
            Pre::Absent => Some(Held::Nothing),
            Pre::File { hash, .. } if self.pack.len_of(hash).is_some_and(|n| n <= max) => {
                self.pack.get(hash).ok().map(Held::Bytes)
            }
            _ => None,
        }
    }
}
