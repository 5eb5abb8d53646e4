//! The workspace's checkpoints (issue 20): one before every round of a run, the file tools and shell
//! commands followed through `workspace::Tracked`, rewinds refused while a run goes on. Off until an
//! adapter turns them on (`enable_checkpoints`): a one-shot `stepwise run` has no use for them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::{RunTicket, Workspace};
use crate::checkpoint::{apply_on_disk, Checkpoints, Info, Limits, Meta, Prepared, Restore, RewindPlan, Rewound};
use crate::events::{Event, EventSink};
use crate::llm::Message;
use crate::locks;
use crate::session::Session;

const REFUSED: &str = "a run is in progress: cancel it or let it finish before rewinding";

/// Where the checkpoints stand with a store another process held when they were turned on (a window
/// reload's old server, still ending): the workspace waits for it and takes it over (`checkpoint/handover.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Handover {
    /// Nothing to wait for.
    #[default]
    None,
    /// Another process holds the store; a temporary one stands in.
    Waiting,
    /// The store was taken over: what it holds (the changes waiting for review) is there now.
    Done,
    /// It came free after something was recorded in the temporary store, which stays.
    Declined,
}

impl Workspace {
    /// Turns checkpoints on, kept in `dir` (they survive a restart) or, without one, for this process.
    /// When another process holds `dir`, a temporary store stands in until that process lets go.
    pub fn enable_checkpoints(self: &Arc<Self>, dir: Option<&Path>) {
        self.enable_checkpoints_with(dir, true);
    }

    /// The same; with `copy_now` false the folder's copy waits for the first run (`start_copy`).
    pub(super) fn enable_checkpoints_with(self: &Arc<Self>, dir: Option<&Path>, copy_now: bool) {
        let limits = Limits::from_env(&crate::config::Env::for_workspace(&self.root)).unwrap_or_else(|e| {
            tracing::warn!("{e}; using the default");
            Limits::default()
        });
        match Checkpoints::open(dir, &self.root, limits) {
            Ok(mut c) => {
                // The first shell command then finds the workspace's copy made.
                if copy_now {
                    c.copy_in_background();
                }
                let held = c.held_elsewhere().map(Path::to_path_buf);
                let _ = self.user_saves.set(c.user_saves());
                let _ = self.checkpoints.set(Mutex::new(c));
                if let Some(held) = held {
                    self.take_over_when_free(held, limits);
                }
            }
            Err(e) => tracing::warn!("checkpoints are off for {}: {e}", self.root.display()),
        }
    }

