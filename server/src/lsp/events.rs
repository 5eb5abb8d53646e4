//! The sidecar's event sink: the loop's events become notifications, progress and saved state.

use std::sync::Arc;

use serde_json::json;
use tower_lsp_server::ls_types::{MessageType, WorkDoneProgressReport};

use super::folder::{plan_payload, Folder};
use super::notify::{Notifier, Outgoing};
use super::progress::Progress;
use crate::events::{Event, EventSink};
use crate::plan::PlanState;
use crate::tools;

/// Transcript notifications carry at most this much of a tool's output.
const SHORT_OUTPUT: usize = 400;

pub struct EditorEvents {
    pub notifier: Notifier,
    pub folder: Arc<Folder>,
    pub run_id: String,
    pub progress: Arc<Progress>,
}

impl EventSink for EditorEvents {
    fn emit(&self, event: Event<'_>) {
        let ws = &self.folder.uri;
        let run = &self.run_id;
        let out = match event {
            Event::Thinking { .. } => return,
            Event::AssistantText { text } => {
                Outgoing::AssistantText(json!({"workspace": ws, "runId": run, "text": text}))
            }
            Event::ToolStarted { id, name, input } => Outgoing::ToolCall(json!({
                "workspace": ws, "runId": run, "id": id, "name": name, "phase": "started",
                "summary": tools::summary(name, input),
            })),
            Event::ToolFinished { id, name, input, output, is_error, step, .. } => Outgoing::ToolCall(json!({
                "workspace": ws, "runId": run, "id": id, "name": name, "phase": "finished",
                "summary": tools::summary(name, input), "output": crate::host::output::truncate_chars(output, SHORT_OUTPUT), "isError": is_error,
                "step": step,
            })),
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
                return announce_plan(&self.notifier, &self.folder, state);
            }
            Event::Reminder { text } => {
                let line = format!("stepwise reminder ({}): {}", self.folder.name(), one_line(text));
                self.notifier.send(Outgoing::Log(MessageType::INFO, line));
                Outgoing::Reminder(json!({"workspace": ws, "text": text}))
            }
            Event::Compacted { tokens_before, tokens_after, error } => {
                let mut v =
                    json!({"workspace": ws, "runId": run, "tokensBefore": tokens_before, "tokensAfter": tokens_after});
                if let Some(e) = error {
                    v["summaryError"] = json!(e);
                }
                Outgoing::Compacted(v)
            }
            Event::Usage { round, run: total, context_window } => Outgoing::Usage(json!({
                "workspace": ws, "runId": run,
                "inputTokens": round.input_tokens, "outputTokens": round.output_tokens,
                "runInputTokens": total.input_tokens, "runOutputTokens": total.output_tokens,
                "cacheReadTokens": round.cache_read_tokens, "cacheWriteTokens": round.cache_write_tokens,
                "contextTokens": round.input_tokens, "contextWindow": context_window,
            })),
            // The run task reports the end itself, after saving.
            Event::RunFinished { .. } => return,
        };
        self.notifier.send(out);
    }
}

/// A plan change, the model's or the user's: the notification, a log line for plain clients, lenses.
pub fn announce_plan(notifier: &Notifier, folder: &Folder, state: &PlanState) {
    notifier.send(Outgoing::Plan(plan_payload(&folder.uri, state)));
    notifier.send(Outgoing::Log(MessageType::INFO, plan_line(&folder.name(), &state.plan)));
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
