//! A session's background tasks as the ACP client sees them: each task a tool call of its own (kind
//! `execute`, titled `Run in background <command>`), `in_progress` with its latest output while it runs,
//! `completed` (exit 0) or `failed` (another code, a signal, a kill) when it ends, whether or not a
//! prompt is running then: a task that ends after the turn is still shown, and the model is not started.
//!
//! The task itself runs under stepwise's guard and sandbox (`AcpHost::start_background`), never in a
//! client terminal; only its picture goes to the client.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::json;

use super::events::send;
use super::sessions::{AcpSession, Shown};
use super::tool_calls;
use super::Conn;
use crate::background::{State, Task};

/// At most this often a running task's output is shown again.
const EVERY: Duration = Duration::from_millis(100);

/// Shows `session`'s tasks to the client for as long as the session lives; once per session (a
/// `session/load` of a live session does not start a second watcher).
pub(crate) fn watch(conn: &Conn, session: &Arc<AcpSession>) {
    if session.background_shown.swap(true, Ordering::SeqCst) {
        return;
    }
    let mut rx = session.ws.background().subscribe();
    let (weak, conn) = (Arc::downgrade(session), conn.clone());
    tokio::spawn(async move {
        loop {
            {
                let Some(session) = weak.upgrade() else { return };
                show_all(&conn, &session);
            }
            // Every change since the pass above wakes this once; the pause bounds the rate.
            if rx.changed().await.is_err() {
                return;
            }
            tokio::time::sleep(EVERY).await;
        }
    });
}

/// Sends what changed about `session`'s tasks since the client last saw them: by the watcher, and at the
/// end of each prompt before its answer, so a task the turn started is shown even to a client that goes
/// away once the turn ends (`acpx exec`).
pub(crate) fn show_all(conn: &Conn, session: &AcpSession) {
    let tasks = session.ws.background().list();
    let mut shown = crate::locks::lock(&session.background_seen);
    shown.retain(|id, _| tasks.iter().any(|t| &t.id == id));
    for task in tasks {
        show(conn, &session.id, &mut shown, &task);
    }
}

/// Sends what changed about `task` since it was last shown: its announcement, newer output, its end.
fn show(conn: &Conn, session_id: &str, shown: &mut HashMap<String, Shown>, task: &Task) {
    let (state, printed) = (task.state(), task.total());
    let ended = state != State::Running;
    let Some(was) = shown.get_mut(&task.id) else {
        let call_id = call_id(&task.id);
        let mut call = ToolCall::new(call_id.clone(), title(task, &state))
            .kind(ToolKind::Execute)
            .status(status(&state))
            .raw_input(json!({"command": task.command, "taskId": task.id}))
            .content(content(task, &state));
        if ended {
            call = call.raw_output(json!({"taskId": task.id, "state": state.describe()}));
        }
        send(conn, session_id, SessionUpdate::ToolCall(call));
        shown.insert(task.id.clone(), Shown { call_id, printed, ended });
        return;
    };
    if was.ended || (!ended && was.printed == printed) {
        return;
    }
    let mut fields = ToolCallUpdateFields::new().content(content(task, &state));
    if ended {
        fields = fields
            .status(status(&state))
            .title(title(task, &state))
            .raw_output(json!({"taskId": task.id, "state": state.describe()}));
    }
    send(conn, session_id, SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(was.call_id.clone(), fields)));
    (was.printed, was.ended) = (printed, ended);
}

/// Unique in the session across connections: a session loaded again numbers its tasks from `bg-1` anew.
fn call_id(task_id: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format!("background-{task_id}-{:x}", now.as_micros())
}

/// `Run in background python3 -m http.server (bg-1)`, with how it ended once it has.
fn title(task: &Task, state: &State) -> String {
    let base = tool_calls::title("background_run", &json!({"command": task.command}));
    match state {
        State::Running => format!("{base} ({})", task.id),
        ended => format!("{base} ({}: {})", task.id, ended.describe()),
    }
}

fn status(state: &State) -> ToolCallStatus {
    match state {
        State::Running => ToolCallStatus::InProgress,
        State::Exited(0) => ToolCallStatus::Completed,
        _ => ToolCallStatus::Failed,
    }
}

/// The last bytes of its output as the shell printed them, then its state.
fn content(task: &Task, state: &State) -> Vec<ToolCallContent> {
    let mut out = tool_calls::content("bash", &task.tail(), None);
    out.push(ToolCallContent::from(format!("{}: {}", task.id, state.describe())));
    out
}
