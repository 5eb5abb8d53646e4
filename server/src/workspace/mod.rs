//! One workspace's engine state, owned in one place for every adapter: the conversation, the plan (a
//! shared document with a revision), the run slot and its cancellation, the lines the user steers with,
//! what the user allowed for the session, its MCP servers, and saving. The command line, the sidecar's folders and the
//! ACP agent's sessions each hold a `Workspace` and translate; none keeps a conversation of its own.
//!
//! Operations in: `prompt`, `compact` (as runs, `run.rs`), `cancel`, `reset`, `edit_plan`, `steer`.
//! Out: the agent's typed events (through the adapter's sink, wrapped to save as it goes), and plan
//! snapshots readable without waiting on a run (`plan`, `subscribe_plan`).

mod apply;
mod checkpoints;
pub mod intel;
mod open;
mod plan_first;
mod review;
mod run;
mod saving;
mod tracked;
pub use tracked::Tracked;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

pub use apply::Brought;
pub use checkpoints::Handover;

use crate::host::Approvals;
use crate::llm::Message;
use crate::plan::{Change, EditItem, PlanBoard, PlanState};
use crate::session::Session;
use crate::steering::Inbox;
use crate::store::Saver;

pub use open::{Asker, Prepared, RunRequest, Trust, Unopened, Unreadable};
pub use review::undo_plan;
pub use run::{guarded, RunTicket};

/// The run going on, if any.
#[derive(Clone)]
struct Running {
    id: String,
    cancel: tokio_util::sync::CancellationToken,
}

pub struct Workspace {
    root: PathBuf,
    /// Held by a run for its whole length; everything else stays readable meanwhile.
    conversation: tokio::sync::Mutex<Vec<Message>>,
    plan: PlanBoard,
    inbox: Inbox,
    approvals: Approvals,
    /// Its private temporary folder for sandboxed commands, removed with the workspace.
    /// Shared with the language servers, whose policy is made at their first start.
    sandbox: Arc<crate::sandbox::Sandbox>,
    run: watch::Sender<Option<Running>>,
    saver: Option<Saver>,
    /// Off until an adapter turns them on (`checkpoints.rs`).
    checkpoints: std::sync::OnceLock<std::sync::Mutex<crate::checkpoint::Checkpoints>>,
    /// The store's note of the user's saves, reachable without its lock.
    user_saves: std::sync::OnceLock<crate::checkpoint::UserSaves>,
    /// Whether the checkpoints wait for a store another process holds (`checkpoints.rs`).
    handover: watch::Sender<checkpoints::Handover>,
    /// Started at the first run's preparation (`open.rs`); they stop when the workspace goes.
    mcp: tokio::sync::OnceCell<Arc<crate::mcp::McpSet>>,
    /// Plan first: the task whose plan waits for the user's approval (`plan_first.rs`).
    awaiting: std::sync::Mutex<Option<String>>,
    /// Its background commands; every one's process tree ends when the workspace goes.
    background: crate::background::Background,
    /// The children of its runs (`task`): those running, and the conversations of all, saved.
    subagents: crate::subagents::Subagents,
    /// The language servers stepwise would start here (`intel.rs`), found at the first run's preparation.
    servers: tokio::sync::OnceCell<Option<intel::Decided>>,
    /// The code-intelligence session runs share (`intel.rs`).
    intel: std::sync::Mutex<Option<Arc<crate::intel::Session>>>,
    /// What its file tools last saw of each file (`write_file` over a file changed since is refused).
    seen: crate::sessions::Seen,
    /// Its place among the folder's sessions in this process (`sessions/siblings.rs`).
    siblings: crate::sessions::Membership,
    /// Folders outside the workspace its sandboxed commands may write too (a worktree session's git dirs).
    also_writable: std::sync::OnceLock<Vec<PathBuf>>,
}

/// What became of a line the user steered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steered {
    /// The running model reads it in its next request.
    Queued,
    /// No run goes on: start one with the line as its prompt.
    NoRun,
}

