//! Asking the user's leave for a tool call in the editor: the typed `stepwise/ask` to a client that
//! declared it (so it shows the question in the call's card, whatever its kind), else the plain
//! `window/showMessageRequest` every LSP client can answer. Both wait at most the approval timeout; a
//! typed question whose answer is no longer wanted (the run was cancelled, or it timed out) is withdrawn
//! with `$/cancelRequest`, so the client takes it off the card.

use std::time::Duration;

use tower_lsp_server::jsonrpc;
use tower_lsp_server::ls_types::notification::Cancel;
use tower_lsp_server::ls_types::request::Request;
use tower_lsp_server::ls_types::{CancelParams, MessageActionItem, MessageType, NumberOrString};
use tower_lsp_server::Client;
use tower_service::Service;

use super::ext::{AskAnswer, AskChoice, AskKind, AskParams, AskRequest};
use super::shared::Shared;
use crate::host::{Approval, Ask};

pub const ALLOW: &str = "Allow";
pub const ALLOW_SESSION: &str = "Allow for this session";
pub const DENY: &str = "Deny";

/// Where a question is asked: the folder and the run's call it is about.
pub struct Asking<'a> {
    pub at: super::ext::At,
    pub folder_name: String,
    pub run_id: &'a str,
    pub call_id: &'a str,
    /// The child agent asking (`task`), if one is: its id and description.
    pub subagent: Option<(String, String)>,
}

impl Asking<'_> {
    /// The question as the user reads it, naming the child that asks.
    fn message(&self, ask: &Ask<'_>) -> String {
        crate::subagents::question(ask.question(&self.folder_name), self.subagent.as_ref())
    }
}

impl AskParams {
    pub fn of(ask: &Ask<'_>, at: &Asking<'_>) -> AskParams {
        let mut p = AskParams {
            at: at.at.clone(),
            run_id: at.run_id.to_string(),
            call_id: at.call_id.to_string(),
            kind: AskKind::Command,
            message: at.message(ask),
            command: None,
            stopped: None,
            path: None,
            why: None,
            server: None,
            tool: None,
            subagent: at.subagent.as_ref().map(|(id, _)| id.clone()),
        };
        match *ask {
            Ask::Command(command) => p.command = Some(command.into()),
            Ask::Unsandboxed { command, stopped } => {
                (p.kind, p.command, p.stopped) = (AskKind::Unsandboxed, Some(command.into()), Some(stopped.into()))
            }
            Ask::Write { path, why } => {
                (p.kind, p.path, p.why) = (AskKind::ProtectedWrite, Some(path.into()), Some(why.into()))
            }
            Ask::Tool { server, tool } => {
                (p.kind, p.server, p.tool) = (AskKind::McpTool, Some(server.into()), Some(tool.into()))
            }
        }
        p
    }
}

/// Asks `ask` of the user and waits (at most `timeout`) for the answer; no answer is a refusal.
pub async fn ask(shared: &Shared, ask: &Ask<'_>, at: &Asking<'_>, timeout: Duration) -> Approval {
    if shared.caps().ask {
        return typed(&shared.client, AskParams::of(ask, at), timeout).await;
    }
    let actions =
        [ALLOW, ALLOW_SESSION, DENY].map(|t| MessageActionItem { title: t.into(), properties: Default::default() });
    let message = at.message(ask);
    let asked = shared.client.show_message_request(MessageType::WARNING, message, Some(actions.to_vec()));
    match tokio::time::timeout(timeout, asked).await {
        Ok(Ok(Some(item))) if item.title == ALLOW => Approval::Allow,
        Ok(Ok(Some(item))) if item.title == ALLOW_SESSION => Approval::AllowForSession,
        _ => Approval::Deny,
    }
}

/// `stepwise/ask`, sent with an id of our own so that it can be withdrawn.
async fn typed(client: &Client, params: AskParams, timeout: Duration) -> Approval {
    let id = client.next_request_id();
    let params = match serde_json::to_value(params) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!("stepwise/ask: {e}");
            return Approval::Deny;
        }
    };
    let request = jsonrpc::Request::build(AskRequest::METHOD).id(id.clone()).params(params).finish();
    let mut withdraw = Withdraw { client: client.clone(), id: Some(id) };
    let answer = tokio::time::timeout(timeout, client.clone().call(request)).await;
    let body = match answer {
        Ok(Ok(Some(response))) => {
            withdraw.id = None;
            response.into_parts().1
        }
        Ok(_) => {
            withdraw.id = None;
            tracing::warn!("stepwise/ask: the client is gone");
            return Approval::Deny;
        }
        Err(_) => {
            tracing::warn!("stepwise/ask not answered within {}s", timeout.as_secs());
            return Approval::Deny;
        }
    };
    match body.map(serde_json::from_value::<AskAnswer>) {
        Ok(Ok(AskAnswer { answer: AskChoice::Allow })) => Approval::Allow,
        Ok(Ok(AskAnswer { answer: AskChoice::AllowSession })) => Approval::AllowForSession,
        Ok(Ok(AskAnswer { answer: AskChoice::Deny })) => Approval::Deny,
        Ok(Err(e)) => {
            tracing::warn!("stepwise/ask: an answer that is not one: {e}");
            Approval::Deny
        }
        Err(e) => {
            tracing::warn!("stepwise/ask failed: {}", e.message);
            Approval::Deny
        }
    }
}

/// Withdraws the question when dropped before its answer came: the run was cancelled (its future dropped)
/// or the wait timed out.
struct Withdraw {
    client: Client,
    id: Option<jsonrpc::Id>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let id = match id {
            jsonrpc::Id::Number(n) => NumberOrString::Number(n as i32),
            jsonrpc::Id::String(s) => NumberOrString::String(s),
            jsonrpc::Id::Null => return,
        };
        let client = self.client.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { client.send_notification::<Cancel>(CancelParams { id }).await });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_carries_what_it_concerns() {
        let at = Asking {
            at: crate::lsp::ext::At { workspace: "file:///w".into(), session: "main".into() },
            folder_name: "w".into(),
            run_id: "r1",
            call_id: "c1",
            subagent: None,
        };
        let v = |ask: Ask<'_>| serde_json::to_value(AskParams::of(&ask, &at)).unwrap();
        let p = v(Ask::Unsandboxed { command: "touch /x", stopped: "touch: /x: Permission denied" });
        assert_eq!(p["kind"], "unsandboxed");
        assert_eq!(p["callId"], "c1");
        assert_eq!(p["command"], "touch /x");
        assert_eq!(p["stopped"], "touch: /x: Permission denied");
        assert!(p.get("path").is_none());
        let p = v(Ask::Write { path: ".env", why: "a .env file" });
        assert_eq!(
            (p["kind"].as_str(), p["path"].as_str(), p["why"].as_str()),
            (Some("protectedWrite"), Some(".env"), Some("a .env file"))
        );
        let p = v(Ask::Tool { server: "fs", tool: "read" });
        assert_eq!(
            (p["kind"].as_str(), p["server"].as_str(), p["tool"].as_str()),
            (Some("mcpTool"), Some("fs"), Some("read"))
        );
        assert_eq!(v(Ask::Command("ls"))["kind"], "command");
        let a: AskAnswer = serde_json::from_value(serde_json::json!({"answer": "allowSession"})).unwrap();
        assert_eq!(a.answer, AskChoice::AllowSession);
    }
}
