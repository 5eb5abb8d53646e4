//! Everything the server tells the editor unprompted goes through one queue, so it arrives in order.

use serde_json::Value;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::{
    MessageType, ProgressParams, ProgressParamsValue, ProgressToken, ShowMessageParams, WorkDoneProgress,
};
use tower_lsp_server::Client;

macro_rules! custom_notification {
    ($ty:ident, $method:literal) => {
        pub enum $ty {}
        impl Notification for $ty {
            type Params = Value;
            const METHOD: &'static str = $method;
        }
    };
}

custom_notification!(PlanNotification, "stepwise/plan");
custom_notification!(ReminderNotification, "stepwise/reminder");
custom_notification!(StatusNotification, "stepwise/status");
custom_notification!(AssistantTextNotification, "stepwise/assistantText");
custom_notification!(ToolCallNotification, "stepwise/toolCall");
custom_notification!(UsageNotification, "stepwise/usage");

pub enum Outgoing {
    Plan(Value),
    Reminder(Value),
    Status(Value),
    AssistantText(Value),
    ToolCall(Value),
    Usage(Value),
    Progress(ProgressToken, WorkDoneProgress),
    Message(MessageType, String),
    RefreshLenses,
    /// Answered once everything queued before it has been handed to the client.
    Barrier(tokio::sync::oneshot::Sender<()>),
}

#[derive(Clone)]
pub struct Notifier {
    tx: tokio::sync::mpsc::UnboundedSender<Outgoing>,
}

impl Notifier {
    /// Starts the sending task. `refresh_lenses` says whether the client handles `codeLens/refresh`.
    pub fn spawn(
        client: Client,
        refresh_lenses: std::sync::Arc<std::sync::atomic::AtomicBool>,
        timeout: std::time::Duration,
    ) -> Notifier {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Outgoing>();
        tokio::spawn(async move {
            while let Some(out) = rx.recv().await {
                match out {
                    Outgoing::Plan(v) => client.send_notification::<PlanNotification>(v).await,
                    Outgoing::Reminder(v) => client.send_notification::<ReminderNotification>(v).await,
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
                    Outgoing::Barrier(done) => {
                        let _ = done.send(());
                    }
                    Outgoing::RefreshLenses => {
                        if refresh_lenses.load(std::sync::atomic::Ordering::Relaxed) {
                            // A request: answered later, so it must not hold up the queue.
                            let c = client.clone();
                            tokio::spawn(async move {
                                if tokio::time::timeout(timeout, c.code_lens_refresh()).await.is_err() {
                                    tracing::debug!("codeLens/refresh not answered in time");
                                }
                            });
                        }
                    }
                }
            }
        });
        Notifier { tx }
    }

    /// Waits until every notification queued so far is on its way, so a request sent next
    /// reaches the editor after them (an edit after the plan step it belongs to).
    pub async fn flush(&self) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Outgoing::Barrier(tx));
        let _ = rx.await;
    }

    pub fn send(&self, out: Outgoing) {
        // Fails only when the server is shutting down; nothing is left to tell.
        let _ = self.tx.send(out);
    }
}
