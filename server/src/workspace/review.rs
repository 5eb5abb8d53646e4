//! The conversation as a view shows it, and review of what the agent changed (issue 28), on the
//! workspace's checkpoints. Undo is refused while a run goes on (the agent may be writing the file);
//! keeping is not.

use std::path::Path;
use std::sync::Arc;

use super::{RunTicket, Workspace};
use crate::checkpoint::{apply_on_disk, Bases, FileChanges, FileRestore, Restore, RewindPlan, Scope, Undo};
use crate::locks;
use crate::transcript::{self, Entry};

const OFF: &str = "checkpoints are off in this workspace: there is nothing to review";

impl Workspace {
    /// The saved conversation as entries, oldest first; during a run, as of its latest consistent point.
    pub fn conversation_entries(&self) -> Vec<Entry> {
        let store = self.checkpoint_store();
        let messages = self.messages_now();
        let origins = store.map(|c| locks::lock(c).origins(&messages)).unwrap_or_default();
        transcript::with_children(transcript::entries(&messages, &origins), &self.subagents.records())
    }

    /// An image of the conversation, by the id its entry gives (`images::find`).
    pub fn image(&self, id: &str) -> Option<crate::llm::Image> {
        crate::images::find(&self.messages_now(), id)
    }

    /// The conversation without waiting for a run: as the run last stored it while one goes on.
    fn messages_now(&self) -> Vec<crate::llm::Message> {
        match self.conversation.try_lock() {
            Ok(convo) => convo.clone(),
            Err(_) => self.checkpoint_store().map(|c| locks::lock(c).stored_messages()).unwrap_or_default(),
        }
    }

    /// What the paths `scope` changed held before (for lenses and the pending set).
    pub fn review_bases(&self, scope: &Scope) -> Result<Bases, String> {
        let c = self.checkpoint_store().ok_or(OFF)?;
        locks::lock(c).bases(scope)
    }

    /// `stepwise.changes`: the run and its changed files. `current` gives an open document's text.
    pub fn changes(
        &self,
        scope: &Scope,
        current: impl Fn(&Path) -> Option<String>,
    ) -> Result<(Option<String>, Vec<FileChanges>), String> {
        let c = self.checkpoint_store().ok_or(OFF)?;
        // The store's lock only for what it holds; the texts now are read and diffed without it (a run
        // may want it meanwhile).
        let (bases, max_file) = {
            let c = locks::lock(c);
            (c.bases(scope)?, c.max_file())
        };
        Ok((bases.run_id.clone(), bases.changes(&self.root, max_file, current)))
    }

    /// Marks hunks of `path` reviewed (all: `None`).
    pub fn keep(
        &self,
        scope: &Scope,
        path: &str,
        hunks: Option<&[usize]>,
        current: impl Fn(&Path) -> Option<String>,
    ) -> Result<(), String> {
        let c = self.checkpoint_store().ok_or(OFF)?;
        locks::lock(c).keep(scope, path, hunks, current)
    }

    /// What undoing hunks of `path` would write, for the holder of the run slot (`rewind_slot`).
    pub fn plan_undo(
        &self,
        slot: &RunTicket,
        scope: &Scope,
        path: &str,
        hunks: Option<&[usize]>,
        current: impl Fn(&Path) -> Option<String>,
    ) -> Result<Undo, String> {
        let c = self.checkpoint_store().ok_or(OFF)?;
        self.holds(slot)?;
        locks::lock(c).plan_undo(scope, path, hunks, current)
    }

    /// Records an undo that was applied.
    pub fn finish_undo(&self, slot: &RunTicket, done: &FileRestore) -> Result<(), String> {
        let c = self.checkpoint_store().ok_or(OFF)?;
        self.holds(slot)?;
        locks::lock(c).finish_undo(done);
        Ok(())
    }

    /// Undoes hunks of `path` on disk (the command line): `Ok(false)` for a conflict, left alone.
    pub fn undo_on_disk(self: &Arc<Self>, scope: &Scope, path: &str, hunks: Option<&[usize]>) -> Result<bool, String> {
        let slot = self.rewind_slot()?;
        match self.plan_undo(&slot, scope, path, hunks, |_| None)? {
            Undo::Conflict(_) => Ok(false),
            Undo::Restore(f) => {
                let applied = apply_on_disk(&self.root, &undo_plan(f.clone()), |_| false);
                if let Some((_, why)) = applied.failed.first() {
                    return Err(format!("{path} could not be put back: {why}"));
                }
                self.finish_undo(&slot, &f)?;
                Ok(true)
            }
        }
    }
}

/// An undo as a rewind of one file (so it is put back the same way, beneath the workspace).
pub fn undo_plan(file: FileRestore) -> RewindPlan {
    RewindPlan {
        checkpoint: String::new(),
        restore: Restore::Files,
        files: vec![file],
        conflicts: Vec::new(),
        unrestorable: Vec::new(),
        dirs: Vec::new(),
        session: None,
    }
}
