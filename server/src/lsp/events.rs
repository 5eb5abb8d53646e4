//! The sidecar's event sink: the loop's events become notifications, progress and saved state.

use std::sync::Arc;

use tower_lsp_server::ls_types::{MessageType, WorkDoneProgressReport};

use super::ext;
use super::notify::{Notifier, Outgoing};
use super::progress::Progress;
use super::session::Session;
use super::shared::Shared;
use crate::events::{Event, EventSink};
use crate::plan::PlanState;
use crate::tools;
use crate::workspace::Handover;

/// Transcript notifications carry at most this much of a tool's output.
const SHORT_OUTPUT: usize = 400;

pub struct EditorEvents {
    pub shared: Arc<Shared>,
    pub notifier: Notifier,
    pub session: Arc<Session>,
    pub run_id: String,
    pub progress: Arc<Progress>,
}

impl EventSink for EditorEvents {
    fn emit(&self, event: Event<'_>) {
        let at = self.session.at();
        let run = self.run_id.clone();
        let out = match event {
            Event::Subagent { tool_call_id, id, description, agent, state, rounds, last_tool, tokens } => {
                Outgoing::Subagent(ext::Subagent {
                    at: at.clone(),
                    run_id: run,
                    tool_call_id: tool_call_id.into(),
                    id: id.into(),
                    description: description.into(),
                    agent: agent.into(),
                    state,
                    rounds,
                    last_tool: last_tool.map(str::to_string),
                    tokens,
                })
            }
            // A child's calls, marked as its own; the rest of a child's events are its card's to sum up.
            Event::Child { id, inner } => match tool_call(&at, &run, inner) {
                Some(mut call) => {
                    call.subagent = Some(id.to_string());
                    Outgoing::ToolCall(call)
                }
                None => return,
            },
            Event::Thinking { .. } => return,
            Event::AssistantText { text } => {
                Outgoing::AssistantText(ext::AssistantText { at: at.clone(), run_id: run, text: text.into() })
            }
            Event::ToolStarted { .. } | Event::ToolFinished { .. } => match tool_call(&at, &run, &event) {
                Some(call) => Outgoing::ToolCall(call),
                None => return,
            },
            Event::PlanChanged { state } => {
                let plan = &state.plan;
                let total = plan.items.len();
                let pct = (100 * plan.completed()).checked_div(total).unwrap_or(0) as u32;
                self.progress.report(
                    &self.notifier,
                    WorkDoneProgressReport {
                        cancellable: Some(true),
                        message: plan.current_step_label().map(str::to_string),
                        percentage: Some(pct),
                    },
                );
                return announce_plan(&self.notifier, &self.session, state);
            }
            // Live: `stepwise/diagnostics` under the round's call (and a log line for plain clients); after a
            // reload the views read it from `stepwise.conversation` (kind `diagnostics`).
            Event::Diagnostics { text, call_id } => {
                let line = format!("stepwise diagnostics ({}): {}", self.session.name(), one_line(text));
                self.notifier.send(Outgoing::Log(MessageType::INFO, line));
                Outgoing::Diagnostics(ext::Diagnostics {
                    at: at.clone(),
                    run_id: run,
                    calls: call_id.map(str::to_string).into_iter().collect(),
                    lines: ext::DiagnosticLine::of_block(text),
                })
            }
            Event::Reminder { text } => {
                let line = format!("stepwise reminder ({}): {}", self.session.name(), one_line(text));
                self.notifier.send(Outgoing::Log(MessageType::INFO, line));
                Outgoing::Reminder(ext::Reminder { at: at.clone(), text: text.into() })
            }
            Event::Compacted { tokens_before, tokens_after, error } => Outgoing::Compacted(ext::Compacted {
                at: at.clone(),
                run_id: run,
                tokens_before,
                tokens_after,
                summary_error: error.map(str::to_string),
            }),
            Event::Usage { round, run: total, context_window } => Outgoing::Usage(ext::Usage {
                at: at.clone(),
                run_id: run,
                input_tokens: round.input_tokens,
                output_tokens: round.output_tokens,
                run_input_tokens: total.input_tokens,
                run_output_tokens: total.output_tokens,
                cache_read_tokens: round.cache_read_tokens,
                cache_write_tokens: round.cache_write_tokens,
                context_tokens: round.input_tokens,
                context_window,
            }),
            // The run task reports the end itself, after saving.
            Event::RunFinished { .. } => return,
            Event::Checkpoint { id, run_id, round, step } => {
                // The round before it may have changed files: what is left to review may have changed.
                let (shared, session) = (self.shared.clone(), self.session.clone());
                tokio::spawn(async move { super::review::refresh(&shared, &session).await });
                let (id, run_id, step) = (id.into(), run_id.into(), step.map(str::to_string));
                Outgoing::Checkpoint(ext::Checkpoint { at: at.clone(), id, run_id, round, step })
            }
        };
        self.notifier.send(out);
    }
}

