//! The second seam: where the loop's events go (a terminal, an editor, a test).

use serde::Serialize;
use serde_json::Value;

use crate::host::FileChange;
use crate::llm::{Message, Usage};
use crate::plan::PlanState;
use crate::session::RunOutcome;

/// What happened in a run, typed, for the adapters to translate (and serialisable as it is, for logs
/// and tests: `{"event": "toolFinished", ...}`).
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "camelCase", rename_all_fields = "camelCase")]
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
        /// The plan step in progress as the call starts.
        step: Option<&'a str>,
        /// The call will ask the user before it runs (`tools::will_ask`: not allowed for the session yet).
        asks: bool,
    },
    ToolFinished {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
        output: &'a str,
        is_error: bool,
        /// The file the call changed, if it did.
        change: Option<&'a FileChange>,
        /// The plan step in progress when the call ran.
        step: Option<&'a str>,
    },
    /// The model changed the plan (the user's edits are the workspace's to announce).
    PlanChanged {
        #[serde(serialize_with = "plan_state")]
        state: &'a PlanState,
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
    /// A checkpoint was taken before round `round` (`stepwise/checkpoint`).
    Checkpoint {
        id: &'a str,
        run_id: &'a str,
        round: u32,
        step: Option<&'a str>,
    },
    RunFinished {
        outcome: &'a RunOutcome,
    },
    /// The `<diagnostics>` block the model is told after a round that changed files (issue 36): the ids
    /// of that round's tool calls (the views show the lines under them) and the block's lines.
    Diagnostics {
        calls: &'a [String],
        lines: &'a [DiagnosticLine],
    },
}

/// One line of a `<diagnostics>` block: an error with its place, or a file that was not checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticLine {
    /// Relative to the workspace, as the model read it.
    pub path: String,
    /// 1-based; `None` for a line about the whole file (`not checked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The line as the model read it (`path:line:col: error: message (source)`).
    pub text: String,
}

pub trait EventSink: Send + Sync {
    /// Called on the loop's task; implementations hand work off rather than block.
    fn emit(&self, event: Event<'_>);

    /// The conversation is in a consistent state worth saving (the workspace saves it).
    fn checkpoint(&self, _messages: &[Message]) {}
}

fn plan_state<S: serde::Serializer>(state: &&PlanState, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut st = s.serialize_struct("PlanState", 3)?;
    st.serialize_field("plan", &state.plan)?;
    st.serialize_field("revision", &state.revision)?;
    st.serialize_field("by", &state.by)?;
    st.end()
}

/// Collects nothing; for callers that only want the outcome.
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: Event<'_>) {}
}
