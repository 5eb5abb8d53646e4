//! The second seam: where the loop's events go (a terminal, an editor, a test).

use serde::Serialize;
use serde_json::Value;

use crate::host::FileChange;
use crate::llm::{Message, Usage};
use crate::plan::PlanState;
use crate::session::{RunOutcome, SubagentState};

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
    /// After a round that changed files: the `<diagnostics>` block the next request carries (new errors,
    /// files not checked), with the last call of the round that changed a file.
    Diagnostics {
        text: &'a str,
        call_id: Option<&'a str>,
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
    /// A child agent (`task`) started, went on (a round, a call) or ended (`stepwise/subagent`).
    Subagent {
        tool_call_id: &'a str,
        id: &'a str,
        description: &'a str,
        agent: &'a str,
        state: SubagentState,
        rounds: u32,
        last_tool: Option<&'a str>,
        tokens: u64,
    },
    /// An event of the child `id`'s run, told as its own (its calls, its text, its plan).
    Child {
        id: &'a str,
        inner: &'a Event<'a>,
    },
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
