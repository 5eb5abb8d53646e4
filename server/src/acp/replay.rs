//! `session/load`: the saved conversation told again as `session/update`s, so the client shows it as it
//! happened: the user's prompts, the model's text, each tool call and its result, reminders, the plan.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, ImageContent, SessionUpdate, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::Value;

use super::events::{send, text_block};
use super::sessions::AcpSession;
use super::tool_calls;
use super::Conn;
use crate::agent::{CONTINUE, REMINDER};
use crate::llm::{Block, Role};

pub(crate) async fn send_history(session: &AcpSession, conn: &Conn) {
    let convo = session.ws.messages().await;
    let plan = session.ws.plan().plan;
    let id = session.id.as_str();
    // Tool calls by id, so a result names the tool that made it.
    let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
    for message in &convo {
        for block in &message.content {
            match (message.role, block) {
                // What the loop itself adds to user turns is its voice, not the user's.
                (Role::User, Block::Text { text }) if text == REMINDER || text == CONTINUE => {
                    send(conn, id, SessionUpdate::AgentThoughtChunk(text_block(text.clone())))
                }
                // A skill the user called came with the prompt (`/<name>`): the prompt shows it, as it did live.
                (Role::User, Block::Text { text }) if crate::skills::is_block(text) => {}
                (Role::User, Block::Text { text }) => {
                    send(conn, id, SessionUpdate::UserMessageChunk(text_block(text.clone())))
                }
                (Role::Assistant, Block::Text { text }) => {
                    send(conn, id, SessionUpdate::AgentMessageChunk(text_block(text.clone())))
                }
                (_, Block::ToolUse { id: call, name, input }) => {
                    calls.insert(call, (name, input));
                    let started = tool_calls::started(call, name, input, session.root());
                    send(conn, id, SessionUpdate::ToolCall(started));
                }
                (_, Block::Image { source }) => {
                    let image = ImageContent::new(source.base64(), source.media_type());
                    send(conn, id, SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::Image(image))))
                }
                (_, Block::ToolResult { tool_use_id, content, is_error, .. }) => {
                    let name = calls.get(tool_use_id.as_str()).map(|(n, _)| *n).unwrap_or("");
                    let fields = ToolCallUpdateFields::new()
                        .status(tool_calls::status(*is_error))
                        .content(tool_calls::content(name, content, None));
                    send(conn, id, SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(tool_use_id.clone(), fields)));
                }
            }
        }
    }
    if !plan.is_empty() {
        send(conn, id, SessionUpdate::Plan(tool_calls::plan(&plan)));
    }
}
