//! One round of the loop, phase by phase, over the state a run carries from round to round.

use std::sync::Arc;

use serde_json::Value;

use super::answer::{self, Answer};
use super::{finish, push_user_text, Run, CANCELLED, REMINDER};
use crate::context::estimate_tokens;
use crate::events::{Event, EventSink};
use crate::host::Host;
use crate::llm::{Block, Message, ModelRequest, Role, ToolSpec, Usage};
use crate::mcp::McpTools;
use crate::session::{FinishReason, RunOutcome};
use crate::tools::{self, catalog, ToolContext, ToolOutput};

/// What a run carries from one round to the next.
pub(super) struct Turn {
    system: String,
    specs: Vec<ToolSpec>,
    /// The session's MCP tools, as started when the run began.
    mcp: Option<Arc<McpTools>>,
    /// The skills found when the run began (`load_skill` answers from them).
    skills: crate::skills::Skills,
    /// The agents a `task` call may name, found when the run began (its system prompt lists those of files).
    agents: crate::subagents::agents::Agents,
    pub round: u32,
    pub usage: Usage,
    rounds_since_plan: u32,
    /// The previous call, for the seed's duplicate-call guard.
    last_call: Option<(String, Value)>,
    continuations: u32,
    /// The latest prompt's size: the provider's count once it has answered, an estimate before.
    prompt_tokens: u64,
    overflow_retried: bool,
    /// The prompt's size in the round after the last compaction: when that is still past the threshold
    /// (the system prompt and tools alone can be), compacting again helps only once the history has grown.
    after_compaction: Option<u64>,
    just_compacted: bool,
}

/// A round either leads to another or ends the run.
type Next = Option<RunOutcome>;

impl Turn {
    pub fn new<H: Host + ?Sized, E: EventSink + ?Sized>(
        messages: &[Message],
        r: &Run<'_, H, E>,
        mcp: Option<Arc<McpTools>>,
        found: super::ahead::Found,
    ) -> Turn {
        // Read once per run (`ahead.rs`): the catalogues in the system prompt and the calls agree.
        let super::ahead::Found { instructions, skills, agents } = found;
        // A child in plan mode (`explore`) is read-only, not planning: it is told no planning prompt.
        let prompt_mode = if r.child.is_some() { crate::plan::Mode::Default } else { r.cfg.mode };
        let mut system =
            tools::system_prompt(r.host.root(), r.cfg.planning, prompt_mode) + &instructions + &skills.catalogue();
        // Not where every language server the workspace uses is known not to start: they could only fail.
        let mut specs = tools::specs(
            r.cfg.planning,
            r.cfg.mode,
            mcp.as_deref(),
            r.intel.is_some_and(|i| i.source.can_answer()),
            skills.offered(),
        );
        match r.child {
            Some(child) => {
                specs.retain(|s| s.name != catalog::TASK.name);
                if let Some(tools) = &child.tools {
                    specs.retain(|s| tools.iter().any(|t| *t == s.name));
                }
                for part in [child.prompt.as_str(), super::CHILD_NOTE] {
                    if !part.is_empty() {
                        system = format!("{system}\n\n{part}");
                    }
                }
            }
            None => system += &agents.catalogue(),
        }
        Turn {
            system,
            specs,
            mcp,
            skills,
            agents,
            round: 0,
            usage: Usage::default(),
            rounds_since_plan: 0,
            last_call: None,
            continuations: 0,
            prompt_tokens: estimate_tokens(messages),
            overflow_retried: false,
            after_compaction: None,
            just_compacted: false,
        }
    }

    /// The run's system prompt (a child's summary request is sent with it).
    pub fn system(&self) -> &str {
        &self.system
    }

    pub fn end(&self, reason: FinishReason, text: String, error: Option<String>) -> Next {
        Some(finish(reason, text, error, self.round, self.usage))
    }

