//! A small ACP client for the tests: starts `stepwise acp`, speaks newline-delimited JSON-RPC over its
//! stdio, keeps every message the agent sent, and answers the agent's requests through a handler.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};

use crate::acp_terminals::Terminals;

/// How long any one message may take to arrive before a test fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// What the client answers to a request from the agent: `Ok(result)` or `Err((code, message))`.
pub type Answer = Result<Value, (i64, String)>;

/// Answers the agent's requests: method and params in, answer out.
pub type OnRequest = Box<dyn FnMut(&str, &Value) -> Answer + Send>;

/// What goes to the agent's stdin, in order, from the client or from a task answering late; a line
/// or bytes may carry a sender told once they are written.
pub enum Out {
    Line(String),
    Bytes(Vec<u8>, Option<oneshot::Sender<()>>),
    Close,
}

pub struct AcpClient {
    pub child: Child,
    out: mpsc::UnboundedSender<Out>,
    closed: bool,
    rx: mpsc::UnboundedReceiver<Value>,
    next_id: i64,
    /// Every message the agent sent, in order.
    pub received: Vec<Value>,
    /// Answers the agent's requests (`fs/*`, `session/request_permission`); the default refuses.
    pub on_request: OnRequest,
    /// Runs `terminal/*` for real once `initialize_with_terminal` offered terminals.
    terminals: Option<Terminals>,
}

impl AcpClient {
    /// Starts `stepwise acp` in `cwd` with only the given environment (plus PATH and HOME).
    pub fn spawn(cwd: &Path, env: &[(&str, String)]) -> AcpClient {
        let mut cmd = tokio::process::Command::new(crate::lsp_client::stepwise_binary(false));
        cmd.arg("acp").env_clear();
        for keep in ["PATH", "HOME", "TMPDIR", "LANG"] {
            if let Ok(v) = std::env::var(keep) {
                cmd.env(keep, v);
            }
        }
        // Off unless a test turns it on (host_sandbox.rs and the sandbox's own tests do).
        cmd.env("STEPWISE_SANDBOX", "off");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.current_dir(cwd).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
        let mut child = cmd.spawn().expect("cannot start stepwise acp");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take().expect("stdin");
        let (out, mut outgoing) = mpsc::unbounded_channel::<Out>();
        tokio::spawn(async move {
            let mut stdin = Some(stdin);
            while let Some(next) = outgoing.recv().await {
                let (bytes, written) = match next {
                    Out::Line(line) => (format!("{line}\n").into_bytes(), None),
                    Out::Bytes(bytes, written) => (bytes, written),
                    Out::Close => {
                        stdin = None;
                        continue;
                    }
                };
                // An agent that is gone is seen by the reader (its stdout closes), not here.
                if let Some(s) = stdin.as_mut() {
                    if s.write_all(&bytes).await.is_err() || s.flush().await.is_err() {
                        stdin = None;
                    }
                }
                if let Some(done) = written {
                    let _ = done.send(());
                }
            }
        });
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let v = serde_json::from_str::<Value>(&line)
                    .unwrap_or_else(|e| panic!("the agent wrote a line that is not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        AcpClient {
            child,
            out,
            closed: false,
            rx,
            next_id: 0,
            received: Vec::new(),
            on_request: Box::new(|method, _| Err((-32601, format!("test client does not handle {method}")))),
            terminals: None,
        }
    }

    pub async fn send_line(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes()).await;
    }

