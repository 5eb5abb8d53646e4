//! The `task` calls of one response (`subagents/` keeps the session's register of children), run at the same time (at most `AT_ONCE` children at once, the rest
//! waiting for a slot), each a child of the parent's run: a fresh conversation, its own plan, the parent's
//! host (its changes are recorded under the parent's round), sandbox, background tasks and code
//! intelligence, and the approvals the user gave the session (what the child is allowed stays its own).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use serde_json::Value;

use super::{run_child, stopped, AgentConfig, Child, ChildOutcome, Run, Shared};
use crate::events::{Event, EventSink};
use crate::host::Host;
use crate::llm::Usage;
use crate::plan::{Mode, PlanBoard};
use crate::session::FinishReason;
use crate::subagents::agents::{self, Agent};
use crate::subagents::{ChildEvents, State, Who, ROUND_LIMIT};
use crate::tools::ToolOutput;

/// One `task` call's arguments.
struct Task<'a> {
    prompt: &'a str,
    description: String,
    agent: &'a str,
}

fn parse(input: &Value) -> Result<Task<'_>, String> {
    let text = |key: &str| match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(format!("task: argument '{key}' must be a string")),
    };
    let prompt = text("prompt")?.filter(|p| !p.trim().is_empty()).ok_or("task: missing required argument 'prompt'")?;
    let description = match text("description")? {
        Some(d) if !d.trim().is_empty() => d.trim().to_string(),
        // The prompt's first line, short: what the views show for the child.
        _ => crate::host::output::truncate_chars(prompt.lines().next().unwrap_or(prompt).trim(), 60).to_string(),
    };
    Ok(Task { prompt, description, agent: text("agent")?.unwrap_or("general") })
}

/// What `run_tasks` gives: each call's result by its id, and the tokens the children spent.
pub type Results = (HashMap<String, ToolOutput>, Usage);

/// Runs the `task` calls `calls` (id, input) of one response; each call's start and end are told as any
/// call's are. A boxed future, not an `async fn`: a child's run is the agent loop again, which holds this
/// future; a type of its own would have to hold itself.
pub fn run_tasks<'a, 'b: 'a, H: Host + ?Sized, E: EventSink + ?Sized>(
    calls: &'a [(&'a str, &'a Value)],
    found: &'a agents::Agents,
    r: &'a Run<'b, H, E>,
    step: Option<&'a str>,
) -> Pin<Box<dyn Future<Output = Results> + Send + 'a>> {
    Box::pin(async move {
        for (id, input) in calls {
            r.events.emit(Event::ToolStarted { id, name: "task", input, step, asks: false });
        }
        let runs = calls.iter().map(|(id, input)| async move {
            let (out, usage) = match parse(input) {
                Ok(task) => one(id, &task, found, r).await,
                Err(e) => (ToolOutput::error(e), Usage::default()),
            };
            r.events.emit(Event::ToolFinished {
                id,
                name: "task",
                input,
                output: &out.text,
                is_error: out.is_error,
                change: None,
                step,
            });
            (id.to_string(), out, usage)
        });
        let mut total = Usage::default();
        let mut outs = HashMap::new();
        for (id, out, usage) in futures::future::join_all(runs).await {
            total.add(usage);
            outs.insert(id, out);
        }
        (outs, total)
    })
}