/// A call's start or end as `stepwise/toolCall`.
fn tool_call(at: &ext::At, run: &str, event: &Event<'_>) -> Option<ext::ToolCall> {
    let (id, name, input, step, phase, output, is_error) = match *event {
        Event::ToolStarted { id, name, input, step, .. } => (id, name, input, step, ext::Phase::Started, None, None),
        Event::ToolFinished { id, name, input, output, is_error, step, .. } => {
            let short = crate::host::output::truncate_chars(output, SHORT_OUTPUT).to_string();
            (id, name, input, step, ext::Phase::Finished, Some(short), Some(is_error))
        }
        _ => return None,
    };
    Some(ext::ToolCall {
        at: at.clone(),
        run_id: run.into(),
        id: id.into(),
        name: name.into(),
        phase,
        summary: tools::summary(name, input),
        output,
        is_error,
        step: step.map(str::to_string),
        subagent: None,
    })
}

/// A plan change, the model's or the user's: the notification, a log line for plain clients, lenses.
pub fn announce_plan(notifier: &Notifier, session: &Session, state: &PlanState) {
    notifier.send(Outgoing::Plan(ext::Plan::of(session.at(), state)));
    notifier.send(Outgoing::Log(MessageType::INFO, plan_line(&session.name(), &state.plan)));
    notifier.send(Outgoing::RefreshLenses);
}

/// A plan change as one log line for clients that show only `window/logMessage`:
/// `stepwise plan (demo) 1/3: [x] Read greet.js | [>] Add a farewell | [ ] Export it`.
fn plan_line(folder: &str, plan: &crate::plan::Plan) -> String {
    if plan.items.is_empty() {
        return format!("stepwise plan ({folder}): empty");
    }
    let items: Vec<String> =
        plan.items.iter().map(|i| format!("{} {}", i.status.marker(), one_line(&i.text))).collect();
    format!("stepwise plan ({folder}) {}/{}: {}", plan.completed(), plan.items.len(), items.join(" | "))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Restored plans show at once, lenses included (the editor may have asked for them already).
pub fn announce_restored(shared: &Arc<Shared>, sessions: &[Arc<Session>]) {
    let mut any = false;
    for f in sessions.iter().filter(|f| !f.ws.plan().plan.is_empty()) {
        shared.notifier.send(Outgoing::Plan(f.plan()));
        any = true;
    }
    if any {
        shared.notifier.send(Outgoing::RefreshLenses);
    }
    for f in sessions {
        let (shared, f) = (shared.clone(), f.clone());
        tokio::spawn(async move {
            super::review::refresh(&shared, &f).await;
            // A reload's old server still held the checkpoints: their changes come when it lets go. The
            // folder is not kept open meanwhile.
            let (mut handover, f) = (f.ws.checkpoints_handover(), Arc::downgrade(&f));
            if handover.wait_for(|h| *h != Handover::Waiting).await.is_ok_and(|h| *h == Handover::Done) {
                if let Some(f) = f.upgrade() {
                    super::review::refresh_announcing(&shared, &f).await;
                }
            }
        });
    }
}