    pub async fn round<H: Host + ?Sized, E: EventSink + ?Sized>(
        &mut self,
        messages: &mut Vec<Message>,
        r: &Run<'_, H, E>,
    ) -> Next {
        if r.cancel.is_cancelled() {
            return self.end(FinishReason::Cancelled, String::new(), None);
        }
        self.compact_if_needed(messages, r).await;
        if tell_user_news(messages, r) {
            // The model reads the whole plan now: that counts as the plan being in its mind, like its own
            // update, so no reminder follows right behind the edit.
            self.rounds_since_plan = 0;
        }
        self.round += 1;
        r.events.emit(Event::Thinking { round: self.round });
        let resp = {
            let req = ModelRequest { system: &self.system, messages, tools: &self.specs };
            let mut on_text = |t: &str| r.events.emit(Event::AssistantText { text: t });
            tokio::select! {
                biased;
                _ = r.cancel.cancelled() => return self.end(FinishReason::Cancelled, String::new(), None),
                resp = r.llm.complete(&req, &mut on_text) => resp,
            }
        };
        let resp = match resp {
            Ok(resp) => resp,
            Err(e) => return self.failed_request(messages, r, e).await,
        };
        self.prompt_tokens =
            if resp.usage.input_tokens > 0 { resp.usage.input_tokens } else { estimate_tokens(messages) };
        if std::mem::take(&mut self.just_compacted) {
            self.after_compaction = Some(self.prompt_tokens);
        }
        self.usage.add(resp.usage);
        r.events.emit(Event::Usage { round: resp.usage, run: self.usage, context_window: r.llm.context_window() });
        match answer::read(&mut self.continuations, messages, r, resp) {
            Answer::Calls { calls, text } => self.run_tools(messages, r, calls, text).await,
            Answer::Again { text } => self.cap(text, r.cfg.max_rounds),
            Answer::End { reason, text, error } => self.end(reason, text, error),
        }
    }

    /// Past the threshold: compact (unless the last compaction could not help and little has grown).
    async fn compact_if_needed<H: Host + ?Sized, E: EventSink + ?Sized>(
        &mut self,
        messages: &mut Vec<Message>,
        r: &Run<'_, H, E>,
    ) {
        let window = r.llm.context_window();
        let threshold = window.saturating_mul(r.cfg.compact_at_percent.min(100) as u64) / 100;
        if self.prompt_tokens > threshold
            && self.after_compaction.is_none_or(|floor| self.prompt_tokens > floor + window / 8)
        {
            super::compact_now(messages, r.shared.plan, r.llm, r.events, window, false).await;
            self.just_compacted = true;
        }
    }

    /// A request that failed: the provider counted more than fits once (compact, summary and all, and
    /// ask again), or anything else (the run ends with the error).
    async fn failed_request<H: Host + ?Sized, E: EventSink + ?Sized>(
        &mut self,
        messages: &mut Vec<Message>,
        r: &Run<'_, H, E>,
        e: crate::llm::LlmError,
    ) -> Next {
        if e.refuses_images() && crate::images::count(messages) > 0 {
            // The conversation goes on without them: what is sent next carries none.
            let n = crate::images::remove_all(messages);
            r.events.checkpoint(messages);
            let what = if n == 1 { "the image".to_string() } else { format!("the {n} images") };
            let why = format!(
                "the model did not accept images ({e}); {what} of this conversation became the note \"{}\": send your prompt again without images, or choose a model that accepts them",
                crate::images::REMOVED
            );
            return self.end(FinishReason::Error, String::new(), Some(why));
        }
        let window = r.llm.context_window();
        if e.is_context_overflow() && !self.overflow_retried {
            self.overflow_retried = true;
            self.round -= 1;
            self.prompt_tokens = super::compact_now(messages, r.shared.plan, r.llm, r.events, window, true).await;
            return None;
        }
        let why = if e.is_context_overflow() {
            format!(
                "the conversation does not fit the model's context window ({window} tokens) even after compaction: {e}"
            )
        } else {
            e.to_string()
        };
        self.end(FinishReason::Error, String::new(), Some(why))
    }

