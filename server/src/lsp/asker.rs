//! The sidecar's answers to the questions only it can ask (`workspace::Asker`) for a folder: a workspace
//! `.mcp.json` not trusted yet is asked about with a message request (the `approval` setting does not
//! cover it), problems reach the editor as warnings, and how every MCP server started as `stepwise/mcp`
//! (shown beside the plan). A `.env` endpoint for a key from elsewhere is not asked about here: the run
//! says how to approve it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use tower_lsp_server::ls_types::{MessageActionItem, MessageType};

use super::ext;
use super::notify::Outgoing;
use super::shared::Shared;
use crate::mcp::config::ConfigFile;
use crate::mcp::{trust, McpSet, Report};
use crate::workspace::{Asker, Trust};

const TRUST: &str = "Trust this file";
const DISTRUST: &str = "Don't start them";
const TRUST_FOLDER: &str = "Trust this folder";

pub struct FolderAsker {
    pub shared: Arc<Shared>,
    /// The session, as `stepwise/mcp` names it.
    pub at: ext::At,
    /// How long a question waits for the user (the `approvalTimeoutSecs` setting); then it is a no.
    pub timeout: Duration,
}

impl Asker for FolderAsker {
    fn reporter(&self) -> Report {
        let shared = self.shared.clone();
        Arc::new(move |line: &str| {
            shared.notifier.send(Outgoing::Message(MessageType::WARNING, format!("stepwise: {line}")))
        })
    }

    async fn trust_mcp(&self, file: &ConfigFile) -> Trust {
        let (shared, question) = (self.shared.clone(), trust::question(file));
        Trust::Later(
            async move {
                let actions =
                    [TRUST, DISTRUST].map(|t| MessageActionItem { title: t.into(), properties: Default::default() });
                let asked = shared.client.show_message_request(MessageType::WARNING, question, Some(actions.to_vec()));
                matches!(asked.await, Ok(Some(item)) if item.title == TRUST)
            }
            .boxed(),
        )
    }

    async fn trust_language_servers(&self, root: &Path, names: &[String]) -> Trust {
        let (shared, timeout) = (self.shared.clone(), self.timeout);
        let question = crate::intel::servers::trust_question(root, names);
        Trust::Later(
            async move {
                let actions = [TRUST_FOLDER, DISTRUST]
                    .map(|t| MessageActionItem { title: t.into(), properties: Default::default() });
                let asked = shared.client.show_message_request(MessageType::WARNING, question, Some(actions.to_vec()));
                match tokio::time::timeout(timeout, asked).await {
                    Ok(Ok(Some(item))) => item.title == TRUST_FOLDER,
                    Ok(_) => false,
                    Err(_) => {
                        tracing::warn!("the question about trusting language servers was not answered in time");
                        false
                    }
                }
            }
            .boxed(),
        )
    }

    fn mcp_started(&self, set: &Arc<McpSet>) {
        let (ready, shared, uri) = (set.when_ready(), self.shared.clone(), self.at.clone());
        tokio::spawn(async move {
            if let Some(tools) = ready.await {
                shared.notifier.send(Outgoing::Mcp(ext::Mcp::of(uri.clone(), &tools.servers)));
            }
        });
    }
}