/// One child, from its slot to its result.
async fn one<H: Host + ?Sized, E: EventSink + ?Sized>(
    call_id: &str,
    task: &Task<'_>,
    found: &agents::Agents,
    r: &Run<'_, H, E>,
) -> (ToolOutput, Usage) {
    let Some(agent) = found.get(task.agent) else {
        let e = format!("task: unknown agent '{}': the agents are {}", task.agent, found.names());
        return (ToolOutput::error(e), Usage::default());
    };
    if r.cfg.mode == Mode::Plan && !agent.read_only {
        let e = format!(
            "task: planning changes nothing: only a read-only agent (explore) may run now, not '{}'",
            agent.name
        );
        return (ToolOutput::error(e), Usage::default());
    }
    let register = r.shared.subagents;
    let _slot = tokio::select! {
        biased;
        _ = r.cancel.cancelled() => return (ToolOutput::error("Cancelled by the user before the subagent started"), Usage::default()),
        slot = register.slots.clone().acquire_owned() => slot,
    };
    let (id, cancel) = register.start(&task.description, r.cancel);
    let events = ChildEvents {
        parent: r.events,
        register,
        who: Who { id: &id, call_id, description: &task.description, agent: &agent.name },
        status: Mutex::default(),
    };
    events.tell(State::Running);
    let done = run_one(task, agent, &events, &cancel, r).await;
    let (state, out) = result(&id, &done, r.cancel.is_cancelled());
    {
        let mut s = crate::locks::lock(&events.status);
        s.tokens = done.usage.input_tokens + done.usage.output_tokens;
        s.rounds = done.outcome.rounds;
    }
    register.ended(events.record(state));
    events.tell(state);
    (out, done.usage)
}

async fn run_one<H: Host + ?Sized, E: EventSink + ?Sized>(
    task: &Task<'_>,
    agent: &Agent,
    events: &ChildEvents<'_, E>,
    cancel: &tokio_util::sync::CancellationToken,
    r: &Run<'_, H, E>,
) -> ChildOutcome {
    let plan = PlanBoard::new(Default::default(), 0);
    let inbox = crate::steering::Inbox::default();
    let approvals = r.shared.approvals.inherit();
    let mode = if agent.read_only { Mode::Plan } else { r.cfg.mode };
    let cfg = AgentConfig { max_rounds: ROUND_LIMIT, mode, ..r.cfg.clone() };
    let setup = Child { prompt: agent.prompt.clone(), tools: agent.tools.clone() };
    let id = events.who.id.to_string();
    // Behind a `dyn`: a child's run is the loop over the same types whatever its parent's sink is, so the
    // loop (which may call `task` again, in a parent) is built once, not once per depth without end.
    let events: &dyn EventSink = events;
    let run = Run {
        llm: r.llm,
        host: r.host,
        events,
        cfg: &cfg,
        cancel,
        shared: Shared { plan: &plan, inbox: &inbox, approvals: &approvals, ..r.shared },
        intel: r.intel,
        child: Some(&setup),
    };
    let mut messages = Vec::new();
    let run = run_child(&mut messages, task.prompt, &run, || r.cancel.is_cancelled());
    crate::sessions::seen::as_agent(id, run).await
}

/// The call's result: the child's text, then the contract's line saying how it ended.
fn result(id: &str, done: &ChildOutcome, parent_cancelled: bool) -> (State, ToolOutput) {
    let o = &done.outcome;
    let state = match o.reason {
        FinishReason::Cancelled => State::Cancelled,
        FinishReason::Error => State::Failed,
        _ => State::Done,
    };
    let (text, how) = match &done.summary {
        None if parent_cancelled && o.reason != FinishReason::EndTurn => {
            (o.final_text.clone(), "cancelled with the agent that started it".to_string())
        }
        None => (o.final_text.clone(), "done".to_string()),
        Some(Ok(summary)) if !summary.trim().is_empty() => {
            (summary.clone(), format!("{}; asked once more, it summarized", stopped(o)))
        }
        Some(Ok(_)) => (o.final_text.clone(), format!("{}; asked once more, it gave no summary", stopped(o))),
        Some(Err(e)) => (o.final_text.clone(), format!("{}; asked once more, its summary failed: {e}", stopped(o))),
    };
    let tokens = done.usage.input_tokens + done.usage.output_tokens;
    let line = format!("(subagent {id}: {} rounds, {tokens} tokens, {how})", o.rounds);
    let text = if text.trim().is_empty() { line } else { format!("{}\n\n{line}", text.trim_end()) };
    let is_error = done.summary.as_ref().is_some_and(|s| s.as_ref().is_ok_and(|t| t.trim().is_empty()) || s.is_err())
        && o.final_text.trim().is_empty();
    (state, ToolOutput { text, is_error, change: None, images: Vec::new() })
}
