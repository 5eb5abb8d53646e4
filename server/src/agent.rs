//! The loop (the seed's agent_loop): model turn, tools in order, results back, until the model stops.
//!
//! One run is a sequence of rounds; each round goes through named phases over a small state (`Turn`):
//! compact if needed, tell the model what the user did meanwhile, ask the model, read its answer, run
//! its tools, close the round.

mod ahead;
mod answer;
mod child;
mod round;
mod tasks;
pub use ahead::Ahead;

pub use child::{run_child, stopped, Child, ChildOutcome, CHILD_NOTE};

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::events::{Event, EventSink};
use crate::host::{Approvals, Host};
use crate::llm::{Block, Image, Llm, Message, Role, Usage};
use crate::plan::{Mode, PlanBoard, PlanningStyle};
pub use crate::session::{push_user_text, FinishReason, RunOutcome, Session};
use crate::steering::Inbox;

pub const REMINDER: &str = "<reminder>Update your todos.</reminder>";
/// The result of every tool call in a reply that the output limit cut: its input may be cut too.
pub const CUT_CALL: &str =
    "Error: This tool call was cut off by the output limit (max_tokens) and was not run. Retry with a smaller call (for example, write a long file in several parts).";
const CANCELLED: &str = "Error: Cancelled by the user";
/// Asked of the model when its text reply was cut by the output limit.
pub const CONTINUE: &str = "Your reply was cut off by the output limit. Continue exactly where it stopped.";

#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Rounds without a planning call before the reminder is added.
    pub reminder_rounds: u32,
    pub max_rounds: u32,
    pub planning: PlanningStyle,
    pub bash_timeout: Duration,
    /// Compact the conversation when the prompt passes this share of the context window (percent).
    pub compact_at_percent: u32,
    /// The session's MCP servers (their tools are offered from a run's first request) and time limits.
    pub mcp: crate::mcp::McpConfig,
    /// The `sandbox` and `sandboxNetwork` settings (off unless an adapter read them from its configuration).
    pub sandbox: crate::sandbox::SandboxSettings,
    /// Plan first (`planFirst`, `STEPWISE_PLAN_FIRST`, or one run's choice): only tools that change
    /// nothing are offered, and the run ends `plan_ready` when the model ends its turn.
    pub mode: Mode,
    /// Code intelligence: the `diagnostics` setting and the language servers stepwise starts (`intel/`).
    pub intel: crate::intel::Setup,
    /// The workspace's instruction files, skills and agents, read ahead while the run was prepared.
    pub ahead: Ahead,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            reminder_rounds: 3,
            max_rounds: 50,
            planning: PlanningStyle::Todo,
            bash_timeout: Duration::from_secs(120),
            compact_at_percent: 85,
            mcp: crate::mcp::McpConfig::default(),
            sandbox: crate::sandbox::SandboxSettings::OFF,
            mode: Mode::Default,
            intel: crate::intel::Setup::default(),
            ahead: Ahead::default(),
        }
    }
}

/// What a run shares with the user while it goes: the plan (the user may edit it), the lines the user
/// steers with, and what the user allowed for the session. The workspace owns them.
#[derive(Clone, Copy)]
pub struct Shared<'a> {
    pub plan: &'a PlanBoard,
    pub inbox: &'a Inbox,
    pub approvals: &'a Approvals,
    pub sandbox: &'a crate::sandbox::Sandbox,
    pub background: &'a crate::background::Background,
    /// The session's children (`task`): a child's run shares its parent's register.
    pub subagents: &'a crate::subagents::Subagents,
}

/// Everything one run works with besides the conversation.
pub struct Run<'a, H: Host + ?Sized, E: EventSink + ?Sized> {
    pub llm: &'a Llm,
    pub host: &'a H,
    pub events: &'a E,
    pub cfg: &'a AgentConfig,
    pub cancel: &'a CancellationToken,
    pub shared: Shared<'a>,
    /// The session's code intelligence (`intel/`): its tools, and the `<diagnostics>` block after a round
    /// that changed files. The loop knows nothing of where it comes from.
    pub intel: Option<&'a crate::intel::Session>,
    /// Set for a child's run (`task`): its agent's prompt and tools; it is offered no `task` itself.
    pub child: Option<&'a Child>,
}

