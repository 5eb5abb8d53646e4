//! The agent's event sink: the loop's events become `session/update` notifications, and the session is
//! saved at every checkpoint.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionNotification, SessionUpdate, TextContent, ToolCallUpdate, ToolCallUpdateFields,
    UsageUpdate,
};

use super::sessions::AcpSession;
use super::tool_calls;
use super::Conn;
use crate::events::{Event, EventSink};
use crate::locks::lock;

/// Sends one update; a client that is gone is noticed by the connection, not here.
pub(crate) fn send(conn: &Conn, session_id: &str, update: SessionUpdate) {
    if let Err(e) = conn.send_notification(SessionNotification::new(session_id.to_string(), update)) {
        tracing::debug!("session/update not sent: {}", e.message);
    }
}

pub(crate) fn text_block(text: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text.into())))
}

pub(crate) struct AcpEvents {
    session: Arc<AcpSession>,
    conn: Conn,
    /// Calls announced with `tool_call`; a call finished without one (cut by the output limit) is
    /// announced when it finishes.
    started: Mutex<HashSet<String>>,
}

impl AcpEvents {
    pub fn new(session: Arc<AcpSession>, conn: Conn) -> AcpEvents {
        AcpEvents { session, conn, started: Mutex::new(HashSet::new()) }
    }

    fn send(&self, update: SessionUpdate) {
        send(&self.conn, &self.session.id, update);
    }
}

impl EventSink for AcpEvents {
    fn emit(&self, event: Event<'_>) {
        match event {
            Event::Thinking { .. } | Event::RunFinished { .. } => {}
            Event::AssistantText { text } => self.send(SessionUpdate::AgentMessageChunk(text_block(text))),
            Event::ToolStarted { id, name, input } => {
                lock(&self.started).insert(id.to_string());
                let call = tool_calls::started(id, name, input, self.session.root());
                self.send(SessionUpdate::ToolCall(call));
            }
            Event::ToolFinished { id, name, input, output, is_error, change, .. } => {
                let change = change.filter(|_| !is_error);
                let content = tool_calls::content(name, output, change);
                let announced = lock(&self.started).remove(id);
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
