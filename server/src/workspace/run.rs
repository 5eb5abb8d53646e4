//! Runs: one at a time per workspace, each holding a ticket (the run slot, freed when the ticket goes,
//! even by a panic), run to the end with the adapter's host and events, saved as they go.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::checkpoints::Rounds;
use super::plan_first::Start;
use super::saving::Saving;
use super::tracked::Tracked;
use super::{Running, Workspace};
use crate::agent::{self, AgentConfig, Run, Shared};
use crate::events::EventSink;
use crate::host::DynHost;
use crate::llm::Llm;
use crate::session::{panic_message, RunOutcome};

/// The run slot, held for one run; dropping it frees the slot.
pub struct RunTicket {
    ws: Arc<Workspace>,
    pub id: String,
    pub cancel: CancellationToken,
    /// What the run answers (plan first: comments on a plan, its approval).
    pub(super) start: Start,
    /// The images the prompt comes with (checked by `images`), set by the adapter before it runs.
    pub images: Vec<crate::llm::Image>,
}

impl Drop for RunTicket {
    fn drop(&mut self) {
        self.ws.run.send_if_modified(|slot| {
            let mine = slot.as_ref().is_some_and(|r| r.id == self.id);
            if mine {
                *slot = None;
            }
            mine
        });
    }
}

/// A new run's id: unique in this process, and across restarts.
fn next_run_id() -> String {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let n = RUNS.fetch_add(1, Ordering::Relaxed) + 1;
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    format!("run-{millis:x}-{n}")
}

/// Runs `fut` on a task of its own; a panic in it becomes `Err` with its message (the run's ticket,
/// moved into `fut`, is dropped on the way and frees the workspace).
pub async fn guarded<F>(fut: F) -> Result<F::Output, String>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(fut).await.map_err(|e| match e.try_into_panic() {
        Ok(payload) => format!("internal error: the run panicked: {}", panic_message(&*payload)),
        Err(_) => "internal error: the run was aborted".to_string(),
    })
}

impl Workspace {
    /// Takes the run slot; `Err` (saying so) when a run goes on.
    pub fn begin(self: &Arc<Self>) -> Result<RunTicket, String> {
        let ticket = RunTicket {
            ws: self.clone(),
            id: next_run_id(),
            cancel: CancellationToken::new(),
            start: Start::Prompt,
            images: Vec::new(),
        };
        let taken = self.run.send_if_modified(|slot| {
            if slot.is_some() {
                return false;
            }
            *slot = Some(Running { id: ticket.id.clone(), cancel: ticket.cancel.clone() });
            true
        });
        // A ticket that did not get the slot frees nothing when dropped: its id is its own.
        match taken {
            true => Ok(ticket),
            false => Err(format!("a run is already in progress in {}", self.root.display())),
        }
    }

    /// The run slot, kept, for a run that follows at once (plan first: the approved run after the ACP
    /// prompt that planned): a new id and cancellation; the old ticket frees nothing when dropped.
    pub fn renew(self: &Arc<Self>, old: RunTicket) -> RunTicket {
        let ticket = RunTicket {
            ws: self.clone(),
            id: next_run_id(),
            cancel: CancellationToken::new(),
            start: old.start,
            images: Vec::new(),
        };
        self.run.send_modify(|slot| *slot = Some(Running { id: ticket.id.clone(), cancel: ticket.cancel.clone() }));
        ticket
    }

    fn shared(&self) -> Shared<'_> {
        Shared {
            plan: &self.plan,
            inbox: &self.inbox,
            approvals: &self.approvals,
            sandbox: &self.sandbox,
            background: &self.background,
            subagents: &self.subagents,
        }
    }

    /// Runs a prompt to the end of the model's turn with the adapter's host and events. Both behind a
    /// `dyn`: the run's code (the agent loop, the tools) is built once, not once per adapter (issue 39).
    pub async fn prompt(
        &self,
        ticket: &RunTicket,
        prompt: &str,
        llm: &Llm,
        host: &dyn DynHost,
        events: &dyn EventSink,
        cfg: &AgentConfig,
    ) -> RunOutcome {
        // Debug builds only: lets the tests prove that a panicking run is cleaned up (`guarded`). Not
        // `cfg(test)`: lsp_honesty and acp_errors drive the debug `stepwise` binary, built without it. The
        // release binary, the one that ships, has no such prompt.
        #[cfg(debug_assertions)]
        if prompt == "__stepwise_test_panic__" {
            panic!("test panic requested");
        }
        let mode = ticket.start.mode(cfg.mode);
        let planned;
        let cfg = match mode == cfg.mode {
            true => cfg,
            false => {
                planned = AgentConfig { mode, ..cfg.clone() };
                &planned
            }
        };
        let mut convo = self.conversation.lock().await;
        self.start_copy();
        self.checkpoint_run_start(&ticket.id, prompt, &convo, events);
        if ticket.start == (Start::Approved { clear_context: true }) {
            // After the checkpoint, so a rewind to it brings the planning conversation back.
            convo.clear();
        }
        let saving = Saving { ws: self, inner: events };
        let events = Rounds { ws: self, inner: &saving, run_id: &ticket.id, prompt, pending: Default::default() };
        let intel = self.intel_session(host, cfg);
        let hooks = crate::sessions::Hooks { seen: &self.seen, siblings: Some(&self.siblings) };
        let host = Tracked::new(host, self.checkpoint_store()).with_intel(intel.as_deref()).with_session(hooks);
        let run = Run {
            llm,
            host: &host,
            events: &events,
            cfg,
            cancel: &ticket.cancel,
            shared: self.shared(),
            intel: intel.as_deref(),
            child: None,
        };
        let outcome = agent::run(&mut convo, prompt, &ticket.images, &run).await;
        self.save_messages(&convo);
        self.settle_plan_gate(ticket, prompt, mode, outcome.reason);
        outcome
    }

    /// Takes the slot and runs `prompt` (for callers with nothing to do between the two: the demo, the
    /// benchmarks, the engine's own tests).
    pub async fn run_prompt(
        self: &Arc<Self>,
        prompt: &str,
        llm: &Llm,
        host: &dyn DynHost,
        events: &dyn EventSink,
        cfg: &AgentConfig,
    ) -> Result<RunOutcome, String> {
        let ticket = self.begin()?;
        Ok(self.prompt(&ticket, prompt, llm, host, events, cfg).await)
    }

    /// Compacts the conversation now, as a run of its own; the plan is kept.
    pub async fn compact<E: EventSink + ?Sized>(&self, _ticket: &RunTicket, llm: &Llm, events: &E) -> RunOutcome {
        let mut convo = self.conversation.lock().await;
        let events = Saving { ws: self, inner: events };
        let outcome = agent::compact(&mut convo, &self.plan, llm, &events).await;
        self.save_messages(&convo);
        outcome
    }
}