/// One user prompt (with the images it came with), run to the end of the model's turn (or until a
/// guard, an error or `cancel` stops it).
pub async fn run<H: Host + ?Sized, E: EventSink + ?Sized>(
    messages: &mut Vec<Message>,
    prompt: &str,
    images: &[Image],
    r: &Run<'_, H, E>,
) -> RunOutcome {
    r.shared.inbox.open();
    // Read once per run: the system prompt stays byte-stable within it, and what changed since the last
    // run is seen now.
    let found = r.cfg.ahead.take(r.host.root()).await;
    // What the user did while no run went on (a plan edit) comes before the prompt it goes with.
    round::tell_user_news(messages, r);
    push_prompt(messages, prompt, images);
    // `/<name> [text]` naming a skill: the skill comes with the prompt, for every adapter alike.
    if let Some((skill, block)) = found.skills.expand(prompt) {
        let text = block.unwrap_or_else(|e| format!("Error: the skill {} could not be loaded: {e}", skill.name));
        push_user_text(messages, text);
    }
    // Tasks that ended while no run went on: told with the prompt.
    if let Some(block) = r.shared.background.take_results() {
        push_user_text(messages, block);
    }
    r.events.checkpoint(messages);
    // The MCP servers are waited for once per run: their tools are in its first request.
    let mcp = match &r.cfg.mcp.set {
        Some(set) => tokio::select! { biased; _ = r.cancel.cancelled() => None, t = set.ready() => Some(t) },
        None => None,
    };
    let mut turn = round::Turn::new(messages, r, mcp, found);
    let mut outcome = loop {
        if let Some(outcome) = turn.round(messages, r).await {
            break outcome;
        }
    };
    if outcome.reason == FinishReason::EndTurn && r.cfg.mode == Mode::Plan {
        // The plan waits for the user: approve, comment or edit.
        outcome.reason = FinishReason::PlanReady;
    }
    if !matches!(outcome.reason, FinishReason::EndTurn | FinishReason::PlanReady) {
        // Lines steered into a run that stopped short go with it; they are not sent later unasked.
        r.shared.inbox.close();
    }
    r.events.emit(Event::RunFinished { outcome: &outcome });
    outcome
}

/// Adds the user's prompt to the conversation, its images after its text (a prompt of images alone has
/// no text block: the Messages API refuses an empty one).
pub fn push_prompt(messages: &mut Vec<Message>, prompt: &str, images: &[Image]) {
    if !prompt.is_empty() || images.is_empty() {
        push_user_text(messages, prompt.to_string());
    }
    let blocks = images.iter().map(|i| Block::Image { source: i.clone() });
    match messages.last_mut() {
        Some(m) if m.role == Role::User => m.content.extend(blocks),
        _ => messages.push(Message { role: Role::User, content: blocks.collect::<Vec<_>>().into() }),
    }
}

pub(crate) fn finish(
    reason: FinishReason,
    final_text: String,
    error: Option<String>,
    rounds: u32,
    usage: Usage,
) -> RunOutcome {
    RunOutcome { reason, final_text, error, rounds, usage }
}

/// Compacts the conversation now (`stepwise.compact`, chat's `/compact`): summary and all; the plan is kept.
pub async fn compact<E: EventSink + ?Sized>(
    messages: &mut Vec<Message>,
    plan: &PlanBoard,
    llm: &Llm,
    events: &E,
) -> RunOutcome {
    let outcome = if messages.is_empty() {
        finish(FinishReason::EndTurn, "Nothing to compact.".into(), None, 0, Usage::default())
    } else {
        let after = compact_now(messages, plan, llm, events, llm.context_window(), true).await;
        finish(FinishReason::EndTurn, format!("Compacted to about {after} tokens."), None, 0, Usage::default())
    };
    events.emit(Event::RunFinished { outcome: &outcome });
    outcome
}

/// Compacts toward half the window, reports it, and saves the result; returns the new estimate.
pub(crate) async fn compact_now<E: EventSink + ?Sized>(
    messages: &mut Vec<Message>,
    plan: &PlanBoard,
    llm: &Llm,
    events: &E,
    window: u64,
    force_summary: bool,
) -> u64 {
    let plan = plan.snapshot().plan;
    let c = crate::context::compact(messages, &plan, llm, window / 2, force_summary).await;
    events.emit(Event::Compacted {
        tokens_before: c.tokens_before,
        tokens_after: c.tokens_after,
        error: c.summary_error.as_deref(),
    });
    events.checkpoint(messages);
    c.tokens_after
}
