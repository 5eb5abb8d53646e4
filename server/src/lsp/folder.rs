//! One workspace folder as the editor sees it: the engine's workspace (conversation, plan, runs) and
//! what only an editor has: the folder's URI, its settings and the edit marks. Text not on disk yet lives
//! in `Shared::texts` (texts/).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::texts::{follow, LineChange};
use crate::config::Overrides;
use crate::locks;
use crate::plan::Plan;
use crate::workspace::Workspace;

/// Where this run edited a document, for the edit code lenses.
#[derive(Debug, Clone)]
pub struct EditMark {
    pub path: PathBuf,
    /// The lines the edit's new text occupies; they follow changes above them (reconcile::follow).
    pub start: u32,
    pub end: u32,
    pub step: String,
}

/// Where this run edited documents, readable while a run goes on.
#[derive(Debug, Default)]
pub struct View {
    pub marks: Vec<EditMark>,
}

pub struct Folder {
    /// The folder's URI exactly as the client sent it; every notification names it so.
    pub uri: String,
    /// Canonical path: the agent's workspace.
    pub root: PathBuf,
    pub ws: Arc<Workspace>,
    pub view: RwLock<View>,
    /// The `stepwise` section of `workspace/configuration` for this folder.
    pub settings: RwLock<Overrides>,
    /// The latest run's changes as last reviewed (review.rs), and the one refresh at a time.
    pub review: RwLock<super::review_state::ReviewState>,
    pub review_turn: tokio::sync::Mutex<()>,
    /// The editor as the folder's source of code intelligence (`stepwise/query`), made once so the
    /// engine's session (which knows the errors seen before) lasts across runs.
    pub intel: std::sync::OnceLock<crate::intel::Source>,
}

impl Folder {
    pub fn new(uri: String, ws: Arc<Workspace>) -> Folder {
        Folder {
            uri,
            root: ws.root().to_path_buf(),
            ws,
            view: RwLock::new(View::default()),
            settings: RwLock::new(Overrides::default()),
            review: RwLock::default(),
            review_turn: tokio::sync::Mutex::new(()),
            intel: std::sync::OnceLock::new(),
        }
    }

    /// The folder's name, as messages to the user call it.
    pub fn name(&self) -> String {
        self.ws.name()
    }

    /// The `stepwise/plan` payload (also the `stepwise.plan` command's result).
    pub fn plan(&self) -> super::ext::Plan {
        super::ext::Plan::of(&self.uri, &self.ws.plan())
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
