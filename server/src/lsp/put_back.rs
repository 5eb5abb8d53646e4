//! Putting files back for a rewind or an undo: open documents (and the agent's text not on disk yet)
//! through `workspace/applyEdit`, the rest on disk beneath the workspace. `rewind.rs` and `review.rs` use it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::host::EditorHost;
use super::session::Session;
use super::shared::Shared;
use crate::checkpoint::{apply_on_disk, RewindPlan};
use crate::host::ApprovalMode;
use crate::host::{resolve, EditContext, FileChange, Host};

/// A path's text (relative to the folder) where the editor has one (texts/ rule 1, without the disk).
pub fn in_editor(shared: &Arc<Shared>, session: &Arc<Session>) -> impl Fn(&Path) -> Option<String> + Send + 'static {
    let (shared, root) = (shared.clone(), session.root.clone());
    move |rel: &Path| shared.texts.read(&root.join(rel)).map(|t| t.text)
}

/// Puts the plan's files back: open documents (and the agent's text not on disk yet) through
/// `workspace/applyEdit` labelled with `why`, the rest on disk. What was done, and what failed with why.
pub async fn put_back(
    shared: &Arc<Shared>,
    session: &Arc<Session>,
    plan: &RewindPlan,
    why: &str,
) -> Result<(Vec<PathBuf>, Vec<(PathBuf, String)>), String> {
    let in_editor = in_editor(shared, session);
    let settings = shared.settings_for(session);
    let run_id = if plan.checkpoint.is_empty() { "undo".into() } else { format!("rewind-{}", plan.checkpoint) };
    // Putting files back asks nothing: it writes only what the checkpoint holds.
    let host = EditorHost {
        approval: ApprovalMode::Deny,
        approval_timeout: Duration::from_secs(1),
        ..EditorHost::for_run(shared, session, run_id, &settings)
    };
    let tool = if plan.checkpoint.is_empty() { "undo" } else { "rewind" };
    let ctx = EditContext { tool, step: Some(why.to_string()), call_id: String::new() };
    let (mut done, mut failed, mut through_editor) = (Vec::new(), Vec::new(), HashSet::new());
    for f in &plan.files {
        let (Some(current), Some(text)) = (in_editor(&f.path), f.text()) else { continue };
        through_editor.insert(f.path.clone());
        let applied = match resolve(&session.root, &f.path.to_string_lossy()) {
            Ok(rp) => host.apply_change(&rp, &FileChange::whole(&rp, Some(current), text), &ctx).await,
            Err(e) => Err(e),
        };
        match applied {
            Ok(()) => done.push(f.path.clone()),
            Err(e) => failed.push((f.path.clone(), e)),
        }
    }
    let (root, on_disk) = (session.root.clone(), plan.clone());
    let applied = tokio::task::spawn_blocking(move || apply_on_disk(&root, &on_disk, |p| through_editor.contains(p)))
        .await
        .map_err(|e| format!("internal error: putting files back failed: {e}"))?;
    // What the agent wrote through the editor and is not on disk yet is replaced by what is now there.
    for p in &applied.done {
        shared.texts.on_disk(&session.root.join(p));
    }
    done.extend(applied.done);
    failed.extend(applied.failed);
    Ok((done, failed))
}
