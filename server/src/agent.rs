//! The loop (the seed's agent_loop): model turn, tools in order, results back, until the model stops.

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::events::{Event, EventSink};
use crate::host::Host;
use crate::llm::{Block, Llm, Message, ModelRequest, Role, Usage};
use crate::plan::PlanningStyle;
pub use crate::session::{FinishReason, RunOutcome, Session};
use crate::tools::{self, ToolContext, ToolOutput};

pub const REMINDER: &str = "<reminder>Update your todos.</reminder>";
const CANCELLED: &str = "Error: Cancelled by the user";
/// The result of every tool call in a reply that the output limit cut: its input may be cut too.
pub const CUT_CALL: &str =
    "Error: This tool call was cut off by the output limit (max_tokens) and was not run. Retry with a smaller call (for example, write a long file in several parts).";
/// Asked of the model when its text reply was cut by the output limit.
pub const CONTINUE: &str = "Your reply was cut off by the output limit. Continue exactly where it stopped.";
/// How many times a cut text reply is continued before the run ends with `max_tokens`.
const MAX_CONTINUATIONS: u32 = 2;
/// Stop reasons the loop understands (OpenAI's are normalised to these by the client).
const KNOWN_STOPS: [&str; 4] = ["end_turn", "tool_use", "stop_sequence", "max_tokens"];

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
        }
    }
}