    /// Waits on a thread of its own for the store in `dir` to come free, then puts it in the temporary
    /// one's place, unless something was recorded there meanwhile.
    fn take_over_when_free(self: &Arc<Self>, dir: PathBuf, limits: Limits) {
        self.handover.send_replace(Handover::Waiting);
        let (ws, root) = (Arc::downgrade(self), self.root.clone());
        let spawned = std::thread::Builder::new().name("stepwise-checkpoints-handover".into()).spawn(move || {
            let opened = Checkpoints::open_when_free(&dir, &root, limits);
            // The workspace may be gone meanwhile (its folder closed): the store is let go at once.
            let Some(ws) = ws.upgrade() else { return };
            match opened {
                Ok(c) => ws.take_over(c),
                Err(e) => {
                    tracing::warn!("checkpoints stay for this process only: {} ({e})", dir.display());
                    ws.handover.send_replace(Handover::Declined);
                }
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("checkpoints stay for this process only: {e}");
            self.handover.send_replace(Handover::Declined);
        }
    }

    fn take_over(&self, mut store: Checkpoints) {
        let Some(c) = self.checkpoints.get() else { return };
        let replaced = {
            let mut current = locks::lock(c);
            if !current.untouched() {
                tracing::warn!(
                    "{} came free, but this session recorded checkpoints meanwhile: they stay for this process only",
                    store.dir().display()
                );
                drop(current);
                self.handover.send_replace(Handover::Declined);
                return;
            }
            store.replace(&current);
            store.copy_in_background();
            std::mem::replace(&mut *current, store)
        };
        tracing::info!("checkpoints: took over {}", locks::lock(c).dir().display());
        // The temporary store goes (its copy's thread ends, its directory is removed) without the lock.
        drop(replaced);
        self.handover.send_replace(Handover::Done);
    }

    /// Where the checkpoints stand with a store another process held: `Waiting` turns to `Done` once its
    /// checkpoints are this workspace's (the receiver ends with the workspace).
    pub fn checkpoints_handover(&self) -> watch::Receiver<Handover> {
        self.handover.subscribe()
    }

    /// The user saved `path` (absolute) in the editor: a command running now did not make that change.
    /// Never waits on the store (a scan may hold it).
    pub fn note_user_save(&self, path: &Path) {
        if let (Some(saves), Ok(rel)) = (self.user_saves.get(), path.strip_prefix(&self.root)) {
            saves.note(rel);
        }
    }

    /// Starts the folder's copy the checkpoints need, if it has not begun (a session opened idle).
    pub(super) fn start_copy(&self) {
        if let Some(c) = self.checkpoints.get() {
            locks::lock(c).copy_in_background();
        }
    }

    pub(super) fn checkpoint_store(&self) -> Option<&Mutex<Checkpoints>> {
        self.checkpoints.get()
    }

    /// The checkpoints, oldest first (none while they are off).
    pub fn checkpoints(&self) -> Vec<Info> {
        self.checkpoints.get().map(|c| locks::lock(c).list()).unwrap_or_default()
    }

    fn session_now(&self, messages: &[Message]) -> Session {
        let state = self.plan.snapshot();
        Session { messages: messages.to_vec(), plan: state.plan, revision: state.revision, children: Vec::new() }
    }

    /// Before a run's first round: the conversation as it is before the run's prompt.
    pub(super) fn checkpoint_run_start<E: EventSink + ?Sized>(
        &self,
        run_id: &str,
        prompt: &str,
        messages: &[Message],
        events: &E,
    ) {
        let Some(c) = self.checkpoints.get() else { return };
        let session = self.session_now(messages);
        let step = session.plan.in_progress().map(|i| i.text.clone());
        let meta = Meta { run_id: run_id.into(), round: 1, prompt: prompt.into(), step: step.clone() };
        let taken = locks::lock(c).take(meta, &session);
        match taken {
            Ok(id) => events.emit(Event::Checkpoint { id: &id, run_id, round: 1, step: step.as_deref() }),
            Err(e) => tracing::warn!("no checkpoint before round 1: {e}"),
        }
    }

    /// The run slot for a rewind, so no run starts between planning it and finishing it (refused while
    /// a run goes on).
    pub fn rewind_slot(self: &Arc<Self>) -> Result<RunTicket, String> {
        self.begin().map_err(|_| REFUSED.to_string())
    }

    /// What rewinding to checkpoint `id` would put back, for the holder of `slot`. `open` gives an open
    /// document's text (the sidecar's buffers), `None` to read the disk.
    pub fn plan_rewind(
        &self,
        slot: &RunTicket,
        id: &str,
        restore: Restore,
        open: impl Fn(&Path) -> Option<String>,
    ) -> Result<RewindPlan, String> {
        let c = self.checkpoints.get().ok_or("checkpoints are off in this workspace")?;
        self.holds(slot)?;
        locks::lock(c).rewind(id, restore, open)
    }

    /// A whole rewind on disk (the command line): plan, put back, record.
    pub fn rewind_on_disk(self: &Arc<Self>, id: &str, restore: Restore) -> Result<Rewound, String> {
        let slot = self.rewind_slot()?;
        self.rewind_on_disk_holding(&slot, id, restore)
    }

    /// The same, by a command that holds the run slot itself (an ACP prompt).
    pub fn rewind_on_disk_holding(&self, slot: &RunTicket, id: &str, restore: Restore) -> Result<Rewound, String> {
        let plan = self.plan_rewind(slot, id, restore, |_| None)?;
        let applied = apply_on_disk(&self.root, &plan, |_| false);
        self.finish_rewind(slot, &plan, &applied.done)?;
        Ok(Rewound { plan, applied })
    }

    /// Refused unless `slot` is this workspace's run slot (a ticket of another workspace, or one whose
    /// run ended).
    pub(super) fn holds(&self, slot: &RunTicket) -> Result<(), String> {
        match self.running() {
            Some(run) if run == slot.id => Ok(()),
            _ => Err(REFUSED.into()),
        }
    }

    /// Records a rewind whose files in `done` were put back, and puts back the conversation and plan the
    /// plan carries.
    pub fn finish_rewind(&self, slot: &RunTicket, plan: &RewindPlan, done: &[PathBuf]) -> Result<(), String> {
        let c = self.checkpoints.get().ok_or("checkpoints are off in this workspace")?;
        let Ok(mut convo) = self.conversation.try_lock() else { return Err(REFUSED.into()) };
        self.holds(slot)?;
        locks::lock(c).finish(plan, done);
        if let Some(s) = &plan.session {
            convo.clone_from(&s.messages);
            let state = self.plan.replace(s.plan.clone(), crate::plan::Change::Rewind);
            self.save_messages(&convo);
            self.save_plan(&state);
        }
        Ok(())
    }
}

/// The run's events, taking a checkpoint before every round after the first: the conversation is stored
/// when the loop reports it consistent (after a round's results) and becomes a checkpoint when the next
/// round starts.
pub(super) struct Rounds<'a, E: EventSink + ?Sized> {
    pub ws: &'a Workspace,
    pub inner: &'a E,
    pub run_id: &'a str,
    pub prompt: &'a str,
    pub pending: Mutex<Option<Prepared>>,
}

impl<E: EventSink + ?Sized> EventSink for Rounds<'_, E> {
    fn emit(&self, event: Event<'_>) {
        if let (Event::Thinking { round }, Some(c)) = (&event, self.ws.checkpoints.get()) {
            let pending = locks::lock(&self.pending).take();
            if let Some(prepared) = pending.filter(|_| *round > 1) {
                let step = self.ws.plan.read(|s| s.plan.in_progress().map(|i| i.text.clone()));
                let meta =
                    Meta { run_id: self.run_id.into(), round: *round, prompt: self.prompt.into(), step: step.clone() };
                let taken = locks::lock(c).take_prepared(meta, prepared);
                match taken {
                    Ok(id) => self.inner.emit(Event::Checkpoint {
                        id: &id,
                        run_id: self.run_id,
                        round: *round,
                        step: step.as_deref(),
                    }),
                    Err(e) => tracing::warn!("no checkpoint before round {round}: {e}"),
                }
            }
        }
        self.inner.emit(event);
    }

    fn checkpoint(&self, messages: &[Message]) {
        if let Some(c) = self.ws.checkpoints.get() {
            // The messages as they are, not copied into a session (the plan is small).
            let state = self.ws.plan.snapshot();
            let prepared = locks::lock(c).prepare_parts(messages, &state.plan, state.revision);
            match prepared {
                Ok(p) => *locks::lock(&self.pending) = Some(p),
                Err(e) => tracing::warn!("checkpoints: {e}"),
            }
        }
        self.inner.checkpoint(messages);
    }
}
