//! Stdio: one JSON-RPC message a line, on the server's stdin and stdout. A line that is not JSON is logged
//! and skipped (servers print banners); a line over `MAX_LINE` is not kept, so memory stays bounded: it is
//! skipped, and when its ends show it answers one of our requests, that request fails saying why.

use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::rpc::{cut, Error, Peer};

/// The longest line read (as the HTTP transport's largest answer).
pub const MAX_LINE: usize = super::http::MAX_JSON;
/// How much of a skipped line's start and end is kept to find its id.
const ENDS: usize = 256;

pub fn frame(msg: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(msg).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Writes what is queued, in order; a write that fails ends the connection.
pub async fn write<W: AsyncWrite + Unpin>(mut input: W, mut queue: mpsc::UnboundedReceiver<Vec<u8>>, peer: Arc<Peer>) {
    while let Some(line) = queue.recv().await {
        let written = async {
            input.write_all(&line).await?;
            input.flush().await
        };
        if let Err(e) = written.await {
            peer.close(&format!("writing to it failed: {e}"));
            return;
        }
    }
}

/// Reads the server's messages until its stdout ends, then ends every waiting request. Its own requests
/// are answered through `replies`.
pub async fn read<R: AsyncRead + Unpin>(out: R, peer: Arc<Peer>, replies: mpsc::UnboundedSender<Vec<u8>>) {
    let mut reader = BufReader::with_capacity(64 << 10, out);
    let mut line: Vec<u8> = Vec::new();
    // Past `MAX_LINE`: `line` keeps the line's start, `end` its last bytes.
    let mut over = false;
    let mut end: Vec<u8> = Vec::new();
    let why = loop {
        let (used, ended) = match reader.fill_buf().await {
            Ok([]) => break "it closed its stdout".to_string(),
            Err(e) => break format!("reading from it failed: {e}"),
            Ok(buf) => {
                let (part, used, ended) = match memchr::memchr(b'\n', buf) {
                    Some(i) => (&buf[..i], i + 1, true),
                    None => (buf, buf.len(), false),
                };
                if !over && line.len() + part.len() > MAX_LINE {
                    over = true;
                    line.truncate(ENDS);
                }
                if over {
                    end.extend_from_slice(part);
                    end.drain(..end.len().saturating_sub(ENDS));
                } else {
                    line.extend_from_slice(part);
                }
                (used, ended)
            }
        };
        reader.consume(used);
        if ended {
            if over {
                too_long(&peer, &line, &end);
                over = false;
                end.clear();
                line = Vec::new();
            } else {
                one_line(&peer, &line, &replies);
                // A long line's room is not kept.
                if line.capacity() > 1 << 20 {
                    line = Vec::new();
                } else {
                    line.clear();
                }
            }
        }
    };
    peer.close(&why);
}

fn one_line(peer: &Peer, line: &[u8], replies: &mpsc::UnboundedSender<Vec<u8>>) {
    let line = line.trim_ascii();
    if line.is_empty() {
        return;
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(msg) => {
            if let Some(reply) = peer.take(msg) {
                let _ = replies.send(frame(&reply));
            }
        }
        Err(e) => {
            let text = String::from_utf8_lossy(line);
            tracing::warn!("MCP server {}: skipped a line that is not JSON ({e}): {}", peer.name, cut(&text));
        }
    }
}

fn too_long(peer: &Peer, start: &[u8], end: &[u8]) {
    let mib = MAX_LINE >> 20;
    tracing::warn!("MCP server {}: skipped a message larger than {mib} MiB", peer.name);
    if let Some(id) = top_level_id(start, end) {
        peer.fail(id, Error::Failed(format!("its answer was larger than {mib} MiB")));
    }
}

/// The id of a message too large to read, where its ends show it: the `"id"` a server writes before the
/// message's first nested value or after its last (`{"jsonrpc":"2.0","id":7,"result":…}`,
/// `{"result":…,"jsonrpc":"2.0","id":7}`).
pub fn top_level_id(start: &[u8], end: &[u8]) -> Option<u64> {
    let first = start.iter().skip(1).position(|b| matches!(b, b'{' | b'[')).map_or(start.len(), |i| i + 1);
    let end = end.trim_ascii_end().strip_suffix(b"}").unwrap_or_default();
    let last = end.iter().rposition(|b| matches!(b, b'}' | b']')).map_or(0, |i| i + 1);
    id_in(&start[..first]).or_else(|| id_in(&end[last..]))
}

fn id_in(s: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(s, b"\"id\"")? + 4;
    let rest = s[at..].trim_ascii_start().strip_prefix(b":")?.trim_ascii_start();
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}
