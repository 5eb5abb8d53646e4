//! JSON-RPC 2.0, the client's end: ids for our requests, the table of those waiting for an answer (filled
//! by whichever transport reads the server's messages, in any order), and the server's own requests
//! answered. When the connection goes, every waiting request ends at once, saying why.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use crate::locks::lock;

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The server answered with a JSON-RPC error.
    Rpc { code: i64, message: String },
    /// The connection is gone: this request and every later one fail so.
    Closed(String),
    /// This request failed on its way (an HTTP status, an answer that could not be read).
    Failed(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Rpc { code, message } => write!(f, "error {code}: {message}"),
            Error::Closed(why) | Error::Failed(why) => f.write_str(why),
        }
    }
}

pub type Answer = Result<Value, Error>;

#[derive(Default)]
struct Table {
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
    closed: Option<String>,
}

/// One connection's requests in flight.
pub struct Peer {
    /// The server's name, for the log.
    pub name: String,
    next: AtomicU64,
    table: Mutex<Table>,
}

impl Peer {
    pub fn new(name: &str) -> Peer {
        Peer { name: name.to_string(), next: AtomicU64::new(1), table: Mutex::default() }
    }

    /// A new request's id, and where its answer will come; `Err` once the connection is gone.
    pub fn register(&self) -> Result<(u64, oneshot::Receiver<Answer>), Error> {
        let mut t = lock(&self.table);
        if let Some(why) = &t.closed {
            return Err(Error::Closed(why.clone()));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        t.waiting.insert(id, tx);
        Ok((id, rx))
    }

    /// The caller stopped waiting: a late answer is dropped.
    pub fn forget(&self, id: u64) {
        lock(&self.table).waiting.remove(&id);
    }

    pub fn waits_for(&self, id: u64) -> bool {
        lock(&self.table).waiting.contains_key(&id)
    }

    /// Ends one request with `error` (its answer could not be read).
    pub fn fail(&self, id: u64, error: Error) {
        if let Some(tx) = lock(&self.table).waiting.remove(&id) {
            let _ = tx.send(Err(error));
        }
    }

    /// The connection is gone: every waiting request ends with `why`, and so does every later one.
    pub fn close(&self, why: &str) {
        let mut t = lock(&self.table);
        let why = t.closed.get_or_insert_with(|| why.to_string()).clone();
        for (_, tx) in t.waiting.drain() {
            let _ = tx.send(Err(Error::Closed(why.clone())));
        }
    }

    /// Takes one message from the server: an answer goes to its request; a request of the server's own is
    /// answered (the return value, to send back); a notification is only logged.
    pub fn take(&self, msg: Value) -> Option<Value> {
        let Value::Object(mut m) = msg else {
            tracing::warn!("MCP server {}: skipped a message that is not a JSON-RPC object: {}", self.name, cut(&msg));
            return None;
        };
        let id = m.remove("id").filter(|id| !id.is_null());
        match (m.get("method").and_then(Value::as_str), id) {
            (Some(method), Some(id)) => Some(answer(id, method)),
            (Some(method), None) => {
                tracing::debug!("MCP server {}: notification {method}", self.name);
                None
            }
            (None, Some(id)) => {
                self.answered(id, m);
                None
            }
            (None, None) => {
                let msg = Value::Object(m);
                tracing::warn!("MCP server {}: skipped a message with no id and no method: {}", self.name, cut(&msg));
                None
            }
        }
    }

    fn answered(&self, id: Value, mut m: Map<String, Value>) {
        // Ours are numbers; a server that echoes one as a string is understood too.
        let ours = id.as_u64().or_else(|| id.as_str().and_then(|s| s.parse().ok()));
        let Some(tx) = ours.and_then(|id| lock(&self.table).waiting.remove(&id)) else {
            tracing::debug!("MCP server {}: an answer to no request waiting ({id})", self.name);
            return;
        };
        let answer = match m.remove("error") {
            Some(e) => Err(Error::Rpc {
                code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: e.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
            }),
            None => Ok(m.remove("result").unwrap_or(Value::Null)),
        };
        let _ = tx.send(answer);
    }
}

/// Forgets a request's id when dropped, however its wait ends.
pub struct Forget<'a>(pub &'a Peer, pub u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.forget(self.1);
    }
}

/// A client answers `ping`; it offers nothing else a server may ask for (no sampling, roots, elicitation).
fn answer(id: Value, method: &str) -> Value {
    if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("Method not found: {method}")}})
    }
}

pub fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// A message as the log shows it: its start.
pub fn cut(msg: &impl std::fmt::Display) -> String {
    crate::host::output::truncate_chars(&msg.to_string(), 200).to_string()
}
