//! A child's run (`task`, the seeds' s04): the same loop over a fresh conversation whose first user message
//! is its prompt, then, where it ended without text or short of its end, one more request with no tools
//! offered for its summary: a child never comes back empty.

use super::{push_prompt, round, Run};
use crate::events::{Event, EventSink};
use crate::host::Host;
use crate::llm::{Message, ModelRequest, Usage};
use crate::session::{push_user_text, FinishReason, RunOutcome};

/// What makes a run a child's: its agent's prompt and tools.
#[derive(Debug, Clone, Default)]
pub struct Child {
    /// The agent's system prompt, after stepwise's own.
    pub prompt: String,
    /// The tools it may use (`None`: all the parent's, less `task`).
    pub tools: Option<Vec<String>>,
}

/// Told to every child, after its agent's prompt: its final text is all its parent reads.
pub const CHILD_NOTE: &str = "You are a subagent: another agent gave you this task. Your final text is all it reads of your work: end with a complete summary of what you did and found (names, paths, results), never a reference to earlier output.";

/// Asked of a child that stopped short; `{how}` says how it stopped.
const SUMMARY_ASK: &str = "You stopped ({how}) before finishing with a summary. With no more tool calls, summarize for the agent that gave you this task what you did and what you found so far, completely: it reads nothing else of your work.";

/// How a child's run went, with its summary when one was asked for.
pub struct ChildOutcome {
    pub outcome: RunOutcome,
    /// `Some` when a summary was asked for: its text, or why it failed.
    pub summary: Option<Result<String, String>>,
    /// The tokens of the whole child, summary included.
    pub usage: Usage,
}

/// Runs the child `r` (whose `child` is set) on `prompt` in `messages` (empty: a fresh conversation).
/// `parent_cancelled` says whether the parent's run (not this child alone) was stopped: then no summary
/// is asked for, the parent's run is ending.
pub async fn run_child<H: Host + ?Sized, E: EventSink + ?Sized>(
    messages: &mut Vec<Message>,
    prompt: &str,
    r: &Run<'_, H, E>,
    parent_cancelled: impl Fn() -> bool,
) -> ChildOutcome {
    push_prompt(messages, prompt, &[]);
    r.events.checkpoint(messages);
    let mcp = match &r.cfg.mcp.set {
        Some(set) => tokio::select! { biased; _ = r.cancel.cancelled() => None, t = set.ready() => Some(t) },
        None => None,
    };
    // Skills are the workspace's, as for the parent: found again for the child's own run.
    let mut turn = round::Turn::new(messages, r, mcp, super::ahead::find(r.host.root()));
    let outcome = loop {
        if let Some(outcome) = turn.round(messages, r).await {
            break outcome;
        }
    };
    let mut usage = outcome.usage;
    let short = outcome.reason != FinishReason::EndTurn || outcome.final_text.trim().is_empty();
    if !short || parent_cancelled() {
        return ChildOutcome { outcome, summary: None, usage };
    }
    let how = stopped(&outcome);
    push_user_text(messages, SUMMARY_ASK.replace("{how}", &how));
    let req = ModelRequest { system: turn.system(), messages, tools: &[] };
    let mut on_text = |t: &str| r.events.emit(Event::AssistantText { text: t });
    let summary = match r.llm.complete(&req, &mut on_text).await {
        Ok(resp) => {
            usage.add(resp.usage);
            let text = resp.text();
            messages.push(Message { role: crate::llm::Role::Assistant, content: resp.content.into() });
            Ok(text)
        }
        Err(e) => Err(e.to_string()),
    };
    r.events.checkpoint(messages);
    ChildOutcome { outcome, summary: Some(summary), usage }
}

/// How a run stopped short, in a few words (the summary's question and the result's line say it).
pub fn stopped(outcome: &RunOutcome) -> String {
    match outcome.reason {
        FinishReason::EndTurn | FinishReason::PlanReady => "it ended without text".into(),
        FinishReason::MaxRounds => format!("it reached its limit of {} rounds", outcome.rounds),
        FinishReason::Cancelled => "it was cancelled".into(),
        FinishReason::LoopDetected => "it repeated a call in a loop".into(),
        FinishReason::MaxTokens => "its replies kept hitting the output limit".into(),
        FinishReason::Error => format!("it failed: {}", outcome.error.as_deref().unwrap_or("unknown error")),
    }
}
