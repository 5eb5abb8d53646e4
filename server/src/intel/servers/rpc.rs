//! JSON-RPC over a language server's stdio, client side.
//!
//! Hand-written on purpose: the framing is two headers and a body, and what a client needs beyond it is a
//! table of pending requests. `async-lsp` would bring a tower stack for that, and `lsp-server` is
//! synchronous (a thread per server, crossbeam channels); this is ~150 lines on the tokio already here.
//! A message larger than `MAX_MESSAGE` ends the connection (memory stays bounded).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// The largest message read (a server flooding diagnostics stays under it; one that passes it is dropped).
const MAX_MESSAGE: usize = 64 << 20;

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, String>>>>>;

/// A notification or request the server sent: method and params (requests are answered by the reader).
pub struct Incoming {
    pub method: String,
    pub params: Value,
}

/// The client end of one connection. Dropping it closes the server's stdin.
pub struct Conn {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next: AtomicI64,
}

impl Conn {
    /// Starts the reader and writer tasks; `incoming` receives the server's notifications, and
    /// `closed` is told when the server's stdout ends (it exited or crashed).
    pub fn start<R, W>(
        reader: R,
        writer: W,
        incoming: mpsc::UnboundedSender<Incoming>,
        closed: oneshot::Sender<()>,
    ) -> Arc<Conn>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let pending: Pending = Arc::default();
        let conn = Arc::new(Conn { out: out.clone(), pending: pending.clone(), next: AtomicI64::new(1) });
        tokio::spawn(async move {
            let mut writer = writer;
            while let Some(bytes) = rx.recv().await {
                if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                    break;
                }
            }
        });
        tokio::spawn(async move {
            let mut reader = BufReader::new(reader);
            while let Some(msg) = read_message(&mut reader).await {
                dispatch(msg, &pending, &out, &incoming);
            }
            // Every waiting request learns the server is gone.
            for (_, tx) in crate::locks::lock(&pending).drain() {
                let _ = tx.send(Err("the server exited".into()));
            }
            let _ = closed.send(());
        });
        conn
    }

    /// A request, answered within `timeout` (else `Err` naming the wait).
    pub async fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        crate::locks::lock(&self.pending).insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err("the server exited".into()),
            Err(_) => {
                crate::locks::lock(&self.pending).remove(&id);
                self.notify("$/cancelRequest", json!({"id": id}));
                Err(format!("no answer in {} ms", timeout.as_millis()))
            }
        }
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn send(&self, msg: &Value) {
        let _ = self.out.send(frame(msg));
    }
}

fn frame(msg: &Value) -> Vec<u8> {
    let body = msg.to_string();
    let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// One message, or `None` at the end of the stream or on a frame that cannot be read.
async fn read_message<R: tokio::io::AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Option<Value> {
    loop {
        let mut length: Option<usize> = None;
        let mut line = String::new();
        loop {
            line.clear();
            // Header lines are short; a server writing a huge one without a newline is cut off here.
            let n = (&mut *reader).take(4096).read_line(&mut line).await.ok()?;
            if n == 0 {
                return None;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.strip_prefix("Content-Length:").or_else(|| l.strip_prefix("content-length:")) {
                length = v.trim().parse().ok();
            }
        }
        let len = length?;
        if len > MAX_MESSAGE {
            tracing::warn!("language server sent a message of {len} bytes; closing the connection");
            return None;
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body).await.ok()?;
        match serde_json::from_slice(&body) {
            Ok(v) => return Some(v),
            Err(e) => tracing::warn!("language server sent a message that is not JSON: {e}"),
        }
    }
}

fn dispatch(
    msg: Value,
    pending: &Pending,
    out: &mpsc::UnboundedSender<Vec<u8>>,
    incoming: &mpsc::UnboundedSender<Incoming>,
) {
    let method = msg.get("method").and_then(Value::as_str).map(str::to_string);
    let id = msg.get("id").cloned();
    match (method, id) {
        // An answer to one of ours.
        (None, Some(id)) => {
            let Some(tx) = id.as_i64().and_then(|id| crate::locks::lock(pending).remove(&id)) else { return };
            let answer = match msg.get("error") {
                Some(e) => Err(e.get("message").and_then(Value::as_str).unwrap_or("error").to_string()),
                None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = tx.send(answer);
        }
        // The server asks: the few requests a client must answer, answered plainly.
        (Some(method), Some(id)) => {
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            let result = match method.as_str() {
                "workspace/configuration" => {
                    let n = params.get("items").and_then(Value::as_array).map_or(0, Vec::len);
                    Ok(Value::Array(vec![Value::Null; n]))
                }
                "window/workDoneProgress/create"
                | "client/registerCapability"
                | "client/unregisterCapability"
                | "window/showMessageRequest"
                | "workspace/diagnostic/refresh" => Ok(Value::Null),
                // The agent's edits go through the host: a server does not edit by itself.
                "workspace/applyEdit" => Ok(json!({"applied": false})),
                _ => Err(method.clone()),
            };
            let reply = match result {
                Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
                Err(m) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("{m} is not supported")}}),
            };
            let _ = out.send(frame(&reply));
            let _ = incoming.send(Incoming { method, params });
        }
        (Some(method), None) => {
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            let _ = incoming.send(Incoming { method, params });
        }
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_is_answered_and_a_notification_passes() {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (cr, cw) = tokio::io::split(client);
        let (inc_tx, mut inc_rx) = mpsc::unbounded_channel();
        let (closed_tx, closed_rx) = oneshot::channel();
        let conn = Conn::start(cr, cw, inc_tx, closed_tx);
        let (sr, mut sw) = tokio::io::split(server);
        let mut sr = BufReader::new(sr);
        let ask = tokio::spawn(async move { conn.request("x", json!({}), Duration::from_secs(5)).await });
        let req = read_message(&mut sr).await.expect("a request");
        assert_eq!(req["method"], "x");
        sw.write_all(&frame(&json!({"jsonrpc": "2.0", "method": "n", "params": {"a": 1}}))).await.unwrap();
        sw.write_all(&frame(&json!({"jsonrpc": "2.0", "id": req["id"], "result": 7}))).await.unwrap();
        assert_eq!(ask.await.unwrap(), Ok(json!(7)));
        let n = inc_rx.recv().await.expect("the notification");
        assert_eq!((n.method.as_str(), n.params["a"].as_i64()), ("n", Some(1)));
        drop(sw);
        drop(sr);
        closed_rx.await.expect("closed is told");
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        let (client, _server) = tokio::io::duplex(1 << 16);
        let (cr, cw) = tokio::io::split(client);
        let (inc_tx, _inc_rx) = mpsc::unbounded_channel();
        let (closed_tx, _closed_rx) = oneshot::channel();
        let conn = Conn::start(cr, cw, inc_tx, closed_tx);
        let err = conn.request("x", json!({}), Duration::from_millis(50)).await.unwrap_err();
        assert_eq!(err, "no answer in 50 ms");
    }
}