    /// Runs the calls in order; every call gets exactly one result, even after a stop.
    async fn run_tools<H: Host + ?Sized, E: EventSink + ?Sized>(
        &mut self,
        messages: &mut Vec<Message>,
        r: &Run<'_, H, E>,
        calls: Vec<(String, String, Value)>,
        text: String,
    ) -> Next {
        let mut results = Vec::with_capacity(calls.len() + 2);
        let mut changed_by: Option<&str> = None;
        let mut used_plan = false;
        let mut stop: Option<FinishReason> = None;
        // The response's `task` calls, run together when the first of them is reached (`subagents/`).
        let mut tasks: Option<std::collections::HashMap<String, ToolOutput>> = None;
        for (id, name, input) in &calls {
            if stop.is_none() && r.cancel.is_cancelled() {
                stop = Some(FinishReason::Cancelled);
            }
            // A child that ran has its own result, whatever stopped the round since.
            let ran = tasks.as_mut().and_then(|t| t.remove(id.as_str()));
            let out = match (ran, stop) {
                (Some(out), _) => out,
                (None, Some(reason)) => ToolOutput::failed(answer::skipped(reason)),
                (None, None) if name == catalog::TASK.name && r.child.is_none() => {
                    if tasks.is_none() {
                        let all: Vec<(&str, &Value)> = calls
                            .iter()
                            .filter(|(_, n, _)| n == catalog::TASK.name)
                            .map(|(i, _, v)| (i.as_str(), v))
                            .collect();
                        let step = r.shared.plan.read(|s| s.plan.in_progress().map(|i| i.text.clone()));
                        let (outs, usage) = super::tasks::run_tasks(&all, &self.agents, r, step.as_deref()).await;
                        // The children's tokens are the session's (the next `Usage` counts them).
                        self.usage.add(usage);
                        tasks = Some(outs);
                    }
                    if r.cancel.is_cancelled() {
                        stop = Some(FinishReason::Cancelled);
                    }
                    let out = tasks.as_mut().and_then(|t| t.remove(id.as_str()));
                    out.unwrap_or_else(|| ToolOutput::error("task: a call of this id ran already"))
                }
                (None, None) => {
                    let planning = catalog::is_planning_in(name, r.cfg.planning);
                    used_plan |= planning;
                    let (out, halt) = self.call(r, id, name, input, planning).await;
                    stop = halt;
                    if out.change.is_some() || catalog::find(name).is_some_and(|t| t.kind == catalog::Kind::Execute) {
                        changed_by = Some(id);
                    }
                    out
                }
            };
            results.push(Block::ToolResult {
                tool_use_id: id.clone(),
                content: out.text,
                is_error: out.is_error,
                images: out.images,
            });
        }
        // The servers have worked on the round's writes since each was applied; what is left is waited for
        // here, once (nothing at all when no file changed).
        if let (Some(intel), None) = (r.intel, stop) {
            let block = tokio::select! {
                biased;
                _ = r.cancel.cancelled() => None,
                b = intel.round_block(r.host) => b,
            };
            if let Some(block) = block {
                r.events.emit(Event::Diagnostics { text: &block, call_id: changed_by });
                results.push(Block::Text { text: block });
            }
        }
        self.close_round(messages, r, results, used_plan, stop, text)
    }

