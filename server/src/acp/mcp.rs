//! A session's MCP servers over ACP: those the client passes in `session/new` / `session/load` (stdio
//! and http, as `initialize` advertises), with the user's and the workspace's files. Started at the
//! session's first prompt, where asking the user (a workspace `.mcp.json` not trusted yet) fits the
//! thread; they stop with the session.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::v1::schema::{
    McpServer, PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionUpdate, ToolCallUpdate, ToolCallUpdateFields,
};
use futures_util::FutureExt;

use super::events;
use super::sessions::AcpSession;
use super::Conn;
use crate::locks::lock;
use crate::mcp::config::{check_name, ServerSpec, Servers};
use crate::mcp::{sources, trust, McpSet};

const TRUST: &str = "trust";
const DISTRUST: &str = "distrust";

/// The client's servers until the first prompt, then the started set.
#[derive(Default)]
pub(crate) struct SessionMcp {
    client: Mutex<Servers>,
    set: OnceLock<Arc<McpSet>>,
}

impl SessionMcp {
    /// The servers of `session/new` or `session/load`; a bad one is told to the client.
    pub fn take(&self, list: &[McpServer]) -> Vec<String> {
        let (servers, bad) = servers_of(list);
        *lock(&self.client) = servers;
        bad
    }

    /// The session's set, started on first use.
    pub fn get(&self, session: &Arc<AcpSession>, conn: &Conn, timeout: crate::mcp::Timeouts) -> Arc<McpSet> {
        self.set.get_or_init(|| start(session, conn, std::mem::take(&mut *lock(&self.client)), timeout)).clone()
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

fn start(session: &Arc<AcpSession>, conn: &Conn, client: Servers, timeout: crate::mcp::Timeouts) -> Arc<McpSet> {
    let say = {
        let (conn, id) = (conn.clone(), session.id.clone());
        move |line: &str| {
            let text = format!("stepwise: {line}\n\n");
            events::send(&conn, &id, SessionUpdate::AgentMessageChunk(events::text_block(text)))
        }
    };
    let found = sources::find(&session.root, None, client);
    for p in &found.problems {
        say(p);
    }
    let gate = found.untrusted.clone().map(|file| {
        let (conn, id) = (conn.clone(), session.id.clone());
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
    McpSet::start(found.servers, session.root.clone(), timeout, gate, report)
}
