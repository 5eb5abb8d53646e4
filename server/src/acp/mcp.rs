//! The MCP servers a client passes in `session/new` / `session/load` (stdio and http, as `initialize`
//! advertises), kept for the session's first prompt, where the workspace starts them with the user's and
//! the workspace's files (`workspace::open`; asking about a workspace `.mcp.json` fits the thread
//! there); they stop with the session.

use std::collections::BTreeMap;
use std::sync::Mutex;

use agent_client_protocol::v1::schema::McpServer;

use crate::locks::lock;
use crate::mcp::config::{check_name, ServerSpec, Servers};

/// The client's servers, for the first prompt to start (later prompts find them started).
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

    pub fn servers(&self) -> Servers {
        lock(&self.client).clone()
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