impl Workspace {
    /// A workspace on `root` (canonical), continuing `saved`, saving to `state_file` when given.
    pub fn new(root: PathBuf, saved: Session, state_file: Option<PathBuf>) -> Arc<Workspace> {
        let saver = state_file.map(|f| Saver::spawn(f, &root));
        if let Some(s) = &saver {
            s.prime(&saved);
        }
        let subagents = crate::subagents::Subagents::default();
        subagents.restore(saved.children);
        Arc::new_cyclic(|me: &std::sync::Weak<Workspace>| Workspace {
            siblings: crate::sessions::siblings::join(&root, crate::host::folder_name(&root), me.clone()),
            seen: Default::default(),
            also_writable: Default::default(),
            conversation: tokio::sync::Mutex::new(saved.messages),
            plan: PlanBoard::new(saved.plan, saved.revision),
            inbox: Inbox::default(),
            approvals: Approvals::default(),
            sandbox: Arc::default(),
            run: watch::Sender::new(None),
            saver,
            checkpoints: std::sync::OnceLock::new(),
            user_saves: std::sync::OnceLock::new(),
            handover: watch::Sender::new(Default::default()),
            mcp: tokio::sync::OnceCell::new(),
            awaiting: std::sync::Mutex::new(None),
            background: Default::default(),
            subagents,
            servers: tokio::sync::OnceCell::new(),
            intel: std::sync::Mutex::new(None),
            root,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder's name, as messages to the user call it.
    pub fn name(&self) -> String {
        crate::host::folder_name(&self.root)
    }

    /// The plan now, without waiting on a run.
    pub fn plan(&self) -> PlanState {
        self.plan.snapshot()
    }

    pub fn plan_board(&self) -> &PlanBoard {
        &self.plan
    }

    /// Wakes on every plan change, the model's and the user's.
    pub fn subscribe_plan(&self) -> watch::Receiver<PlanState> {
        self.plan.subscribe()
    }

    pub fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    /// The session's sandbox (its temporary folder; whether it was said that it cannot start).
    pub fn sandbox(&self) -> &crate::sandbox::Sandbox {
        &self.sandbox
    }

    /// The session's background commands (`background_run`), for the views: list, watch, stop.
    pub fn background(&self) -> &crate::background::Background {
        &self.background
    }

    /// How the folder's other sessions (their reviews) name this one.
    pub fn set_label(&self, label: String) {
        self.siblings.set_label(label);
    }

    /// Lets its sandboxed commands write `dirs` too (a worktree session: what git writes for a commit in it).
    pub fn allow_writes(&self, dirs: Vec<PathBuf>) {
        let _ = self.also_writable.set(dirs);
    }

    /// Its place among the folder's sessions in this process.
    pub fn siblings(&self) -> &crate::sessions::Membership {
        &self.siblings
    }

    /// The running run's id.
    pub fn running(&self) -> Option<String> {
        self.run.borrow().as_ref().map(|r| r.id.clone())
    }

    /// Cancels the run going on; `false` when there is none.
    pub fn cancel(&self) -> bool {
        let token = self.run.borrow().as_ref().map(|r| r.cancel.clone());
        token.inspect(|t| t.cancel()).is_some()
    }

    /// Waits (up to `limit`) until no run goes on; `false` if one still does.
    pub async fn until_idle(&self, limit: Duration) -> bool {
        let mut rx = self.run.subscribe();
        tokio::time::timeout(limit, rx.wait_for(Option::is_none)).await.is_ok_and(|r| r.is_ok())
    }

    /// The user's edit of the plan (`stepwise.editPlan`), mid-run included: the model is told at its next
    /// request. Errors are the rule's text (`Error: ...`) or a stale `base` revision (`... changed ...`).
    pub fn edit_plan(&self, items: &[EditItem], base: Option<u64>) -> Result<PlanState, String> {
        let state = self.plan.user_edit(items, base)?;
        self.save_plan(&state);
        Ok(state)
    }

    /// The same, from the plan's render form.
    pub fn edit_plan_text(&self, text: &str, base: Option<u64>) -> Result<PlanState, String> {
        let items = crate::plan::parse_render(text, &self.plan.snapshot().plan)?;
        self.edit_plan(&items, base)
    }

    /// A line for the running model (`stepwise.steer`), verbatim in its next request.
    pub fn steer(&self, text: &str) -> Steered {
        match self.inbox.push(text.to_string()) {
            true => Steered::Queued,
            false => Steered::NoRun,
        }
    }

    /// A new conversation and an empty plan; standing approvals forgotten. Cancels a run first and
    /// waits (bounded) for it to let go of the conversation.
    pub async fn reset(&self) -> Result<PlanState, String> {
        self.cancel();
        let mut convo = tokio::time::timeout(Duration::from_secs(5), self.conversation.lock())
            .await
            .map_err(|_| "the running task did not stop; try again".to_string())?;
        convo.clear();
        self.approvals.clear();
        self.seen.clear();
        self.subagents.clear();
        if let Some(s) = &self.saver {
            s.save_children(&[]);
        }
        *crate::locks::lock(&self.awaiting) = None;
        if let Some(c) = self.checkpoint_store() {
            crate::locks::lock(c).clear();
        }
        let state = self.plan.replace(Default::default(), Change::Reset);
        self.save_messages(&convo);
        self.save_plan(&state);
        Ok(state)
    }

    /// The conversation, once no run holds it (waits for the run to end).
    pub async fn messages(&self) -> Vec<Message> {
        self.conversation.lock().await.clone()
    }

    /// The editor or client is gone: cancel the run, give it a bounded moment to reach its checkpoint,
    /// then write the latest state.
    pub async fn wrap_up(&self, grace: Duration) {
        if self.cancel() && !self.until_idle(grace).await {
            tracing::warn!("the run in {} did not stop in time; saving what it had", self.root.display());
        }
        self.flush();
    }

    /// Writes the newest snapshot now (blocking), for when background writers may not get to run.
    pub fn flush(&self) {
        if let Some(Err(e)) = self.saver.as_ref().map(Saver::flush) {
            tracing::warn!("could not save session state: {e}");
        }
    }

    fn save_messages(&self, messages: &[Message]) {
        if let Some(s) = &self.saver {
            s.save_messages(messages);
        }
    }

    /// The session's children (`task`): to stop one, to name the one asking, for the transcript.
    pub fn subagents(&self) -> &crate::subagents::Subagents {
        &self.subagents
    }

    fn save_children(&self) {
        if let Some(s) = &self.saver {
            s.save_children(&self.subagents.records());
        }
    }

    fn save_plan(&self, state: &PlanState) {
        if let Some(s) = &self.saver {
            s.save_plan(&state.plan, state.revision);
        }
    }
}

impl crate::sessions::Sibling for Workspace {
    /// Another session's file tool wrote `rel`: to this session's commands it is as the user's save.
    fn other_wrote(&self, rel: &Path) {
        if let Some(saves) = self.user_saves.get() {
            saves.note(rel);
        }
    }

    fn overlapped(&self, rel: &str, with: &str) {
        if let Some(c) = self.checkpoint_store() {
            crate::locks::lock(c).note_overlap(rel, with);
        }
    }
}
