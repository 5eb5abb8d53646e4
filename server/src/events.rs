//! The second seam: where the loop's events go (a terminal, an editor, a test).

use serde_json::Value;

use crate::llm::Usage;
use crate::plan::Plan;
use crate::session::{RunOutcome, Session};

#[derive(Debug)]
pub enum Event<'a> {
    /// A model request is about to be sent (round numbers start at 1).
    Thinking {
        round: u32,
    },
    /// A piece of assistant text, as it streams.
    AssistantText {
        text: &'a str,
    },
    ToolStarted {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolFinished {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
        output: &'a str,
        is_error: bool,
    },
    PlanChanged {
        plan: &'a Plan,
    },
    Reminder {
        text: &'a str,
    },
    /// After every answer: its tokens (`round.input_tokens` is the latest prompt's size), the run's
    /// totals, and the model's context window.
    Usage {
        round: Usage,
        run: Usage,
        context_window: u64,
    },
    /// The conversation was compacted to fit the context window (estimated tokens); `error` when the
    /// summary failed and only old tool results were shortened.
    Compacted {
        tokens_before: u64,
        tokens_after: u64,
        error: Option<&'a str>,
    },
    RunFinished {
        outcome: &'a RunOutcome,
    },
}

pub trait EventSink: Send + Sync {
    /// Called on the loop's task; implementations hand work off rather than block.
    fn emit(&self, event: Event<'_>);

    /// The conversation or plan changed and is in a consistent state worth saving.
    fn checkpoint(&self, _session: &Session) {}
}

/// Collects nothing; for callers that only want the outcome.
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: Event<'_>) {}
}
