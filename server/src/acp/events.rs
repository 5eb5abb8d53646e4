//! The agent's event sink: the loop's events become `session/update` notifications, and the session is
//! saved at every checkpoint.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    SessionUpdate, Terminal, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, UsageUpdate,
};

use super::sessions::AcpSession;
use super::tool_calls;
use super::Conn;
use crate::events::{Event, EventSink};
use crate::locks::lock;

/// What the host and the events share during one run, for how the client shows a call: the call in
/// flight, whether it was announced `pending` (it asks first), and the client terminal it runs in. (The
/// file change and the call's id reach the events and the host with the engine's own calls.)
#[derive(Default)]
pub(crate) struct RunState {
    current: Mutex<Option<String>>,
    /// Calls announced with `tool_call`; a call finished without one (cut by the output limit) is
    /// announced when it finishes.
    started: Mutex<HashSet<String>>,
    /// The call in flight was announced `pending` (it asks first) and has not started yet.
    pending: Mutex<bool>,
    /// The client terminal the call in flight runs in, shown as its content to the end.
    terminal: Mutex<Option<String>>,
    /// The content the latest finished call was shown with, so the round's diagnostics are added to it
    /// (a `tool_call_update`'s content replaces the call's).
    last_content: Mutex<Option<(String, Vec<ToolCallContent>)>>,
}

impl RunState {
    pub fn current_call(&self) -> Option<String> {
        lock(&self.current).clone()
    }

    /// The user allowed the call in flight: it leaves `pending` for `in_progress`. Every tool that asks
    /// (shell, protected write, MCP) comes through here, from `AcpHost::approve`.
    pub fn allowed(&self, conn: &Conn, session_id: &str) {
        let Some(id) = self.current_call() else { return };
        if std::mem::take(&mut *lock(&self.pending)) {
            let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
            send(conn, session_id, SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id, fields)));
        }
    }

    /// The call in flight runs in the client terminal `terminal`, shown as its content to the end.
    pub fn in_terminal(&self, conn: &Conn, session_id: &str, terminal: String) {
        let Some(id) = self.current_call() else { return };
        let fields =
            ToolCallUpdateFields::new().content(vec![ToolCallContent::Terminal(Terminal::new(terminal.clone()))]);
        *lock(&self.terminal) = Some(terminal);
        send(conn, session_id, SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id, fields)));
    }
}

pub(crate) use super::updates::{send, text_block};

pub(crate) struct AcpEvents {
    pub session: Arc<AcpSession>,
    pub conn: Conn,
    pub state: Arc<RunState>,
    /// The client understands subagent sessions (`clientCapabilities.subagents`): acp/subagents.rs.
    pub subagents: bool,
}

impl AcpEvents {
    /// Where a child's updates go from this run (acp/subagents.rs).
    fn to(&self) -> super::subagents::To<'_> {
        super::subagents::To {
            conn: &self.conn,
            parent: &self.session.id,
            root: self.session.root(),
            subagents: self.subagents,
        }
    }

    fn send(&self, update: SessionUpdate) {
        send(&self.conn, &self.session.id, update);
    }
}

impl EventSink for AcpEvents {
    fn emit(&self, event: Event<'_>) {
        match event {
            Event::Thinking { .. } | Event::RunFinished { .. } | Event::Checkpoint { .. } => {}
            Event::Subagent { id, description, agent, state, .. } => {
                super::subagents::announce(&self.to(), id, description, agent, state)
            }
            Event::Child { id, inner } => super::subagents::child_event(&self.to(), id, inner),
            Event::AssistantText { text } => self.send(SessionUpdate::AgentMessageChunk(text_block(text))),
            Event::ToolStarted { id, name, input, asks, .. } => {
                *lock(&self.state.current) = Some(id.to_string());
                lock(&self.state.started).insert(id.to_string());
                *lock(&self.state.terminal) = None;
                let mut call = tool_calls::started(id, name, input, self.session.root());
                // A call that asks first waits for its permission as `pending` (the engine decides).
                *lock(&self.state.pending) = asks;
                if asks {
                    call = call.status(ToolCallStatus::Pending);
                }
                self.send(SessionUpdate::ToolCall(call));
            }
            Event::ToolFinished { id, name, input, output, is_error, change, .. } => {
                *lock(&self.state.current) = None;
                *lock(&self.state.pending) = false;
                let change = change.filter(|_| !is_error);
                // A command run in the client's terminal keeps showing it: the client has its output.
                let content = match lock(&self.state.terminal).take() {
                    Some(t) => vec![ToolCallContent::Terminal(Terminal::new(t))],
                    None => tool_calls::content(name, output, change),
                };
                *lock(&self.state.last_content) = Some((id.to_string(), content.clone()));
                let announced = lock(&self.state.started).remove(id);
                if !announced {
                    let call = tool_calls::started(id, name, input, self.session.root())
                        .status(tool_calls::status(is_error))
                        .content(content);
                    self.send(SessionUpdate::ToolCall(call));
                    return;
                }
                let mut fields = ToolCallUpdateFields::new().status(tool_calls::status(is_error)).content(content);
                if let Some(c) = change {
                    let at = agent_client_protocol::v1::schema::ToolCallLocation::new(c.path.clone()).line(c.line);
                    fields = fields.locations(vec![at]);
                }
                self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields)));
            }
            Event::PlanChanged { state } => self.send(SessionUpdate::Plan(tool_calls::plan(&state.plan))),
            // The errors the model is told of, in the content of the call that caused them.
            Event::Diagnostics { text, call_id } => {
                let last = lock(&self.state.last_content).take();
                match (call_id, last) {
                    (Some(id), Some((last_id, mut content))) if id == last_id => {
                        content.push(ToolCallContent::from(text.to_string()));
                        let fields = ToolCallUpdateFields::new().content(content);
                        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields)));
                    }
                    _ => self.send(SessionUpdate::AgentThoughtChunk(text_block(text))),
                }
            }
            // Shown to the user as a thought; the model still gets it in the tool results.
            Event::Reminder { text } => self.send(SessionUpdate::AgentThoughtChunk(text_block(text))),
            Event::Usage { round, context_window, .. } => {
                let used = round.input_tokens + round.output_tokens;
                self.send(SessionUpdate::UsageUpdate(UsageUpdate::new(used, context_window)));
            }
            Event::Compacted { tokens_before, tokens_after, error } => {
                let mut text = format!(
                    "Compacted the conversation to fit the context window: about {tokens_before} → {tokens_after} tokens."
                );
                if let Some(e) = error {
                    text.push_str(&format!(" (The summary failed: {e}; only old tool results were shortened.)"));
                }
                self.send(SessionUpdate::AgentThoughtChunk(text_block(text)));
            }
        }
    }
}