/// One user prompt, run to the end of the model's turn (or until a guard, an error or `cancel` stops it).
#[allow(clippy::too_many_arguments)]
pub async fn run<H: Host, E: EventSink + ?Sized>(
    session: &mut Session,
    prompt: &str,
    llm: &Llm,
    host: &H,
    events: &E,
    cfg: &AgentConfig,
    cancel: &CancellationToken,
) -> RunOutcome {
    session.push_prompt(prompt);
    events.checkpoint(session);
    // Instruction files and MCP tools are read once per run: the prompt's prefix stays byte-stable.
    let system = tools::system_prompt(host.root(), cfg.planning) + &crate::instructions::load(host.root()).prompt;
    let mcp = match &cfg.mcp.set {
        Some(set) => tokio::select! { biased; _ = cancel.cancelled() => None, t = set.ready() => Some(t) },
        None => None,
    };
    let specs = tools::specs(cfg.planning, mcp.as_deref());
    let mut usage = Usage::default();
    let mut rounds_since_plan = 0u32;
    let mut last_call: Option<(String, Value)> = None;
    let mut round = 0u32;
    let mut continuations = 0u32;
    // The latest prompt's size: the provider's count once it has answered, an estimate before.
    let mut prompt_tokens = crate::context::estimate_tokens(&session.messages);
    let mut overflow_retried = false;
    // The prompt's size in the round after the last compaction: when that is still past the threshold
    // (the system prompt and tools alone can be), compacting again helps only once the history has grown.
    let mut after_compaction: Option<u64> = None;
    let mut just_compacted = false;

    let outcome = loop {
        if cancel.is_cancelled() {
            break finish(FinishReason::Cancelled, String::new(), None, round, usage);
        }
        let window = llm.context_window();
        let threshold = window.saturating_mul(cfg.compact_at_percent.min(100) as u64) / 100;
        if prompt_tokens > threshold && after_compaction.is_none_or(|floor| prompt_tokens > floor + window / 8) {
            compact_now(session, llm, events, window, false).await;
            just_compacted = true;
        }
        round += 1;
        events.emit(Event::Thinking { round });
        let req = ModelRequest { system: &system, messages: &session.messages, tools: &specs };
        let mut on_text = |t: &str| events.emit(Event::AssistantText { text: t });
        let resp = tokio::select! {
            biased;
            _ = cancel.cancelled() => break finish(FinishReason::Cancelled, String::new(), None, round, usage),
            r = llm.complete(&req, &mut on_text) => r,
        };
        let resp = match resp {
            Ok(r) => r,
            // The provider counted more than fits: compact (summary and all) and ask once more.
            Err(e) if e.is_context_overflow() && !overflow_retried => {
                overflow_retried = true;
                round -= 1;
                prompt_tokens = compact_now(session, llm, events, window, true).await;
                continue;
            }
            Err(e) if e.is_context_overflow() => {
                let why = format!(
                    "the conversation does not fit the model's context window ({window} tokens) even after compaction: {e}"
                );
                break finish(FinishReason::Error, String::new(), Some(why), round, usage);
            }
            Err(e) => break finish(FinishReason::Error, String::new(), Some(e.to_string()), round, usage),
        };
        prompt_tokens = if resp.usage.input_tokens > 0 {
            resp.usage.input_tokens
        } else {
            crate::context::estimate_tokens(&session.messages)
        };
        if std::mem::take(&mut just_compacted) {
            after_compaction = Some(prompt_tokens);
        }
        usage.add(resp.usage);
        events.emit(Event::Usage { round: resp.usage, run: usage, context_window: llm.context_window() });

        let calls: Vec<(String, String, Value)> = resp
            .content
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
                _ => None,
            })
            .collect();
        let text = resp.text();
        let stop_reason = resp.stop_reason.clone();
        if !resp.content.is_empty() {
            session.messages.push(Message { role: Role::Assistant, content: resp.content });
        }
        let cut = stop_reason == "max_tokens";
        if !cut && !KNOWN_STOPS.contains(&stop_reason.as_str()) {
            // Nothing of an answer we do not understand is run; each call still gets its one result.
            let why = format!("the model stopped for a reason stepwise does not know: '{stop_reason}'");
            answer_unrun(session, &calls, &format!("Error: Not run: {why}"));
            events.checkpoint(session);
            break finish(FinishReason::Error, text, Some(why), round, usage);
        }
        if cut && !calls.is_empty() {
            // A cut call may carry cut input (half a file): never run it; the model retries smaller.
            for (id, name, input) in &calls {
                events.emit(Event::ToolFinished { id, name, input, output: CUT_CALL, is_error: true });
            }
            answer_unrun(session, &calls, CUT_CALL);
            events.checkpoint(session);
            if round >= cfg.max_rounds {
                break finish(FinishReason::MaxRounds, text, None, round, usage);
            }
            continue;
        }
        if cut {
            if continuations >= MAX_CONTINUATIONS {
                events.checkpoint(session);
                let why = format!(
                    "the model's reply hit the output limit ({} times in a row); raise STEPWISE_MAX_TOKENS or ask for less",
                    continuations + 1
                );
                break finish(FinishReason::MaxTokens, text, Some(why), round, usage);
            }
            continuations += 1;
            session.push_prompt(CONTINUE);
            events.checkpoint(session);
            if round >= cfg.max_rounds {
                break finish(FinishReason::MaxRounds, text, None, round, usage);
            }
            continue;
        }
        if calls.is_empty() {
            // Also a `tool_use` stop with no calls: the turn ends, no empty results message is sent.
            events.checkpoint(session);
            break finish(FinishReason::EndTurn, text, None, round, usage);
        }

        let mut results = Vec::with_capacity(calls.len() + 1);
        let mut used_plan = false;
        let mut stop: Option<FinishReason> = None;
        for (id, name, input) in &calls {
            if stop.is_none() && cancel.is_cancelled() {
                stop = Some(FinishReason::Cancelled);
            }
            let out = if let Some(reason) = stop {
                // Every call still gets its one result, so the conversation stays valid.
                ToolOutput { text: skipped(reason), is_error: true }
            } else {
                let planning = cfg.planning.is_planning_tool(name);
                used_plan |= planning;
                let repeat = last_call.as_ref().is_some_and(|(n, i)| n == name && i == input);
                last_call = Some((name.clone(), input.clone()));
                if repeat && !planning && name != "read_file" {
                    stop = Some(FinishReason::LoopDetected);
                    ToolOutput {
                        text: format!("Warning: Duplicate tool call detected ({name}). Task may be stuck in a loop."),
                        is_error: true,
                    }
                } else {
                    events.emit(Event::ToolStarted { id, name, input });
                    let mut cx = ToolContext {
                        host,
                        plan: &mut session.plan,
                        style: cfg.planning,
                        bash_timeout: cfg.bash_timeout,
                        mcp: mcp.as_deref(),
                    };
                    let out = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => None,
                        o = tools::execute(name, input, &mut cx) => Some(o),
                    };
                    let out = out.unwrap_or_else(|| {
                        stop = Some(FinishReason::Cancelled);
                        ToolOutput { text: CANCELLED.into(), is_error: true }
                    });
                    events.emit(Event::ToolFinished { id, name, input, output: &out.text, is_error: out.is_error });
                    if planning && !out.is_error {
                        events.emit(Event::PlanChanged { plan: &session.plan });
                    }
                    out
                }
            };
            results.push(Block::ToolResult { tool_use_id: id.clone(), content: out.text, is_error: out.is_error });
        }

        rounds_since_plan = if used_plan { 0 } else { rounds_since_plan + 1 };
        if stop.is_none() && rounds_since_plan >= cfg.reminder_rounds && !session.plan.all_completed() {
            results.push(Block::Text { text: REMINDER.into() });
            events.emit(Event::Reminder { text: REMINDER });
        }
        session.messages.push(Message { role: Role::User, content: results });
        events.checkpoint(session);
        if let Some(reason) = stop {
            break finish(reason, text, None, round, usage);
        }
        if round >= cfg.max_rounds {
            break finish(FinishReason::MaxRounds, text, None, round, usage);
        }
    };
    events.emit(Event::RunFinished { outcome: &outcome });
    outcome
}

