//! Everything the server tells the editor unprompted goes through one queue, so it arrives in order.

use tower_lsp_server::ls_types::{
    LogMessageParams, MessageType, ProgressParams, ProgressParamsValue, ProgressToken, ShowMessageParams,
    WorkDoneProgress,
};
use tower_lsp_server::Client;

use super::ext::{
    self, AssistantTextNotification, CheckpointNotification, CompactedNotification, DiagnosticsNotification,
    McpNotification, PlanNotification, ReminderNotification, ReviewNotification, StatusNotification,
    ToolCallNotification, UsageNotification,
};

pub enum Outgoing {
    Plan(ext::Plan),
    Reminder(ext::Reminder),
    Compacted(ext::Compacted),
    Checkpoint(ext::Checkpoint),
    Mcp(ext::Mcp),
    Background(ext::Background),
    Review(ext::Review),
    Diagnostics(ext::Diagnostics),
    Sessions(ext::Sessions),
    Subagent(ext::Subagent),
    Status(ext::Status),
    AssistantText(ext::AssistantText),
    ToolCall(ext::ToolCall),
    Usage(ext::Usage),
    Progress(ProgressToken, WorkDoneProgress),
    Message(MessageType, String),
    /// `window/logMessage`: one line for clients without stepwise-specific code (eglot, Helix, Kakoune).
    Log(MessageType, String),
    RefreshLenses,
    /// Answered once everything queued before it has been handed to the client.
    Barrier(tokio::sync::oneshot::Sender<()>),
}

/// The outbox: a queue the sending task drains. Bounded in practice: streamed text chunks of one run
/// merge into the chunk waiting before them (a model streams one per token, an editor may read slowly),
/// and past `MAX_QUEUED` items the transcript-only kinds (text, tool calls, usage) are dropped. Plans,
/// statuses, progress, messages and barriers are never dropped.
struct Queue {
    items: std::collections::VecDeque<Outgoing>,
    dropped: u64,
}

const MAX_QUEUED: usize = 4096;

impl Queue {
    fn push(&mut self, out: Outgoing) {
        // Text joins the latest waiting text of the same run, unless something of that run (or anything
        // that orders the whole stream) waits after it: runs interleave, and each run's order is kept.
        if let Outgoing::AssistantText(new) = &out {
            let same = |at: &ext::At, run_id: &str| *at == new.at && run_id == new.run_id;
            for item in self.items.iter_mut().rev() {
                match item {
                    Outgoing::AssistantText(last) if same(&last.at, &last.run_id) => {
                        last.text.push_str(&new.text);
                        return;
                    }
                    Outgoing::AssistantText(ext::AssistantText { at, run_id, .. })
                    | Outgoing::ToolCall(ext::ToolCall { at, run_id, .. })
                    | Outgoing::Usage(ext::Usage { at, run_id, .. })
                        if !same(at, run_id) => {}
                    _ => break,
                }
            }
        }
        if self.items.len() >= MAX_QUEUED
            && matches!(out, Outgoing::AssistantText(_) | Outgoing::ToolCall(_) | Outgoing::Usage(_))
        {
            self.dropped += 1;
            if self.dropped.is_power_of_two() {
                tracing::warn!(dropped = self.dropped, "the editor reads too slowly; transcript notifications dropped");
            }
            return;
        }
        self.items.push_back(out);
    }
}

#[derive(Clone)]
pub struct Notifier {
    queue: std::sync::Arc<std::sync::Mutex<Queue>>,
    wake: std::sync::Arc<tokio::sync::Notify>,
}

/// One `codeLens/refresh` in flight at a time; changes meanwhile ask for exactly one more.
#[derive(Default)]
struct Refresh {
    in_flight: bool,
    again: bool,
}

