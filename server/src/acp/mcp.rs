//! A session's MCP servers over ACP: those the client passes in `session/new` / `session/load` (stdio
//! and http, as `initialize` advertises), with the user's and the workspace's files. Started at the
//! session's first prompt, where asking the user (a workspace `.mcp.json` not trusted yet) fits the
//! thread; they stop with the session.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, McpServer, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionNotification, SessionUpdate, TextContent, ToolCallUpdate, ToolCallUpdateFields,
};
use futures_util::FutureExt;

use super::Conn;
use crate::locks::lock;
use crate::mcp::config::{check_name, ServerSpec, Servers};
use crate::mcp::{sources, trust, McpSet};
use crate::workspace::Workspace;

const TRUST: &str = "trust";
const DISTRUST: &str = "distrust";

/// The client's servers until the first prompt starts them (the set is the workspace's).
#[derive(Default)]
pub(crate) struct SessionMcp {
    client: Mutex<Servers>,
}

impl SessionMcp {
    /// The servers of `session/new` or `session/load`; a bad one is told to the client.
    pub fn take(&self, list: &[McpServer]) -> Vec<String> {
        let (servers, bad) = servers_of(list);
        *lock(&self.client) = servers;
        bad
    }

    /// The set of the session `id` in `ws`, started on first use.
    pub fn get(&self, ws: &Workspace, id: &str, conn: &Conn, timeout: crate::mcp::Timeouts) -> Arc<McpSet> {
        ws.mcp(|| start(ws.root(), id, conn, std::mem::take(&mut *lock(&self.client)), timeout))
    }
}

fn servers_of(list: &[McpServer]) -> (Servers, Vec<String>) {
    let mut out = BTreeMap::new();
    let mut bad = Vec::new();
    for s in list {
        let (name, spec) = match s {
            McpServer::Stdio(s) => (
                s.name.clone(),
                ServerSpec::Stdio {
                    command: s.command.display().to_string(),
                    args: s.args.clone(),
                    env: s.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect(),
                },
            ),
            McpServer::Http(h) => (
                h.name.clone(),
                ServerSpec::Http {
                    url: h.url.clone(),
                    headers: h.headers.iter().map(|e| (e.name.clone(), e.value.clone())).collect(),
                },
            ),
            other => {
                bad.push(format!("MCP server {other:?} left out: only stdio and http servers are supported"));
                continue;
            }
        };
        match check_name(&name) {
            Ok(()) => {
                out.insert(name, spec);
            }
            Err(e) => bad.push(format!("MCP server left out: {e}")),
        }
    }
    (out, bad)
}

fn start(root: &Path, id: &str, conn: &Conn, client: Servers, timeout: crate::mcp::Timeouts) -> Arc<McpSet> {
    let say = {
        let (conn, id) = (conn.clone(), id.to_string());
        move |line: &str| {
            // Sent here rather than through events.rs, which needs the session (and so this file).
            let text = ContentChunk::new(ContentBlock::Text(TextContent::new(format!("stepwise: {line}\n\n"))));
            let note = SessionNotification::new(id.clone(), SessionUpdate::AgentMessageChunk(text));
            if let Err(e) = conn.send_notification(note) {
                tracing::debug!("session/update not sent: {}", e.message);
            }
        }
    };
    let found = sources::find(root, None, client);
    for p in &found.problems {
        say(p);
    }
    let gate = found.untrusted.clone().map(|file| {
        let (conn, id) = (conn.clone(), id.to_string());
        async move {
            let fields = ToolCallUpdateFields::new().title(trust::question(&file));
            let options = vec![
                PermissionOption::new(TRUST, "Trust this file", PermissionOptionKind::AllowAlways),
                PermissionOption::new(DISTRUST, "Don't start them", PermissionOptionKind::RejectOnce),
            ];
            let req = RequestPermissionRequest::new(id, ToolCallUpdate::new("stepwise-mcp-trust", fields), options);
            let yes = match conn.send_request(req).block_task().await {
                Ok(r) => matches!(r.outcome, RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == TRUST),
                Err(e) => {
                    tracing::warn!("session/request_permission failed: {}", e.message);
                    false
                }
            };
            if yes {
                if let Err(e) = trust::remember(&file.path, &file.content) {
                    tracing::warn!("could not remember the trust in {}: {e}", file.path.display());
                }
            }
            yes
        }
        .boxed()
    });
    let report: crate::mcp::Report = Arc::new(say);
    McpSet::start(found.servers, root.to_path_buf(), timeout, gate, report)
}
