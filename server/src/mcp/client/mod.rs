//! The MCP client (protocol 2025-06-18, the client side only): the handshake, the tool list and tool calls,
//! over stdio (stdio.rs) or streamable HTTP (http.rs), JSON-RPC in rpc.rs.
//!
//! Hand-written on purpose: the official SDK (`rmcp`) cost 1.44 MB of the release binary (its own code about
//! 0.6 MB, the rest its types' code built in ours and crates only it pulled in: docs/benchmarks.md), and what
//! a client needs of MCP is JSON-RPC over those two transports, a few methods and a `ping` answered. Calls
//! run side by side (subagents call tools at once); each waits on its own id, answered in any order; when
//! the server goes, every call waiting ends at once, saying so.

mod http;
mod rpc;
mod sse;
mod stdio;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

pub use http::Http;
pub use rpc::Error;

use super::result::CallResult;
use rpc::Peer;

/// The protocol version asked for; the server may answer with another, which is then used.
const PROTOCOL_VERSION: &str = "2025-06-18";
/// The most pages of a tool list read (a server whose cursor never ends).
const MAX_PAGES: usize = 100;

/// What a server's tool list says of one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Map<String, Value>,
}

/// A connection to one server.
pub struct Client {
    peer: Arc<Peer>,
    transport: Transport,
    /// Reads a stdio server's messages; stopped with the client.
    _reader: Option<Reader>,
}

enum Transport {
    /// The lines to write to its stdin, in order.
    Stdio(mpsc::UnboundedSender<Vec<u8>>),
    Http(Http),
}

struct Reader(tokio::task::JoinHandle<()>);

impl Drop for Reader {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `initialize`'s parameters: the shape the SDK sent (no capabilities: the client offers the server nothing).
fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "stepwise", "version": env!("CARGO_PKG_VERSION")}
    })
}

impl Client {
    /// A server on the other end of `out` (its stdout) and `input` (its stdin), named `name` in the log.
    pub fn stdio<R, W>(out: R, input: W, name: &str) -> Client
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let peer = Arc::new(Peer::new(name));
        let (lines, queue) = mpsc::unbounded_channel();
        tokio::spawn(stdio::write(input, queue, peer.clone()));
        let reader = tokio::spawn(stdio::read(out, peer.clone(), lines.clone()));
        Client { peer, transport: Transport::Stdio(lines), _reader: Some(Reader(reader)) }
    }

    pub fn http(http: Http, name: &str) -> Client {
        Client { peer: Arc::new(Peer::new(name)), transport: Transport::Http(http), _reader: None }
    }

    /// The handshake: `initialize`, then `notifications/initialized`.
    pub async fn initialize(&self) -> Result<(), Error> {
        let result = self.request("initialize", initialize_params()).await?;
        if let Transport::Http(h) = &self.transport {
            h.agreed(&result);
        }
        self.notify(rpc::notification("notifications/initialized", json!({}))).await
    }

    /// Every tool the server lists, page after page.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params).await?;
            let Some(list) = page.get("tools").and_then(Value::as_array) else {
                return Err(Error::Failed(format!("its answer holds no list of tools: {}", rpc::cut(&page))));
            };
            tools.extend(list.iter().filter_map(|t| self.tool(t)));
            cursor = page.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()).map(str::to_string);
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        tracing::warn!(
            "MCP server {}: its tool list goes on past {MAX_PAGES} pages; the rest is left out",
            self.peer.name
        );
        Ok(tools)
    }

    fn tool(&self, t: &Value) -> Option<Tool> {
        let Some(name) = t.get("name").and_then(Value::as_str) else {
            tracing::warn!("MCP server {}: a tool without a name left out: {}", self.peer.name, rpc::cut(t));
            return None;
        };
        Some(Tool {
            name: name.to_string(),
            description: t.get("description").and_then(Value::as_str).map(str::to_string),
            input_schema: t.get("inputSchema").and_then(Value::as_object).cloned().unwrap_or_default(),
        })
    }

    /// Calls a tool. Dropped before the answer (a timeout, a cancelled run), the server is told.
    pub async fn call_tool(&self, name: &str, arguments: Map<String, Value>) -> Result<CallResult, Error> {
        let result = self.request("tools/call", json!({"name": name, "arguments": arguments})).await?;
        serde_json::from_value(result).map_err(|e| Error::Failed(format!("its answer is not a tool's result: {e}")))
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        let (id, answer) = self.peer.register()?;
        // `initialize` is never cancelled (the spec forbids it): dropped, it is only forgotten.
        let mut waiting = InFlight { client: self, id, cancel: method != "initialize", done: false };
        let msg = rpc::request(id, method, params);
        let sent = match &self.transport {
            Transport::Stdio(lines) => send_line(lines, &msg),
            Transport::Http(h) => h.request(&self.peer, id, &msg).await,
        };
        if let Err(e) = sent {
            waiting.cancel = false;
            return Err(e);
        }
        let answer = answer.await.unwrap_or_else(|_| Err(Error::Closed("the connection ended".into())));
        waiting.done = true;
        answer
    }

    async fn notify(&self, msg: Value) -> Result<(), Error> {
        match &self.transport {
            Transport::Stdio(lines) => send_line(lines, &msg),
            Transport::Http(h) => h.notify(&self.peer, &msg).await,
        }
    }
}

fn send_line(lines: &mpsc::UnboundedSender<Vec<u8>>, msg: &Value) -> Result<(), Error> {
    lines.send(stdio::frame(msg)).map_err(|_| Error::Closed("its stdin is closed".into()))
}

/// A request waiting for its answer. Given up (dropped before it), the id is forgotten and the server told
/// (`notifications/cancelled`), so it can stop the work.
struct InFlight<'a> {
    client: &'a Client,
    id: u64,
    cancel: bool,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.client.peer.forget(self.id);
        if !self.cancel {
            return;
        }
        let reason = "the client stopped waiting (timed out or cancelled)";
        let msg = rpc::notification("notifications/cancelled", json!({"requestId": self.id, "reason": reason}));
        match &self.client.transport {
            Transport::Stdio(lines) => {
                let _ = send_line(lines, &msg);
            }
            Transport::Http(h) => h.notify_later(msg),
        }
    }
}
