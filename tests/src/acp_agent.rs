//! What an ACP test starts from: a workspace, the folder the agent saves its sessions in and a scripted
//! model ([`ScriptedAgent`]); the agent started there (initialized, with a session); permission
//! questions answered in turn ([`permissions`]).

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::acp_client::{agent_env, AcpClient};
use crate::mock::MockModel;
use crate::TempDir;

/// An ACP agent's workspace (`ws`), where it saves sessions (`state`) and its model (`mock`).
pub struct ScriptedAgent {
    pub ws: TempDir,
    pub state: TempDir,
    pub mock: MockModel,
    env: Vec<(&'static str, String)>,
}

impl ScriptedAgent {
    /// A workspace tagged `tag` (sessions in `{tag}-state`) with `mock` as the model.
    pub fn new(tag: &str, mock: MockModel) -> ScriptedAgent {
        let (ws, state) = (TempDir::new(tag), TempDir::new(&format!("{tag}-state")));
        let env = agent_env(&mock, &state);
        ScriptedAgent { ws, state, mock, env }
    }

    /// One more variable in the agent's environment (after [`agent_env`]'s, so it may replace one).
    pub fn env(mut self, key: &'static str, value: impl Into<String>) -> ScriptedAgent {
        self.env.push((key, value.into()));
        self
    }

    /// The agent's environment.
    pub fn agent_env(&self) -> &[(&'static str, String)] {
        &self.env
    }

    /// The agent started in the workspace, not initialized.
    pub fn spawn(&self) -> AcpClient {
        AcpClient::spawn(self.ws.path(), &self.env)
    }

    /// The agent started and initialized without a client file system.
    pub async fn initialized(&self) -> AcpClient {
        let mut client = self.spawn();
        client.initialize(false, false).await;
        client
    }

    /// The agent started and initialized offering terminals.
    pub async fn with_terminal(&self) -> AcpClient {
        let mut client = self.spawn();
        client.initialize_with_terminal().await;
        client
    }

    /// The agent initialized (no client file system) with a new session in the workspace.
    pub async fn session(&self) -> (AcpClient, String) {
        AcpClient::with_session(self.ws.path(), &self.env).await
    }
}

/// Answers the agent's permission requests with the given option ids in turn (`"cancelled"` for that
/// outcome; a request more fails the test), and keeps the requests.
pub fn permissions(client: &mut AcpClient, answers: &[&str]) -> Arc<Mutex<Vec<Value>>> {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (seen, mut answers) = (asked.clone(), answers.iter().map(|s| s.to_string()).collect::<Vec<_>>().into_iter());
    client.on_request = Box::new(move |method, params| {
        assert_eq!(method, "session/request_permission", "unexpected request {method}: {params}");
        seen.lock().unwrap_or_else(|e| e.into_inner()).push(params.clone());
        match answers.next().as_deref() {
            Some("cancelled") => Ok(json!({"outcome": {"outcome": "cancelled"}})),
            Some(option) => Ok(json!({"outcome": {"outcome": "selected", "optionId": option}})),
            None => panic!("more permission requests than expected: {params}"),
        }
    });
    asked
}
