//! Files brought into this workspace from elsewhere (a worktree session's changes, `sessions/apply.rs`) as
//! the agent's edits of a run of their own: a checkpoint before it, so the review lists them hunk by hunk
//! and a rewind takes them back; text through the adapter's host (an open document as the editor's edit,
//! in its undo), removals and files that are not text on disk, followed as a command's changes are.

use std::path::PathBuf;

use super::tracked::Tracked;
use super::{RunTicket, Workspace};
use crate::checkpoint::{apply_on_disk, Action, FileRestore, RewindPlan};
use crate::events::EventSink;
use crate::host::{resolve, DynHost, EditContext, FileChange, Host};
use crate::sessions::worktree::Now;

/// What an apply did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Brought {
    pub applied: Vec<String>,
    /// Files that could not be written, with why.
    pub failed: Vec<(String, String)>,
}

impl Workspace {
    /// Makes each of `files` (relative) hold what it says, as a run (`slot`, this workspace's) called
    /// `title`, through `host` (this workspace's root).
    pub async fn apply_files(
        &self,
        slot: &RunTicket,
        title: &str,
        files: &[(String, Now)],
        host: &dyn DynHost,
        events: &dyn EventSink,
    ) -> Result<Brought, String> {
        self.holds(slot)?;
        let convo = self.conversation.lock().await;
        self.checkpoint_run_start(&slot.id, title, &convo, events);
        drop(convo);
        let hooks = crate::sessions::Hooks { seen: &self.seen, siblings: Some(&self.siblings) };
        let tracked = Tracked::new(host, self.checkpoint_store()).with_session(hooks);
        let mut out = Brought::default();
        let mut on_disk = Vec::new();
        for (rel, now) in files {
            let text = match now {
                Now::File(bytes) => std::str::from_utf8(bytes).ok(),
                _ => None,
            };
            let Some(text) = text else {
                let action = match now {
                    Now::File(bytes) => Action::Write { bytes: bytes.clone(), mode: 0o644 },
                    _ => Action::Delete,
                };
                on_disk.push(FileRestore { path: PathBuf::from(rel), action });
                continue;
            };
            let written = async {
                let path = resolve(self.root(), rel)?;
                let current = match tracked.read_file(&path).await {
                    Ok(t) => Some(t),
                    Err(_) if std::fs::symlink_metadata(&path.abs).is_err() => None,
                    Err(e) => return Err(e),
                };
                let change = FileChange::whole(&path, current, text);
                let ctx =
                    EditContext { tool: "apply_session", step: Some(title.to_string()), call_id: slot.id.clone() };
                tracked.apply_change(&path, &change, &ctx).await
            };
            match written.await {
                Ok(()) => out.applied.push(rel.clone()),
                Err(e) => out.failed.push((rel.clone(), e)),
            }
        }
        if !on_disk.is_empty() {
            // Followed as a command's changes are: what is removed or written here is this run's.
            tracked.arm();
            let plan = RewindPlan { files: on_disk, ..RewindPlan::empty() };
            let done = apply_on_disk(self.root(), &plan, |_| false);
            tracked.settle();
            out.applied.extend(done.done.iter().map(|p| p.to_string_lossy().into_owned()));
            out.failed.extend(done.failed.into_iter().map(|(p, e)| (p.to_string_lossy().into_owned(), e)));
        }
        Ok(out)
    }
}
