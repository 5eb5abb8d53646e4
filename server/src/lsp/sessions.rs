//! A folder's sessions side by side (issue 47): `stepwise.newSession`, `stepwise.sessions`,
//! `stepwise.applySession`, `stepwise.closeSession`, and `stepwise/sessions` whenever the list changes.
//! The engine makes worktrees and plans an apply (`crate::sessions`); this file translates.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tower_lsp_server::jsonrpc::{Error, Result};

use super::events::EditorEvents;
use super::ext::{self, AppliedSession, NewSessionArgs, SessionInfo, SessionList, SessionMade};
use super::folder::Folder;
use super::host::EditorHost;
use super::notify::Outgoing;
use super::progress::Progress;
use super::run::invalid_request;
use super::session::Session;
use super::shared::Shared;
use crate::sessions::index::{self, Entry, MAIN};
use crate::sessions::{apply, worktree};
use crate::workspace::Workspace;

/// `stepwise.newSession`: a session beside the folder's others (in a worktree of its own if asked),
/// saved so it survives a restart.
pub async fn new(shared: &Arc<Shared>, folder: Arc<Folder>, args: &NewSessionArgs) -> Result<SessionMade> {
    let id = crate::sessions::new_id();
    let saved = folder.index.as_ref().map(|i| i.list().len()).unwrap_or(0);
    let n = saved.max(folder.sessions().len().saturating_sub(1)) + 2;
    let title = args.title.clone().filter(|t| !t.trim().is_empty()).unwrap_or_else(|| format!("Session {n}"));
    let dir = shared.state_dir().map(|d| d.to_path_buf());
    let tree = match args.worktree.unwrap_or(false) {
        false => None,
        true => {
            // Without a state directory the worktree lives in the temporary folder for this process.
            let base = dir.clone().unwrap_or_else(|| std::env::temp_dir().join("stepwise-state"));
            let (root, at, manifest) =
                (folder.root.clone(), worktree::location(&base, &folder.root, &id), index::manifest_file(&base, &id));
            let sid = id.clone();
            let made = tokio::task::spawn_blocking(move || worktree::make(&root, &at, &sid, &manifest))
                .await
                .map_err(|e| invalid_request(format!("the worktree could not be made: {e}")))?;
            Some(made.map_err(|e| invalid_request(format!("the worktree could not be made: {e}")))?)
        }
    };
    let root = tree.as_ref().map_or_else(|| folder.root.clone(), |t| t.path.clone());
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let entry =
        Entry { id: id.clone(), title: title.clone(), created: index::now_ms(), worktree: tree.clone(), closed: false };
    if let Some(i) = &folder.index {
        i.put(entry).map_err(invalid_request)?;
    }
    let (ws, _) = Workspace::open_idle(root, dir.as_deref().map(|d| index::state_file(d, &id)));
    if let Some(t) = &tree {
        ws.allow_writes(t.git_dirs.clone());
    }
    shared.open_session(&folder, Arc::new(Session::new(folder.place(), id.clone(), title, ws, tree.clone())));
    announce(shared, &folder);
    Ok(SessionMade {
        session: id,
        worktree: tree.as_ref().map(|t| t.path.to_string_lossy().into_owned()),
        branch: tree.and_then(|t| t.branch),
    })
}

/// `stepwise.sessions`: the open sessions, then the closed ones the folder keeps.
pub async fn list(folder: &Folder) -> SessionList {
    let mut sessions = Vec::new();
    for s in folder.sessions() {
        sessions.push(info(&s).await);
    }
    let saved = folder.index.as_ref().map(|i| i.list()).unwrap_or_default();
    for e in saved.into_iter().filter(|e| folder.session(&e.id).is_none()) {
        sessions.push(SessionInfo {
            session: e.id,
            title: e.title,
            state: "closed".into(),
            worktree: e.worktree.as_ref().map(|t| t.path.to_string_lossy().into_owned()),
            branch: e.worktree.and_then(|t| t.branch),
            unapplied: None,
            progress: None,
        });
    }
    SessionList { sessions }
}

async fn info(s: &Arc<Session>) -> SessionInfo {
    let state = match (s.ws.running().is_some(), s.waiting.load(Ordering::Relaxed)) {
        (true, true) => "waiting",
        (true, false) => "running",
        _ => "idle",
    };
    let plan = s.ws.plan().plan;
    let unapplied = match &s.worktree {
        Some(_) => unapplied(s).await.ok().map(|c| c.len()),
        None => None,
    };
    SessionInfo {
        session: s.id.clone(),
        title: s.title.clone(),
        state: state.into(),
        worktree: s.worktree.as_ref().map(|t| t.path.to_string_lossy().into_owned()),
        branch: s.worktree.as_ref().and_then(|t| t.branch.clone()),
        unapplied,
        progress: (!plan.items.is_empty()).then(|| format!("{}/{}", plan.completed(), plan.items.len())),
    }
}

/// A worktree session's changes not applied yet.
async fn unapplied(s: &Session) -> std::result::Result<Vec<worktree::Change>, String> {
    let tree = s.worktree.clone().ok_or("the session has no worktree: its changes are in the folder already")?;
    let manifest_file = manifest_of(s);
    tokio::task::spawn_blocking(move || {
        let manifest = manifest_file.as_deref().map(worktree::read_manifest).unwrap_or_default();
        tree.changes(&manifest)
    })
    .await
    .map_err(|e| e.to_string())?
}

