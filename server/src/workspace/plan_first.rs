//! Plan first: a run in plan mode ends `plan_ready` and its plan waits for the user, who comments on it
//! (one more planning round) or approves it (the run that carries it out, optionally from a fresh
//! context: the task and the approved plan, nothing else).

use std::sync::Arc;

use super::{RunTicket, Workspace};
use crate::locks;
use crate::plan::first::{approval_block, comments_block, fresh_start};
use crate::plan::{Mode, PlanComment};
use crate::session::FinishReason;

/// What a run answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// A prompt of the user's, in the mode the settings (or the adapter) chose.
    Prompt,
    /// Comments on the plan waiting for approval: still planning.
    Comments,
    /// The plan approved: acting.
    Approved { clear_context: bool },
}

impl Start {
    pub(super) fn mode(self, configured: Mode) -> Mode {
        match self {
            Start::Prompt => configured,
            Start::Comments => Mode::Plan,
            Start::Approved { .. } => Mode::Default,
        }
    }
}

impl Workspace {
    /// The task whose plan waits for the user's approval, if one does.
    pub fn awaiting_approval(&self) -> Option<String> {
        locks::lock(&self.awaiting).clone()
    }

    /// Takes the run slot for one planning round on the user's comments; the prompt that carries them
    /// (one block). Nothing waits for approval, or a comment names no item: `Err`, nothing taken.
    pub fn begin_comments(self: &Arc<Self>, comments: &[PlanComment]) -> Result<(RunTicket, String), String> {
        let prompt = self.comments_prompt(comments)?;
        let mut ticket = self.begin()?;
        ticket.start = Start::Comments;
        Ok((ticket, prompt))
    }

    /// The same on a slot already held (an ACP prompt in plan mode while a plan waits).
    pub fn comment_on(&self, ticket: &mut RunTicket, comments: &[PlanComment]) -> Result<String, String> {
        let prompt = self.comments_prompt(comments)?;
        ticket.start = Start::Comments;
        Ok(prompt)
    }

    fn comments_prompt(&self, comments: &[PlanComment]) -> Result<String, String> {
        if self.awaiting_approval().is_none() {
            return Err(no_plan_waits());
        }
        comments_block(&self.plan.snapshot().plan, comments)
    }

    /// Takes the run slot for the run that carries the approved plan out (its first step in progress);
    /// its prompt. A stale `base` revision, an empty plan or nothing waiting: `Err`, nothing changes.
    pub fn begin_approved(
        self: &Arc<Self>,
        base: Option<u64>,
        clear_context: bool,
    ) -> Result<(RunTicket, String), String> {
        if self.awaiting_approval().is_none() {
            return Err(no_plan_waits());
        }
        let mut ticket = self.begin()?;
        // With the slot held no run can change the plan between the check and the approval.
        let prompt = self.approve_on(&mut ticket, base, clear_context)?;
        Ok((ticket, prompt))
    }

    /// The same on a slot already held (the ACP prompt that planned, answered by a permission).
    pub fn approve_on(&self, ticket: &mut RunTicket, base: Option<u64>, clear_context: bool) -> Result<String, String> {
        let Some(task) = self.awaiting_approval() else { return Err(no_plan_waits()) };
        let state = self.plan.approve(base)?;
        self.save_plan(&state);
        *locks::lock(&self.awaiting) = None;
        ticket.start = Start::Approved { clear_context };
        Ok(match clear_context {
            true => fresh_start(&task, &state.plan),
            false => approval_block(&state.plan),
        })
    }

    /// After a run: a plan that is ready waits for approval; a run that acted leaves none waiting.
    pub(super) fn settle_plan_gate(&self, ticket: &RunTicket, prompt: &str, mode: Mode, reason: FinishReason) {
        let mut awaiting = locks::lock(&self.awaiting);
        match (ticket.start, mode, reason) {
            (Start::Prompt, Mode::Plan, FinishReason::PlanReady) => *awaiting = Some(prompt.to_string()),
            // A planning round on comments that stopped short leaves the plan waiting as it was.
            (Start::Comments, _, _) => {}
            _ => *awaiting = None,
        }
    }
}

fn no_plan_waits() -> String {
    "no plan waits for approval: start a run in plan mode first".into()
}
