//! `stepwise.rewind` (issue 20): open documents, and text the agent wrote through the editor that is not
//! on disk yet, go back through `workspace/applyEdit` (the editor can undo the rewind); everything else is
//! put back on disk beneath the workspace. Refused while a run goes on.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::events::announce_plan;
use super::folder::Folder;
use super::host::EditorHost;
use super::shared::Shared;
use crate::checkpoint::{apply_on_disk, Restore, RewindPlan};
use crate::host::ApprovalMode;
use crate::host::{resolve, EditContext, FileChange, Host};
use crate::locks;

/// Rewinds `folder` to checkpoint `id`; the contract's answer (`files`, `conversation`, `conflicts`),
/// plus what could not be put back and why.
pub async fn rewind(shared: &Arc<Shared>, folder: Arc<Folder>, id: &str, restore: Restore) -> Result<Value, String> {
    let in_editor = |rel: &Path| {
        let abs = folder.root.join(rel);
        shared.docs.text(&abs).or_else(|| folder.overlay.get(&abs).map(|t| t.clone()))
    };
    // Held to the end: a run started meanwhile would find the files put back under it.
    let slot = folder.ws.rewind_slot()?;
    let plan = folder.ws.plan_rewind(&slot, id, restore, in_editor)?;
    let (done, failed) = put_back(shared, &folder, &plan, &format!("rewind to checkpoint {id}")).await?;
    folder.ws.finish_rewind(&slot, &plan, &done)?;
    if restore.files() {
        locks::write(&folder.view).marks.clear();
    }
    if plan.session.is_some() {
        announce_plan(&shared.notifier, &folder, &folder.ws.plan());
    }
    let paths = |v: &[PathBuf]| v.iter().map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>();
    let why = |v: &[(PathBuf, String)]| {
        v.iter().map(|(p, why)| json!({"path": p.to_string_lossy(), "reason": why})).collect::<Vec<_>>()
    };
    super::review::refresh(shared, &folder).await;
    Ok(json!({
        "files": paths(&done),
        "conversation": plan.session.is_some(),
        "conflicts": paths(&plan.conflicts),
        "unrestorable": why(&plan.unrestorable),
        "failed": why(&failed),
    }))
}

/// Puts the plan's files back: open documents (and the agent's text not on disk yet) through
/// `workspace/applyEdit` labelled with `why`, the rest on disk. What was done, and what failed with why.
pub async fn put_back(
    shared: &Arc<Shared>,
    folder: &Arc<Folder>,
    plan: &RewindPlan,
    why: &str,
) -> Result<(Vec<PathBuf>, Vec<(PathBuf, String)>), String> {
    let in_editor = |rel: &Path| {
        let abs = folder.root.join(rel);
        shared.docs.text(&abs).or_else(|| folder.overlay.get(&abs).map(|t| t.clone()))
    };
    let settings = shared.settings_for(folder);
    let host = EditorHost {
        shared: shared.clone(),
        folder: folder.clone(),
        run_id: if plan.checkpoint.is_empty() { "undo".into() } else { format!("rewind-{}", plan.checkpoint) },
        approval: ApprovalMode::Deny,
        request_timeout: Duration::from_secs(settings.request_timeout_secs.unwrap_or(30).max(1)),
        approval_timeout: Duration::from_secs(1),
    };
    let tool = if plan.checkpoint.is_empty() { "undo" } else { "rewind" };
    let ctx = EditContext { tool, step: Some(why.to_string()), call_id: String::new() };
    let (mut done, mut failed, mut through_editor) = (Vec::new(), Vec::new(), HashSet::new());
    for f in &plan.files {
        let (Some(current), Some(text)) = (in_editor(&f.path), f.text()) else { continue };
        through_editor.insert(f.path.clone());
        let applied = match resolve(&folder.root, &f.path.to_string_lossy()) {
            Ok(rp) => host.apply_change(&rp, &FileChange::whole(&rp, Some(current), text), &ctx).await,
            Err(e) => Err(e),
        };
        match applied {
            Ok(()) => done.push(f.path.clone()),
            Err(e) => failed.push((f.path.clone(), e)),
        }
    }
    let (root, on_disk) = (folder.root.clone(), plan.clone());
    let applied = tokio::task::spawn_blocking(move || apply_on_disk(&root, &on_disk, |p| through_editor.contains(p)))
        .await
        .map_err(|e| format!("internal error: putting files back failed: {e}"))?;
    // What the agent wrote through the editor and is not on disk yet is replaced by what is now there.
    for p in &applied.done {
        let abs = folder.root.join(p);
        folder.overlay.remove(&abs);
        locks::lock(&folder.unsaved).remove(&abs);
    }
    done.extend(applied.done);
    failed.extend(applied.failed);
    Ok((done, failed))
}