fn manifest_of(s: &Session) -> Option<std::path::PathBuf> {
    let tree = s.worktree.as_ref()?;
    // The state directory the worktree was made in: `<state>/worktrees/<name>`.
    let base = tree.top.parent()?.parent()?;
    Some(index::manifest_file(base, &s.id))
}

/// Sends the folder's list (`stepwise/sessions`), in the background.
pub fn announce(shared: &Arc<Shared>, folder: &Arc<Folder>) {
    let (shared, folder) = (shared.clone(), folder.clone());
    tokio::spawn(async move {
        let list = list(&folder).await;
        shared
            .notifier
            .send(Outgoing::Sessions(ext::Sessions { workspace: folder.uri.clone(), sessions: list.sessions }));
    });
}

/// `stepwise.applySession`: a worktree session's changes brought into its folder, as a run of the folder's
/// own session (reviewable, rewindable, open documents through the editor).
pub async fn apply(shared: &Arc<Shared>, id: &str) -> Result<AppliedSession> {
    let session = shared.session(None, Some(id))?;
    if session.worktree.is_none() {
        return Err(invalid_request(format!("session {id} has no worktree: its changes are in the folder already")));
    }
    if session.ws.running().is_some() {
        return Err(invalid_request(format!(
            "session {} is running: apply its changes once it ends (or cancel it)",
            session.title
        )));
    }
    let folder = shared.folder(Some(&session.uri))?;
    let target = folder.main().ok_or_else(|| Error::invalid_params("the folder has no session"))?;
    let slot = target.ws.begin().map_err(|_| {
        invalid_request(format!(
            "the folder's session is busy (a run, or another apply): apply {}'s changes when it is done",
            session.title
        ))
    })?;
    let changes = unapplied(&session).await.map_err(invalid_request)?;
    let (root, plan_changes) = (folder.root.clone(), changes);
    let plan = tokio::task::spawn_blocking(move || apply::plan(&root, plan_changes))
        .await
        .map_err(|e| invalid_request(e.to_string()))?;
    let settings = shared.settings_for(&target);
    let host = EditorHost::for_run(shared, &target, slot.id.clone(), &settings);
    let events = EditorEvents {
        shared: shared.clone(),
        notifier: shared.notifier.clone(),
        session: target.clone(),
        run_id: slot.id.clone(),
        progress: Arc::new(Progress::default()),
    };
    let title = format!("Apply session {}", session.title);
    let brought = target.ws.apply_files(&slot, &title, &plan.files, &host, &events).await.map_err(invalid_request)?;
    let run_id = slot.id.clone();
    drop(slot);
    // What was carried (and what the folder held already) is the session's start from now on.
    if let Some(file) = manifest_of(&session) {
        let done: Vec<_> =
            plan.files.iter().filter(|(rel, _)| brought.applied.contains(rel)).chain(&plan.same).cloned().collect();
        let manifest = apply::applied(worktree::read_manifest(&file), &done);
        if let Err(e) = worktree::write_manifest(&file, &manifest) {
            tracing::warn!("{e}");
        }
    }
    super::review::refresh(shared, &target).await;
    announce(shared, &folder);
    let mut conflicts: Vec<String> = plan.conflicts.into_iter().map(|(p, _)| p).collect();
    conflicts.extend(brought.failed.into_iter().map(|(p, _)| p));
    Ok(AppliedSession { applied: brought.applied, conflicts, run_id: Some(run_id) })
}

/// `stepwise.closeSession`: its run cancelled, its tasks ended, its state written; kept (with its
/// worktree) to be reopened, or with `discard` forgotten and its worktree removed.
pub async fn close(shared: &Arc<Shared>, id: &str, discard: bool) -> Result<()> {
    if id == MAIN {
        return Err(invalid_request(
            "the folder's own session cannot be closed (stepwise.reset starts it anew)".into(),
        ));
    }
    let session = shared.session(None, Some(id))?;
    let folder = shared.folder(Some(&session.uri))?;
    session.ws.cancel();
    if !session.ws.until_idle(std::time::Duration::from_secs(5)).await {
        return Err(invalid_request(format!("session {} did not stop in time; try again", session.title)));
    }
    folder.take(id);
    session.ws.background().kill_all_now();
    session.ws.flush();
    let index = folder.index.clone();
    let dir = shared.state_dir().map(|d| d.to_path_buf());
    let (tree, folder_root, sid) = (session.worktree.clone(), folder.root.clone(), id.to_string());
    drop(session);
    let done = tokio::task::spawn_blocking(move || -> std::result::Result<(), String> {
        match discard {
            false => index.map_or(Ok(()), |i| {
                i.update(|all| all.iter_mut().filter(|e| e.id == sid).for_each(|e| e.closed = true))
            }),
            true => {
                if let Some(t) = &tree {
                    t.remove(&folder_root)?;
                }
                if let Some(d) = &dir {
                    let file = index::state_file(d, &sid);
                    let _ = std::fs::remove_file(&file);
                    let _ = std::fs::remove_dir_all(file.with_extension("checkpoints"));
                    let _ = std::fs::remove_file(index::manifest_file(d, &sid));
                }
                index.map_or(Ok(()), |i| i.remove(&sid))
            }
        }
    })
    .await
    .map_err(|e| invalid_request(e.to_string()))?;
    announce(shared, &folder);
    done.map_err(invalid_request)
}
