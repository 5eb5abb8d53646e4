//! A folder's MCP servers in the sidecar: the user's and the workspace's files and the editor setting
//! `mcpServers`, started at the folder's first run (settings are known by then) and kept by its
//! workspace. A workspace `.mcp.json` not trusted yet is asked about with a message request; the
//! `approval` setting does not cover it. Failures reach the editor as warnings, and how every server
//! started as `stepwise/mcp` (shown beside the plan).

use std::sync::Arc;

use futures_util::FutureExt;
use tower_lsp_server::ls_types::{MessageActionItem, MessageType};

use super::ext;
use super::folder::Folder;
use super::notify::Outgoing;
use super::shared::Shared;
use crate::config::Overrides;
use crate::mcp::{sources, trust, McpSet};

const TRUST: &str = "Trust this file";
const DISTRUST: &str = "Don't start them";

/// The folder's set, started on first use.
pub fn get(shared: &Arc<Shared>, folder: &Folder, settings: &Overrides, timeout: crate::mcp::Timeouts) -> Arc<McpSet> {
    folder.ws.mcp(|| start(shared, folder, settings, timeout))
}

fn start(shared: &Arc<Shared>, folder: &Folder, settings: &Overrides, timeout: crate::mcp::Timeouts) -> Arc<McpSet> {
    let warn = {
        let shared = shared.clone();
        move |line: &str| shared.notifier.send(Outgoing::Message(MessageType::WARNING, format!("stepwise: {line}")))
    };
    let found = sources::find(&folder.root, settings.mcp_servers.as_ref().map(|s| &s.0), Default::default());
    for p in &found.problems {
        warn(p);
    }
    let gate = found.untrusted.clone().map(|file| {
        let shared = shared.clone();
        async move {
            let actions =
                [TRUST, DISTRUST].map(|t| MessageActionItem { title: t.into(), properties: Default::default() });
            let asked = shared.client.show_message_request(
                MessageType::WARNING,
                trust::question(&file),
                Some(actions.to_vec()),
            );
            let yes = matches!(asked.await, Ok(Some(item)) if item.title == TRUST);
            if yes {
                if let Err(e) = trust::remember(&file.path, &file.content) {
                    tracing::warn!("could not remember the trust in {}: {e}", file.path.display());
                }
            }
            yes
        }
        .boxed()
    });
    let any = !found.servers.is_empty();
    let set = McpSet::start(found.servers, folder.root.clone(), timeout, gate, Arc::new(warn));
    if any {
        let (ready, shared, uri) = (set.when_ready(), shared.clone(), folder.uri.clone());
        tokio::spawn(async move {
            if let Some(tools) = ready.await {
                shared.notifier.send(Outgoing::Mcp(ext::Mcp::of(&uri, &tools.servers)));
            }
        });
    }
    set
}
