//! Sending `session/update`s to the client.

use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionNotification, SessionUpdate, TextContent};

use super::Conn;

/// Sends one update; a client that is gone is noticed by the connection, not here.
pub(crate) fn send(conn: &Conn, session_id: &str, update: SessionUpdate) {
    if let Err(e) = conn.send_notification(SessionNotification::new(session_id.to_string(), update)) {
        tracing::debug!("session/update not sent: {}", e.message);
    }
}

pub(crate) fn text_block(text: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text.into())))
}
