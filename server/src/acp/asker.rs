//! The ACP agent's answers to the questions only it can ask (`workspace::Asker`) for a session: a
//! workspace `.mcp.json` not trusted yet is asked about with `session/request_permission`, and problems
//! are told in the thread. A `.env` endpoint for a key from elsewhere is not asked about here: the
//! prompt says how to approve it.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest, SessionUpdate,
    ToolCallUpdate, ToolCallUpdateFields,
};
use futures_util::FutureExt;

use super::events::{send, text_block};
use super::Conn;
use crate::mcp::config::ConfigFile;
use crate::mcp::{trust, Report};
use crate::workspace::{Asker, Trust};

const TRUST: &str = "trust";
const DISTRUST: &str = "distrust";
/// How long the question about language servers waits for the user; then it is a no.
const TRUST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

pub(crate) struct SessionAsker {
    pub conn: Conn,
    pub session_id: String,
}

impl Asker for SessionAsker {
    fn reporter(&self) -> Report {
        let (conn, id) = (self.conn.clone(), self.session_id.clone());
        Arc::new(move |line: &str| {
            send(&conn, &id, SessionUpdate::AgentMessageChunk(text_block(format!("stepwise: {line}\n\n"))))
        })
    }

    async fn trust_mcp(&self, file: &ConfigFile) -> Trust {
        let (conn, id, question) = (self.conn.clone(), self.session_id.clone(), trust::question(file));
        Trust::Later(
            async move {
                let fields = ToolCallUpdateFields::new().title(question);
                let options = vec![
                    PermissionOption::new(TRUST, "Trust this file", PermissionOptionKind::AllowAlways),
                    PermissionOption::new(DISTRUST, "Don't start them", PermissionOptionKind::RejectOnce),
                ];
                let req = RequestPermissionRequest::new(id, ToolCallUpdate::new("stepwise-mcp-trust", fields), options);
                match conn.send_request(req).block_task().await {
                    Ok(r) => matches!(r.outcome, RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == TRUST),
                    Err(e) => {
                        tracing::warn!("session/request_permission failed: {}", e.message);
                        false
                    }
                }
            }
            .boxed(),
        )
    }

    async fn trust_language_servers(&self, root: &std::path::Path, names: &[String]) -> Trust {
        let (conn, id) = (self.conn.clone(), self.session_id.clone());
        let question = crate::intel::servers::trust_question(root, names);
        Trust::Later(
            async move {
                let fields = ToolCallUpdateFields::new().title(question);
                let options = vec![
                    PermissionOption::new(TRUST, "Trust this folder", PermissionOptionKind::AllowAlways),
                    PermissionOption::new(DISTRUST, "Don't start them", PermissionOptionKind::RejectOnce),
                ];
                let call = ToolCallUpdate::new("stepwise-language-servers-trust", fields);
                let req = RequestPermissionRequest::new(id, call, options);
                match tokio::time::timeout(TRUST_TIMEOUT, conn.send_request(req).block_task()).await {
                    Ok(Ok(r)) => matches!(r.outcome, RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == TRUST),
                    Ok(Err(e)) => {
                        tracing::warn!("session/request_permission failed: {}", e.message);
                        false
                    }
                    Err(_) => {
                        tracing::warn!("the question about trusting language servers was not answered in time");
                        false
                    }
                }
            }
            .boxed(),
        )
    }
}
