//! One workspace folder: its conversation, plan, run and what the editor should show of them.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, RwLock};

use dashmap::DashMap;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::reconcile::{follow, LineChange};
use crate::agent::Session;
use crate::config::Overrides;
use crate::locks;
use crate::plan::Plan;
use crate::store::Saver;

/// Where this run edited a document, for the edit code lenses.
#[derive(Debug, Clone)]
pub struct EditMark {
    pub path: PathBuf,
    /// The lines the edit's new text occupies; they follow changes above them (reconcile::follow).
    pub start: u32,
    pub end: u32,
    pub step: String,
}

#[derive(Debug, Default)]
pub struct View {
    pub plan: Plan,
    pub marks: Vec<EditMark>,
}

pub struct RunHandle {
    pub id: String,
    pub cancel: CancellationToken,
}

pub struct Folder {
    /// The folder's URI exactly as the client sent it; every notification names it so.
    pub uri: String,
    /// Canonical path: the agent's workspace.
    pub root: PathBuf,
    /// Held by the running task for the whole run.
    pub session: tokio::sync::Mutex<Session>,
    /// What the editor sees, readable while a run holds the session.
    pub view: RwLock<View>,
    pub run: Mutex<Option<RunHandle>>,
    /// The `stepwise` section of `workspace/configuration` for this folder.
    pub settings: RwLock<Overrides>,
    /// "Allow for this session" was chosen for shell commands.
    pub allow_all: AtomicBool,
    /// Text the agent wrote through the editor to files that are not open (not yet on disk).
    pub overlay: DashMap<PathBuf, String>,
    /// Documents the agent changed that may not be saved yet.
    pub unsaved: Mutex<HashSet<PathBuf>>,
    /// Where the session is saved (none without a state directory).
    saver: Option<Saver>,
    /// The folder's MCP servers, started at its first run (lsp/mcp.rs).
    pub mcp: std::sync::OnceLock<std::sync::Arc<crate::mcp::McpSet>>,
}

impl Folder {
    pub fn new(uri: String, root: PathBuf, session: Session, state_file: Option<PathBuf>) -> Folder {
        Folder {
            uri,
            root,
            view: RwLock::new(View { plan: session.plan.clone(), marks: Vec::new() }),
            session: tokio::sync::Mutex::new(session),
            run: Mutex::new(None),
            settings: RwLock::new(Overrides::default()),
            allow_all: AtomicBool::new(false),
            overlay: DashMap::new(),
            unsaved: Mutex::new(HashSet::new()),
            saver: state_file.map(Saver::spawn),
            mcp: Default::default(),
        }
    }

    /// The folder's name, as messages to the user call it.
    pub fn name(&self) -> String {
        crate::host::folder_name(&self.root)
    }

    pub fn plan(&self) -> Plan {
        locks::read(&self.view).plan.clone()
    }

    pub fn set_plan(&self, plan: &Plan) {
        locks::write(&self.view).plan = plan.clone();
    }

    /// The `stepwise/plan` payload (also the `stepwise.plan` command's result).
    pub fn plan_json(&self) -> Value {
        plan_payload(&self.uri, &self.plan())
    }

    pub fn running_id(&self) -> Option<String> {
        locks::lock(&self.run).as_ref().map(|h| h.id.clone())
    }

    pub fn cancel_run(&self) -> bool {
        let token = locks::lock(&self.run).as_ref().map(|h| h.cancel.clone());
        match token {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Moves the edit marks of `path` with changes the user made (`None`: the whole text was replaced, so
    /// only marks past its end go). Returns whether any mark moved or went.
    pub fn follow_changes(&self, path: &Path, changes: Option<&[LineChange]>, lines: impl FnOnce() -> u32) -> bool {
        let mut view = locks::write(&self.view);
        if !view.marks.iter().any(|m| m.path == path) {
            return false;
        }
        // Only a whole-text change needs the line count (counting is a pass over the text).
        let lines = if changes.is_none() { lines().max(1) } else { 0 };
        let mut moved = false;
        view.marks.retain_mut(|m| {
            if m.path != path {
                return true;
            }
            let at = match changes {
                Some(changes) => changes.iter().try_fold((m.start, m.end), |(s, e), c| follow(s, e, *c)),
                None => Some((m.start, m.end)).filter(|(s, _)| *s < lines),
            };
            moved |= at != Some((m.start, m.end));
            match at {
                Some((s, e)) => {
                    (m.start, m.end) = (s, e);
                    true
                }
                None => false,
            }
        });
        moved
    }

    /// Frees the run slot if the run `id` still holds it.
    pub fn release_run(&self, id: &str) {
        let mut slot = locks::lock(&self.run);
        if slot.as_ref().is_some_and(|h| h.id == id) {
            *slot = None;
        }
    }

    pub fn save(&self, session: &Session) {
        if let Some(saver) = &self.saver {
            saver.save(&self.root, session);
        }
    }

    /// Writes the latest snapshot now (at shutdown, when background writers may not get to run).
    pub fn flush(&self) {
        if let Some(Err(e)) = self.saver.as_ref().map(Saver::flush) {
            tracing::warn!("could not save session state: {e}");
        }
    }
}

pub fn plan_payload(workspace: &str, plan: &Plan) -> Value {
    json!({
        "workspace": workspace,
        "items": plan.items,
        "completed": plan.completed(),
        "total": plan.items.len(),
    })
}

/// The line-0 lens title: progress and the step in hand.
pub fn lens_title(plan: &Plan) -> String {
    let done = plan.completed();
    let total = plan.items.len();
    let tail = match plan.in_progress() {
        Some(item) => item.text.clone(),
        None if plan.all_completed() => "done".into(),
        None => {
            let pending = plan.items.iter().filter(|i| i.status == crate::plan::Status::Pending).count();
            format!("{pending} pending")
        }
    };
    format!("stepwise {done}/{total} · {tail}")
}
