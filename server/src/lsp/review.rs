//! Review of the agent's changes in the editor (issue 28): `stepwise.changes`, `stepwise.review`, the
//! `stepwise/review` notification, and the `Keep` / `Undo` code lenses any client with lenses can use.
//! The folder keeps the latest run's bases (what each changed path held before) so lenses are computed
//! against the document's text without waiting on the checkpoint store.

use std::path::Path;
use std::sync::Arc;

use tower_lsp_server::ls_types::{CodeLens, Command, Position, Range};

use super::ext::{self, PathReason, Pending, ReviewAction, ReviewArgs, Reviewed};
use super::notify::Outgoing;
use super::put_back::{in_editor, put_back};
use super::session::Session;
use super::shared::Shared;
use crate::checkpoint::{Hunk, Scope, Undo};
use crate::locks;

pub fn scope(run_id: Option<&str>, checkpoint: Option<&str>) -> Scope {
    match (checkpoint, run_id) {
        (Some(c), _) => Scope::Since(c.to_string()),
        (None, Some(r)) => Scope::Run(r.to_string()),
        (None, None) => Scope::Latest,
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(f).await.map_err(|e| format!("internal error: {e}"))?
}

/// `stepwise.conversation`.
pub async fn conversation(session: Arc<Session>) -> Result<ext::Conversation, String> {
    let f = session.clone();
    let entries = blocking(move || Ok(f.ws.conversation_entries())).await?;
    Ok(ext::Conversation { at: session.at(), entries })
}

/// `stepwise.changes`.
pub async fn changes(shared: &Arc<Shared>, session: Arc<Session>, scope: Scope) -> Result<ext::Changes, String> {
    let (f, current) = (session.clone(), in_editor(shared, &session));
    let (run_id, files) = blocking(move || f.ws.changes(&scope, current)).await?;
    Ok(ext::Changes { at: session.at(), run_id, files })
}

/// `stepwise.review` `keep`.
pub async fn keep(
    shared: &Arc<Shared>,
    session: Arc<Session>,
    scope: Scope,
    path: String,
    hunks: Option<Vec<usize>>,
) -> Result<Reviewed, String> {
    let (f, current) = (session.clone(), in_editor(shared, &session));
    blocking(move || f.ws.keep(&scope, &path, hunks.as_deref(), current)).await?;
    refresh(shared, &session).await;
    Ok(Reviewed::default())
}

/// `stepwise.review` `undo`: refused while a run goes on.
pub async fn undo(
    shared: &Arc<Shared>,
    session: Arc<Session>,
    scope: Scope,
    path: String,
    hunks: Option<Vec<usize>>,
) -> Result<Reviewed, String> {
    let slot = session.ws.rewind_slot()?;
    let current = in_editor(shared, &session);
    let planned = session.ws.plan_undo(&slot, &scope, &path, hunks.as_deref(), current)?;
    let mut out = Reviewed::default();
    match planned {
        Undo::Conflict(p) => out.conflicts.push(p.to_string_lossy().into_owned()),
        Undo::Restore(file) => {
            let plan = crate::workspace::undo_plan(file.clone());
            let (done, failed) = put_back(shared, &session, &plan, "review").await?;
            if done.contains(&file.path) {
                session.ws.finish_undo(&slot, &file)?;
                out.undone.push(file.path.to_string_lossy().into_owned());
            }
            out.failed = failed
                .into_iter()
                .map(|(p, reason)| PathReason { path: p.to_string_lossy().into_owned(), reason })
                .collect();
        }
    }
    drop(slot);
    refresh(shared, &session).await;
    Ok(out)
}

/// `stepwise.review` `comment`: the steer that tells the agent, naming the file and the hunks' lines
/// (1-based, in the text now).
pub async fn comment_text(
    shared: &Arc<Shared>,
    session: &Arc<Session>,
    scope: Scope,
    path: &str,
    hunks: Option<Vec<usize>>,
    text: &str,
) -> Result<String, String> {
    let Some(hunks) = hunks.filter(|h| !h.is_empty()) else {
        return Ok(format!("Review comment on {path}: {text}"));
    };
    let (f, current, p) = (session.clone(), in_editor(shared, session), path.to_string());
    let (_, files) = blocking(move || f.ws.changes(&scope, current)).await?;
    let file = files.iter().find(|c| c.path == p).ok_or_else(|| format!("the agent did not change {path}"))?;
    let mut spans = Vec::new();
    for i in hunks {
        let h =
            file.hunks.get(i).ok_or_else(|| format!("{path} has {} hunks; there is no hunk {i}", file.hunks.len()))?;
        spans.push(match h.end - h.start {
            0 => format!("after line {}", h.start),
            1 => format!("line {}", h.start + 1),
            _ => format!("lines {}-{}", h.start + 1, h.end),
        });
    }
    Ok(format!("Review comment on {path} ({}): {text}", spans.join(", ")))
}

/// Recomputes the folder's review (the latest run's changes): keeps its bases for the lenses, and sends
/// `stepwise/review` (and a lens refresh) when the unreviewed set changed. One at a time per session.
pub async fn refresh(shared: &Arc<Shared>, session: &Arc<Session>) {
    refresh_with(shared, session, false).await
}

/// The same, sending `stepwise/review` whatever the unreviewed set (the checkpoints were taken over from
/// another process: even with nothing left to review, the changes to list are new to the editor).
pub async fn refresh_announcing(shared: &Arc<Shared>, session: &Arc<Session>) {
    refresh_with(shared, session, true).await
}

async fn refresh_with(shared: &Arc<Shared>, session: &Arc<Session>, always: bool) {
    let _turn = session.review_turn.lock().await;
    let (f, current) = (session.clone(), in_editor(shared, session));
    let computed = blocking(move || {
        let bases = f.ws.review_bases(&Scope::Latest)?;
        let files = bases.changes(&f.root, crate::host::disk::MAX_FILE, current);
        let pending: Vec<Pending> = files
            .iter()
            .map(|c| Pending { path: c.path.clone(), hunks: c.hunks.iter().filter(|h| !h.reviewed).count() })
            .filter(|p| p.hunks > 0)
            .collect();
        Ok((bases, pending))
    })
    .await;
    let (bases, pending) = match computed {
        Ok(c) => c,
        Err(e) => return tracing::debug!("review: {e}"),
    };
    let changed = {
        let mut state = locks::write(&session.review);
        state.bases = Arc::new(bases);
        // Nothing to review at the start is not news.
        let changed = state.pending.as_deref().unwrap_or_default() != pending.as_slice();
        state.pending = Some(pending.clone());
        changed
    };
    if changed || always {
        shared.notifier.send(Outgoing::Review(ext::Review { at: session.at(), pending }));
    }
    shared.notifier.send(Outgoing::RefreshLenses);
}

/// Unreviewed hunks in the folder, as last computed (for the plan lens).
pub fn pending_hunks(session: &Session) -> usize {
    locks::read(&session.review).pending.as_ref().map_or(0, |p| p.iter().map(|p| p.hunks).sum())
}

/// `Keep` and `Undo` above each unreviewed hunk of the document at `path` (absolute), whose text is `text`.
pub fn lenses(session: &Session, path: &Path, text: &str) -> Vec<CodeLens> {
    let Ok(rel) = path.strip_prefix(&session.root) else { return Vec::new() };
    let Some(key) = crate::checkpoint::key_of(rel) else { return Vec::new() };
    let bases = locks::read(&session.review).bases.clone();
    let Some(base) = bases.files.iter().find(|b| b.path == key) else { return Vec::new() };
    let Some(file) = base.changes(Some(text.as_bytes()), &bases.kept) else { return Vec::new() };
    let last = text.lines().count().saturating_sub(1);
    let mut out = Vec::new();
    for h in file.hunks.iter().filter(|h| !h.reviewed) {
        let line = u32::try_from(h.start.min(last)).unwrap_or(u32::MAX);
        for (title, action) in [("Keep", ReviewAction::Keep), ("Undo", ReviewAction::Undo)] {
            out.push(lens(line, title, session, &key, action, h));
        }
    }
    out
}

fn lens(line: u32, title: &str, session: &Session, path: &str, action: ReviewAction, h: &Hunk) -> CodeLens {
    // `stepwise.review`'s own argument, naming the one hunk.
    let arg = ReviewArgs {
        workspace: Some(session.uri.clone()),
        session: Some(session.id.clone()),
        path: path.to_string(),
        action,
        hunks: Some(vec![h.index]),
        text: None,
        run_id: None,
        checkpoint: None,
    };
    CodeLens {
        range: Range { start: Position { line, character: 0 }, end: Position { line, character: 0 } },
        command: Some(Command {
            title: title.into(),
            command: "stepwise.review".into(),
            arguments: serde_json::to_value(arg).ok().map(|a| vec![a]),
        }),
        data: None,
    }
}