    /// One call: the duplicate guard, then the tool, abandoned if the run is cancelled meanwhile.
    async fn call<H: Host + ?Sized, E: EventSink + ?Sized>(
        &mut self,
        r: &Run<'_, H, E>,
        id: &str,
        name: &str,
        input: &Value,
        planning: bool,
    ) -> (ToolOutput, Option<FinishReason>) {
        let repeat = self.last_call.as_ref().is_some_and(|(n, i)| n == name && i == input);
        self.last_call = Some((name.to_string(), input.clone()));
        // Reading again and re-planning are how work goes on, not a loop.
        let loops = catalog::find(name).is_none_or(|t| !matches!(t.kind, catalog::Kind::Read | catalog::Kind::Think));
        if repeat && loops {
            let text = format!("Warning: Duplicate tool call detected ({name}). Task may be stuck in a loop.");
            return (ToolOutput::failed(text), Some(FinishReason::LoopDetected));
        }
        let step = r.shared.plan.read(|s| s.plan.in_progress().map(|i| i.text.clone()));
        let mut cx = ToolContext {
            host: r.host,
            plan: r.shared.plan,
            approvals: r.shared.approvals,
            style: r.cfg.planning,
            bash_timeout: r.cfg.bash_timeout,
            sandbox: r.shared.sandbox,
            sandbox_settings: catalog::sandbox_for(r.cfg.mode, r.cfg.sandbox),
            call_id: id,
            mcp: self.mcp.as_deref(),
            mode: r.cfg.mode,
            background: r.shared.background,
            intel: r.intel,
            skills: Some(&self.skills),
        };
        let call = tools::prepare(name, input, &cx);
        let asks = call.will_ask(&cx);
        r.events.emit(Event::ToolStarted { id, name, input, step: step.as_deref(), asks });
        let out = tokio::select! {
            biased;
            _ = r.cancel.cancelled() => None,
            o = tools::execute_prepared(name, input, call, &mut cx) => Some(o),
        };
        let (out, halt) = match out {
            Some(out) => (out, None),
            None => (ToolOutput::failed(CANCELLED), Some(FinishReason::Cancelled)),
        };
        r.events.emit(Event::ToolFinished {
            id,
            name,
            input,
            output: &out.text,
            is_error: out.is_error,
            change: out.change.as_ref(),
            step: step.as_deref(),
        });
        if planning && !out.is_error {
            r.shared.plan.read(|state| r.events.emit(Event::PlanChanged { state }));
        }
        (out, halt)
    }

    /// The nag, the results into the conversation, and whether another round follows.
    fn close_round<H: Host + ?Sized, E: EventSink + ?Sized>(
        &mut self,
        messages: &mut Vec<Message>,
        r: &Run<'_, H, E>,
        mut results: Vec<Block>,
        used_plan: bool,
        stop: Option<FinishReason>,
        text: String,
    ) -> Next {
        self.rounds_since_plan = if used_plan { 0 } else { self.rounds_since_plan + 1 };
        let plan_done = r.shared.plan.read(|s| s.plan.all_completed());
        if stop.is_none() && self.rounds_since_plan >= r.cfg.reminder_rounds && !plan_done {
            results.push(Block::Text { text: REMINDER.into() });
            r.events.emit(Event::Reminder { text: REMINDER });
        }
        // Background tasks that ended are told to the session's own conversation, not to a child's (whose
        // conversation ends with it); a child asks `check_background` for the tasks it started.
        if r.child.is_none() {
            crate::tools::background::results_into(&mut results, r.host, r.shared.background);
        }
        messages.push(Message { role: Role::User, content: results.into() });
        r.events.checkpoint(messages);
        if let Some(reason) = stop {
            return self.end(reason, text, None);
        }
        self.cap(text, r.cfg.max_rounds)
    }

    /// The round cap: another round only below it.
    pub fn cap(&self, text: String, max_rounds: u32) -> Next {
        (self.round >= max_rounds).then(|| finish(FinishReason::MaxRounds, text, None, self.round, self.usage))
    }
}

/// Before a request: the user's plan edit (once) and the lines they steered with, as text blocks of the
/// user turn, verbatim. Returns whether the plan edit was among them.
pub(super) fn tell_user_news<H: Host + ?Sized, E: EventSink + ?Sized>(
    messages: &mut Vec<Message>,
    r: &Run<'_, H, E>,
) -> bool {
    let edit = r.shared.plan.take_unseen_edit();
    let told = edit.is_some();
    for text in edit.into_iter().chain(r.shared.inbox.take()) {
        push_user_text(messages, text);
    }
    told
}