    /// Raw bytes, as they are (no newline added); returns once they are written, so a test may block
    /// its thread afterwards.
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        assert!(!self.closed, "stdin already closed");
        let (done, written) = oneshot::channel();
        self.out.send(Out::Bytes(bytes.to_vec(), Some(done))).expect("the writer to the agent is gone");
        let _ = written.await;
    }

    pub async fn send(&mut self, msg: Value) {
        self.send_line(&msg.to_string()).await;
    }

    /// Sends a request; returns its id.
    pub async fn request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        id
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await;
    }

    /// Ends the client's side: the agent sees EOF on stdin.
    pub fn close_stdin(&mut self) {
        if !self.closed {
            let _ = self.out.send(Out::Close);
            self.closed = true;
        }
    }

    /// The next message from the agent; `None` once its stdout is closed. Requests are not answered here.
    pub async fn next_raw(&mut self) -> Option<Value> {
        let v = tokio::time::timeout(WAIT, self.rx.recv()).await.expect("no message from the agent in time")?;
        self.received.push(v.clone());
        Some(v)
    }

    /// Reads until the message `stop` accepts, answering the agent's requests on the way.
    pub async fn until(&mut self, mut stop: impl FnMut(&Value) -> bool) -> Value {
        loop {
            let v = self.next_raw().await.expect("the agent closed its output");
            if stop(&v) {
                return v;
            }
            self.answer_if_request(&v).await;
        }
    }

    pub async fn answer_if_request(&mut self, v: &Value) {
        let (Some(id), Some(method)) = (v.get("id"), v.get("method").and_then(Value::as_str)) else { return };
        let answer = match self.terminals.as_mut() {
            Some(terminals) if method.starts_with("terminal/") => {
                match terminals.handle(id, method, &v["params"], &self.out) {
                    Some(answer) => answer,
                    None => return,
                }
            }
            _ => (self.on_request)(method, &v["params"]),
        };
        let msg = match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        };
        self.send(msg).await;
    }

    /// The response to request `id` (result or error object), answering requests meanwhile.
    pub async fn response(&mut self, id: i64) -> Value {
        self.until(|v| v.get("id") == Some(&json!(id)) && v.get("method").is_none()).await
    }

    /// A request and its response's `result`; panics on an error response.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        let r = self.response(id).await;
        match r.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {r}"),
        }
    }

    /// A request expected to fail: its `error` object.
    pub async fn call_err(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        let r = self.response(id).await;
        r.get("error").cloned().unwrap_or_else(|| panic!("{method} should have failed: {r}"))
    }

    /// `initialize` with the given file system capabilities.
    pub async fn initialize(&mut self, read: bool, write: bool) -> Value {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": read, "writeTextFile": write}}}),
        )
        .await
    }

    /// `initialize` offering terminals (no client file system): shell commands then run here, for real.
    pub async fn initialize_with_terminal(&mut self) -> Value {
        self.terminals = Some(Terminals::default());
        self.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}})).await
    }

    /// From now on `terminal/create` is refused (terminals must have been offered).
    pub fn refuse_terminals(&mut self) {
        self.terminals.as_mut().expect("terminals were not offered").refuse = true;
    }

    pub async fn new_session(&mut self, cwd: &Path) -> String {
        let r = self.call("session/new", json!({"cwd": cwd, "mcpServers": []})).await;
        r["sessionId"].as_str().expect("sessionId").to_string()
    }

    /// Sends a prompt and reads to its answer; returns the response and the `session/update`s of the turn.
    pub async fn prompt(&mut self, session: &str, text: &str) -> (Value, Vec<Value>) {
        let from = self.received.len();
        let id = self
            .request("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}))
            .await;
        let r = self.response(id).await;
        (r, self.updates_since(from))
    }

    /// The `update` objects of the `session/update` notifications received since index `from`.
    pub fn updates_since(&self, from: usize) -> Vec<Value> {
        self.received[from..]
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// Waits for the agent to exit (after EOF, say); its exit status code.
    pub async fn wait_exit(&mut self) -> Option<i32> {
        let status = tokio::time::timeout(WAIT, self.child.wait()).await.expect("the agent did not exit").ok()?;
        status.code()
    }
}

/// The updates of one kind (`agent_message_chunk`, `tool_call`, ...).
pub fn of_kind<'a>(updates: &'a [Value], kind: &str) -> Vec<&'a Value> {
    updates.iter().filter(|u| u["sessionUpdate"] == kind).collect()
}

/// The `tool_call_update`s that end a call (`completed` or `failed`), leaving out those that start one.
pub fn finished(updates: &[Value]) -> Vec<&Value> {
    of_kind(updates, "tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "completed" || u["status"] == "failed")
        .collect()
}

/// The statuses one call went through, in order: its `tool_call`'s (absent is `pending`, the protocol's
/// default), then each update's that has one.
pub fn statuses<'a>(updates: &'a [Value], call: &str) -> Vec<&'a str> {
    updates
        .iter()
        .filter(|u| u["toolCallId"] == call)
        .filter_map(|u| match u["sessionUpdate"].as_str() {
            Some("tool_call") => Some(u["status"].as_str().unwrap_or("pending")),
            Some("tool_call_update") => u["status"].as_str(),
            _ => None,
        })
        .collect()
}

/// The text of the chunks of one kind, joined.
pub fn chunks(updates: &[Value], kind: &str) -> String {
    of_kind(updates, kind).iter().filter_map(|u| u["content"]["text"].as_str()).collect()
}

/// The environment of an agent that talks to `mock` and saves its sessions in `state`.
pub fn agent_env(mock: &crate::mock::MockModel, state: &crate::TempDir) -> Vec<(&'static str, String)> {
    vec![
        ("ANTHROPIC_BASE_URL", mock.url()),
        ("ANTHROPIC_API_KEY", "acp-key".into()),
        ("MODEL_ID", "acp-model".into()),
        ("STEPWISE_RETRY_BASE_MS", "10".into()),
        ("STEPWISE_STATE_DIR", state.path().display().to_string()),
    ]
}

impl AcpClient {
    /// The agent started in `ws`, initialized (no client file system), with a new session there.
    pub async fn with_session(ws: &Path, env: &[(&str, String)]) -> (AcpClient, String) {
        let mut client = AcpClient::spawn(ws, env);
        client.initialize(false, false).await;
        let sid = client.new_session(ws).await;
        (client, sid)
    }
}
