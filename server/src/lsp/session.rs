//! One session of a workspace folder as the editor sees it: the engine's workspace (conversation, plan,
//! runs) and what only an editor has: the folder's URI, its settings and the edit marks. A folder holds any
//! number of sessions (`folder.rs`); a worktree session's workspace is its worktree. Text not on disk yet
//! lives in `Shared::texts` (texts/).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::ext::At;
use super::texts::{follow, LineChange};
use crate::config::Overrides;
use crate::locks;
use crate::plan::Plan;
use crate::sessions::worktree::Worktree;
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

pub struct Session {
    /// `main` for the folder's own session.
    pub id: String,
    pub title: String,
    /// The folder's URI exactly as the client sent it; every notification names it so.
    pub uri: String,
    /// The folder's canonical path.
    pub folder_root: PathBuf,
    /// Canonical path: the agent's workspace (the folder, or the session's worktree).
    pub root: PathBuf,
    /// The session's own worktree, when it has one.
    pub worktree: Option<Worktree>,
    pub ws: Arc<Workspace>,
    pub view: RwLock<View>,
    /// The `stepwise` section of `workspace/configuration` for its folder (shared with the folder).
    pub settings: Arc<RwLock<Overrides>>,
    /// The latest run's changes as last reviewed (review.rs), and the one refresh at a time.
    pub review: RwLock<super::review_state::ReviewState>,
    pub review_turn: tokio::sync::Mutex<()>,
    /// The editor as the session's source of code intelligence (`stepwise/query`), made once so the
    /// engine's session (which knows the errors seen before) lasts across runs.
    pub intel: std::sync::OnceLock<crate::intel::Source>,
    /// A question of its run waits for the user (`stepwise.sessions` says `waiting`).
    pub waiting: std::sync::atomic::AtomicBool,
}

/// The folder a session belongs to, as the session keeps it: its URI, root and settings (`Folder::place`).
pub struct Place {
    pub uri: String,
    pub root: PathBuf,
    pub settings: Arc<RwLock<Overrides>>,
}

impl Session {
    /// A session of the folder `place` on `ws` (whose root is the folder, or the worktree).
    pub fn new(place: Place, id: String, title: String, ws: Arc<Workspace>, worktree: Option<Worktree>) -> Session {
        ws.set_label(title.clone());
        Session {
            id,
            title,
            uri: place.uri,
            folder_root: place.root,
            root: ws.root().to_path_buf(),
            worktree,
            ws,
            view: RwLock::new(View::default()),
            settings: place.settings,
            review: RwLock::default(),
            review_turn: tokio::sync::Mutex::new(()),
            intel: std::sync::OnceLock::new(),
            waiting: Default::default(),
        }
    }

    /// What its notifications name: its folder and itself.
    pub fn at(&self) -> At {
        At { workspace: self.uri.clone(), session: self.id.clone() }
    }

    /// The folder's name (and the session's title beside the folder's own), as messages to the user call it.
    pub fn name(&self) -> String {
        let folder = crate::host::folder_name(&self.folder_root);
        match self.id == crate::sessions::index::MAIN {
            true => folder,
            false => format!("{folder} · {}", self.title),
        }
    }

    /// The `stepwise/plan` payload (also the `stepwise.plan` command's result).
    pub fn plan(&self) -> super::ext::Plan {
        super::ext::Plan::of(self.at(), &self.ws.plan())
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
