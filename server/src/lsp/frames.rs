//! Input hygiene: tower-lsp's reader stops for good at the first frame it cannot decode (tokio-util's
//! `FramedRead` ends its stream after a decoder error), so one malformed message would silently end the
//! session. Frames are checked here first; a bad one is replaced by a request to
//! [`INVALID_MESSAGE`], whose handler answers with the JSON-RPC error the client should get.

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Request, Response, Result};

/// The internal method a malformed frame is turned into.
pub const INVALID_MESSAGE: &str = "$/stepwise/invalidMessage";

#[derive(Deserialize)]
pub struct InvalidMessage {
    code: i64,
    message: String,
}

impl super::Backend {
    /// The answer to a malformed frame.
    pub async fn invalid_message(&self, p: InvalidMessage) -> Result<Value> {
        Err(Error { code: ErrorCode::from(p.code), message: p.message.into(), data: None })
    }
}

/// Copies LSP frames from `input` to `out`, replacing undecodable ones. Returns at end of input.
pub async fn forward<I, W>(input: I, out: &mut W) -> std::io::Result<()>
where
    I: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut r = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    loop {
        // Headers, up to an empty line. Stray empty lines before a header are skipped.
        let mut length: Option<std::result::Result<usize, ()>> = None;
        let mut seen_header = false;
        loop {
            line.clear();
            if r.read_until(b'\n', &mut line).await? == 0 {
                return Ok(());
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\r', '\n']);
            if text.is_empty() {
                if seen_header {
                    break;
                }
                continue;
            }
            seen_header = true;
            if let Some((name, value)) = text.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = Some(value.trim().parse().map_err(|_| ()));
                }
            }
        }
        let body = match length {
            Some(Ok(n)) => {
                let mut body = vec![0u8; n];
                if r.read_exact(&mut body).await.is_err() {
                    return Ok(());
                }
                check(body)
            }
            // Without a length the body cannot be found; the next header block starts afresh.
            _ => substitute(&Value::Null, ErrorCode::ParseError, "missing or invalid Content-Length header"),
        };
        out.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).await?;
        out.write_all(&body).await?;
        out.flush().await?;
    }
}

/// The body itself when tower-lsp can decode it, else the substitute request.
fn check(body: Vec<u8>) -> Vec<u8> {
    if serde_json::from_slice::<Request>(&body).is_ok() || serde_json::from_slice::<Response>(&body).is_ok() {
        return body;
    }
    let text = match std::str::from_utf8(&body) {
        Ok(t) => t,
        Err(_) => return substitute(&Value::Null, ErrorCode::ParseError, "message body is not UTF-8"),
    };
    match serde_json::from_str::<Value>(text) {
        Err(e) => substitute(&Value::Null, ErrorCode::ParseError, &format!("message body is not JSON: {e}")),
        Ok(v) => {
            // Answer a broken request under its own id, so the client's request does not hang.
            let id = match (v.get("method"), v.get("id")) {
                (Some(_), Some(id @ (Value::Number(_) | Value::String(_)))) => id.clone(),
                _ => Value::Null,
            };
            substitute(&id, ErrorCode::InvalidRequest, "not a valid JSON-RPC 2.0 message")
        }
    }
}

fn substitute(id: &Value, code: ErrorCode, message: &str) -> Vec<u8> {
    tracing::warn!("malformed message from the client: {message}");
    let req = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": INVALID_MESSAGE,
        "params": {"code": code.code(), "message": message},
    });
    serde_json::to_vec(&req).unwrap_or_default()
}
