//! `stepwise.rewind` (issue 20): open documents, and text the agent wrote through the editor that is not
//! on disk yet, go back through `workspace/applyEdit` (the editor can undo the rewind); everything else is
//! put back on disk beneath the workspace. Refused while a run goes on.

use std::path::PathBuf;
use std::sync::Arc;

use super::events::announce_plan;
use super::ext::{PathReason, Rewound};
use super::put_back::{in_editor, put_back};
use super::session::Session;
use super::shared::Shared;
use crate::checkpoint::Restore;
use crate::locks;

/// Rewinds `folder` to checkpoint `id`; the contract's answer (`files`, `conversation`, `conflicts`),
/// plus what could not be put back and why.
pub async fn rewind(
    shared: &Arc<Shared>,
    session: Arc<Session>,
    id: &str,
    restore: Restore,
) -> Result<Rewound, String> {
    let in_editor = in_editor(shared, &session);
    // Held to the end: a run started meanwhile would find the files put back under it.
    let slot = session.ws.rewind_slot()?;
    let plan = session.ws.plan_rewind(&slot, id, restore, in_editor)?;
    let (done, failed) = put_back(shared, &session, &plan, &format!("rewind to checkpoint {id}")).await?;
    session.ws.finish_rewind(&slot, &plan, &done)?;
    if restore.files() {
        locks::write(&session.view).marks.clear();
    }
    if plan.session.is_some() {
        announce_plan(&shared.notifier, &session, &session.ws.plan());
    }
    let paths = |v: &[PathBuf]| v.iter().map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>();
    let why = |v: &[(PathBuf, String)]| {
        let reason =
            |(p, why): &(PathBuf, String)| PathReason { path: p.to_string_lossy().into(), reason: why.clone() };
        v.iter().map(reason).collect::<Vec<_>>()
    };
    super::review::refresh(shared, &session).await;
    Ok(Rewound {
        files: paths(&done),
        conversation: plan.session.is_some(),
        conflicts: paths(&plan.conflicts),
        unrestorable: why(&plan.unrestorable),
        failed: why(&failed),
    })
}
