//! A child agent (`task`) as ACP shows it. To a client that understands subagent sessions
//! (`clientCapabilities.subagents`), each child is a session of its own, `<parent>/sa-<n>`, announced and kept
//! current with `subagent_update` on its parent (title, agent, running or idle with how it stopped, and that it
//! may be cancelled alone: `session/cancel` with its id); its calls, text and plan are that session's updates
//! and its questions are asked on it. To any other client its calls are the parent's, titled and marked
//! (`_meta.stepwise.subagent`) for the child, so no call is unattributed.

use agent_client_protocol::v1::schema::{
    IdleStateUpdate, IdleStopReason, Meta, RunningStateUpdate, SessionCancelCapabilities, SessionUpdate, StateUpdate,
    SubagentSessionCapabilities, SubagentUpdate, ToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::json;

use super::tool_calls;
use super::updates::{send, text_block};
use super::Conn;
use crate::events::Event;
use crate::subagents::State;

/// Where a child's updates go: the connection, its parent's session, the folder, and whether the client
/// understands subagent sessions.
pub(super) struct To<'a> {
    pub conn: &'a Conn,
    pub parent: &'a str,
    pub root: &'a std::path::Path,
    pub subagents: bool,
}

/// The session id of the child `sa` of the session `parent`.
pub(crate) fn child_session(parent: &str, sa: &str) -> String {
    format!("{parent}/{sa}")
}

/// The parent session and the child of a child's session id (`None`: not a child's).
pub(crate) fn split(id: &str) -> Option<(&str, &str)> {
    id.rsplit_once('/').filter(|(_, sa)| sa.starts_with("sa-"))
}

/// `_meta` naming the child a call belongs to.
fn marked(sa: &str) -> Meta {
    let mut m = Meta::new();
    m.insert("stepwise".into(), json!({"subagent": sa}));
    m
}

/// A child's state, as `subagent_update` on its parent (nothing for a client without subagent sessions: the
/// `task` call's own card says how it went).
pub(super) fn announce(ev: &To<'_>, sa: &str, description: &str, agent: &str, state: State) {
    if !ev.subagents {
        return;
    }
    let now = match state {
        State::Running => StateUpdate::Running(RunningStateUpdate::new()),
        State::Done => StateUpdate::Idle(IdleStateUpdate::new().stop_reason(IdleStopReason::EndTurn)),
        State::Cancelled => StateUpdate::Idle(IdleStateUpdate::new().stop_reason(IdleStopReason::Cancelled)),
        State::Failed => {
            StateUpdate::Idle(IdleStateUpdate::new().stop_reason(IdleStopReason::Error(Default::default())))
        }
    };
    let update = SubagentUpdate::new(child_session(ev.parent, sa))
        .title(description.to_string())
        .description(format!("{agent} agent ({sa})"))
        .capabilities(SubagentSessionCapabilities::new().cancel(SessionCancelCapabilities::new()))
        .state(now);
    send(ev.conn, ev.parent, SessionUpdate::SubagentUpdate(update));
}

/// One of the child's own events: on its session, or marked on its parent's.
pub(super) fn child_event(ev: &To<'_>, sa: &str, inner: &Event<'_>) {
    let root = ev.root;
    let update = match *inner {
        Event::ToolStarted { id, name, input, asks, .. } => {
            let mut call = tool_calls::started(id, name, input, root);
            if asks {
                call = call.status(ToolCallStatus::Pending);
            }
            SessionUpdate::ToolCall(mark(ev, sa, call))
        }
        Event::ToolFinished { id, name, input, output, is_error, change, .. } => {
            let content = tool_calls::content(name, output, change.filter(|_| !is_error));
            let mut fields = ToolCallUpdateFields::new().status(tool_calls::status(is_error)).content(content);
            if !ev.subagents {
                fields = fields.title(format!("[{sa}] {}", tool_calls::title(name, input)));
            }
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields))
        }
        // The child's text and plan are its session's; a client without them reads its result on the task call.
        Event::AssistantText { text } if ev.subagents => SessionUpdate::AgentMessageChunk(text_block(text)),
        Event::PlanChanged { state } if ev.subagents => SessionUpdate::Plan(tool_calls::plan(&state.plan)),
        _ => return,
    };
    match ev.subagents {
        true => send(ev.conn, &child_session(ev.parent, sa), update),
        false => send(ev.conn, ev.parent, update),
    }
}

fn mark(ev: &To<'_>, sa: &str, mut call: ToolCall) -> ToolCall {
    if ev.subagents {
        return call;
    }
    call.title = format!("[{sa}] {}", call.title);
    call.meta(marked(sa))
}