fn finish(reason: FinishReason, final_text: String, error: Option<String>, rounds: u32, usage: Usage) -> RunOutcome {
    RunOutcome { reason, final_text, error, rounds, usage }
}

/// Compacts the conversation now (`stepwise.compact`, chat's `/compact`): summary and all; the plan is kept.
pub async fn compact<E: EventSink + ?Sized>(session: &mut Session, llm: &Llm, events: &E) -> RunOutcome {
    let outcome = if session.messages.is_empty() {
        finish(FinishReason::EndTurn, "Nothing to compact.".into(), None, 0, Usage::default())
    } else {
        let after = compact_now(session, llm, events, llm.context_window(), true).await;
        finish(FinishReason::EndTurn, format!("Compacted to about {after} tokens."), None, 0, Usage::default())
    };
    events.emit(Event::RunFinished { outcome: &outcome });
    outcome
}

/// Compacts toward half the window, reports it, and saves the result; returns the new estimate.
async fn compact_now<E: EventSink + ?Sized>(
    session: &mut Session,
    llm: &Llm,
    events: &E,
    window: u64,
    force_summary: bool,
) -> u64 {
    let c = crate::context::compact(&mut session.messages, &session.plan, llm, window / 2, force_summary).await;
    events.emit(Event::Compacted {
        tokens_before: c.tokens_before,
        tokens_after: c.tokens_after,
        error: c.summary_error.as_deref(),
    });
    events.checkpoint(session);
    c.tokens_after
}

/// One error result per call, none of them run, so the conversation stays valid.
fn answer_unrun(session: &mut Session, calls: &[(String, String, Value)], text: &str) {
    let results = calls
        .iter()
        .map(|(id, _, _)| Block::ToolResult { tool_use_id: id.clone(), content: text.to_string(), is_error: true })
        .collect::<Vec<_>>();
    if !results.is_empty() {
        session.messages.push(Message { role: Role::User, content: results });
    }
}

fn skipped(reason: FinishReason) -> String {
    match reason {
        FinishReason::Cancelled => CANCELLED.into(),
        other => format!("Error: Not run: the run stopped ({})", other.as_str()),
    }
}