impl Notifier {
    /// Starts the sending task. `refresh_lenses` says whether the client handles `codeLens/refresh`.
    pub fn spawn(
        client: Client,
        refresh_lenses: std::sync::Arc<std::sync::atomic::AtomicBool>,
        timeout: std::time::Duration,
    ) -> Notifier {
        let notifier = Notifier {
            queue: std::sync::Arc::new(std::sync::Mutex::new(Queue { items: Default::default(), dropped: 0 })),
            wake: std::sync::Arc::new(tokio::sync::Notify::new()),
        };
        let (queue, wake) = (notifier.queue.clone(), notifier.wake.clone());
        let refresh = std::sync::Arc::new(std::sync::Mutex::new(Refresh::default()));
        tokio::spawn(async move {
            loop {
                let next = crate::locks::lock(&queue).items.pop_front();
                let Some(out) = next else {
                    wake.notified().await;
                    continue;
                };
                match out {
                    Outgoing::Plan(v) => client.send_notification::<PlanNotification>(v).await,
                    Outgoing::Reminder(v) => client.send_notification::<ReminderNotification>(v).await,
                    Outgoing::Compacted(v) => client.send_notification::<CompactedNotification>(v).await,
                    Outgoing::Checkpoint(v) => client.send_notification::<CheckpointNotification>(v).await,
                    Outgoing::Mcp(v) => client.send_notification::<McpNotification>(v).await,
                    Outgoing::Background(v) => client.send_notification::<ext::BackgroundNotification>(v).await,
                    Outgoing::Review(v) => client.send_notification::<ReviewNotification>(v).await,
                    Outgoing::Diagnostics(v) => client.send_notification::<DiagnosticsNotification>(v).await,
                    Outgoing::Sessions(v) => client.send_notification::<ext::SessionsNotification>(v).await,
                    Outgoing::Subagent(v) => client.send_notification::<ext::SubagentNotification>(v).await,
                    Outgoing::Status(v) => client.send_notification::<StatusNotification>(v).await,
                    Outgoing::AssistantText(v) => client.send_notification::<AssistantTextNotification>(v).await,
                    Outgoing::ToolCall(v) => client.send_notification::<ToolCallNotification>(v).await,
                    Outgoing::Usage(v) => client.send_notification::<UsageNotification>(v).await,
                    Outgoing::Progress(token, value) => {
                        client
                            .send_notification::<tower_lsp_server::ls_types::notification::Progress>(ProgressParams {
                                token,
                                value: ProgressParamsValue::WorkDone(value),
                            })
                            .await
                    }
                    Outgoing::Message(typ, message) => {
                        client
                            .send_notification::<tower_lsp_server::ls_types::notification::ShowMessage>(
                                ShowMessageParams { typ, message },
                            )
                            .await
                    }
                    Outgoing::Log(typ, message) => {
                        client
                            .send_notification::<tower_lsp_server::ls_types::notification::LogMessage>(
                                LogMessageParams { typ, message },
                            )
                            .await
                    }
                    Outgoing::Barrier(done) => {
                        let _ = done.send(());
                    }
                    Outgoing::RefreshLenses => {
                        if refresh_lenses.load(std::sync::atomic::Ordering::Relaxed) {
                            refresh_once(&client, &refresh, timeout);
                        }
                    }
                }
            }
        });
        notifier
    }

    /// Waits until every notification queued so far is on its way, so a request sent next
    /// reaches the editor after them (an edit after the plan step it belongs to).
    pub async fn flush(&self) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Outgoing::Barrier(tx));
        let _ = rx.await;
    }

    pub fn send(&self, out: Outgoing) {
        crate::locks::lock(&self.queue).push(out);
        self.wake.notify_one();
    }
}

/// Sends `codeLens/refresh` unless one is in flight; then it is sent once more when that one is answered.
/// A request: answered later, so it runs beside the queue rather than holding it up.
fn refresh_once(client: &Client, state: &std::sync::Arc<std::sync::Mutex<Refresh>>, timeout: std::time::Duration) {
    {
        let mut s = crate::locks::lock(state);
        if s.in_flight {
            s.again = true;
            return;
        }
        s.in_flight = true;
    }
    let (client, state) = (client.clone(), state.clone());
    tokio::spawn(async move {
        loop {
            if tokio::time::timeout(timeout, client.code_lens_refresh()).await.is_err() {
                tracing::debug!("codeLens/refresh not answered in time");
            }
            let mut s = crate::locks::lock(&state);
            if !std::mem::take(&mut s.again) {
                s.in_flight = false;
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> Queue {
        Queue { items: Default::default(), dropped: 0 }
    }

    fn text(run: &str, text: &str) -> Outgoing {
        Outgoing::AssistantText(ext::AssistantText { at: ext::At::default(), run_id: run.into(), text: text.into() })
    }

    fn tool_call(run: &str, n: usize) -> Outgoing {
        Outgoing::ToolCall(ext::ToolCall {
            at: ext::At::default(),
            run_id: run.into(),
            id: n.to_string(),
            name: "bash".into(),
            phase: ext::Phase::Started,
            summary: String::new(),
            output: None,
            is_error: None,
            step: None,
            subagent: None,
        })
    }

    #[test]
    fn streamed_text_merges_while_the_editor_is_slow() {
        let mut q = queue();
        for i in 0..100_000 {
            q.push(text("r", &format!("{} ", i % 10)));
        }
        assert_eq!(q.items.len(), 1);
        let Some(Outgoing::AssistantText(v)) = q.items.front() else { panic!() };
        assert_eq!(v.text.len(), 200_000);
        // Another run's text is not merged into it, but runs streaming at once each keep one item.
        for _ in 0..3 {
            q.push(text("other", "x"));
            q.push(text("r", "y"));
        }
        assert_eq!(q.items.len(), 2);
        // A run's tool call keeps its place: text after it is not moved before it.
        q.push(tool_call("r", 0));
        q.push(text("r", "after"));
        assert_eq!(q.items.len(), 4);
        assert!(matches!(&q.items[3], Outgoing::AssistantText(v) if v.text == "after"));
    }

    #[test]
    fn plans_and_statuses_are_never_dropped() {
        let mut q = queue();
        let state = crate::plan::PlanState::default();
        for i in 0..MAX_QUEUED * 2 {
            q.push(tool_call("r", i));
            q.push(Outgoing::Plan(ext::Plan::of(ext::At::default(), &state)));
            q.push(Outgoing::Status(ext::Status::new(&ext::At::default(), "r", ext::RunState::Running)));
        }
        let plans = q.items.iter().filter(|o| matches!(o, Outgoing::Plan(_))).count();
        let statuses = q.items.iter().filter(|o| matches!(o, Outgoing::Status(_))).count();
        assert_eq!((plans, statuses), (MAX_QUEUED * 2, MAX_QUEUED * 2));
        assert!(q.dropped > 0, "tool calls past the bound were dropped");
    }
}
