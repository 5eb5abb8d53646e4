//! Input hygiene around tower-lsp.
//!
//! tower-lsp's reader stops for good at the first frame it cannot decode (tokio-util's `FramedRead` ends
//! its stream after a decoder error), so one malformed message would silently end the session. Frames are
//! checked here first; a bad one is replaced by a request to [`INVALID_MESSAGE`], whose handler answers
//! with the JSON-RPC error the client should get. Such errors must carry the id `null`, but tower-lsp
//! refuses two requests in flight with the same id, so the substitutes carry unique marker ids that are
//! turned back into `null` on the way out.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tower_lsp_server::jsonrpc::{ErrorCode, Request, Response};

/// The internal method a malformed frame is turned into.
pub const INVALID_MESSAGE: &str = "$/stepwise/invalidMessage";
/// Ids of substitutes that must reach the client as `null` start with this.
const NULL_ID_MARK: &str = "$/stepwise/null-id/";
/// Ids tower-lsp cannot hold (1.5, 2^63, 1e300) travel as this prefix and their JSON text, and are
/// restored on the way out, so the client's request is answered under its own id.
const RAW_ID_MARK: &str = "$/stepwise/raw-id/";
/// The largest message body read; a larger one is answered with an error and skipped.
const MAX_FRAME: usize = 64 * 1024 * 1024;
/// The longest header line kept; the rest of a longer one is skipped.
const MAX_HEADER_LINE: u64 = 8 * 1024;
/// How tower-lsp begins an error response (fields in declaration order).
const ERROR_RESPONSE: &[u8] = b"{\"jsonrpc\":\"2.0\",\"error\":";

/// The params of an [`INVALID_MESSAGE`] request: the error its answer carries.
#[derive(Deserialize)]
pub struct InvalidMessage {
    pub code: i64,
    pub message: String,
}

/// Reads one frame's headers; `None` at end of input, `Some(None)` for a header block without a
/// usable `Content-Length`. Stray empty lines before a header are skipped.
async fn read_headers<R: AsyncBufReadExt + Unpin>(
    r: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<Option<usize>>> {
    let mut length = None;
    let mut seen_header = false;
    loop {
        line.clear();
        if (&mut *r).take(MAX_HEADER_LINE).read_until(b'\n', line).await? == 0 {
            return Ok(None);
        }
        if !line.ends_with(b"\n") && line.len() as u64 == MAX_HEADER_LINE {
            // An endless header line: skip to its end in bounded pieces; the frame has no usable length.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                if (&mut *r).take(MAX_HEADER_LINE).read_until(b'\n', &mut rest).await? == 0 {
                    return Ok(None);
                }
                if rest.ends_with(b"\n") {
                    break;
                }
            }
            seen_header = true;
            length = None;
            continue;
        }
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if seen_header {
                return Ok(Some(length));
            }
            continue;
        }
        seen_header = true;
        if let Some((name, value)) = text.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok();
            }
        }
    }
}

async fn write_frame<W: AsyncWrite + Unpin>(out: &mut W, body: &[u8]) -> std::io::Result<()> {
    out.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).await?;
    out.write_all(body).await
}

/// Copies LSP frames from the client to the server, replacing undecodable ones. Returns at end of input.
pub async fn forward<I, W>(input: I, out: &mut W) -> std::io::Result<()>
where
    I: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut r = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    while let Some(length) = read_headers(&mut r, &mut line).await? {
        let body = match length {
            Some(n) if n > MAX_FRAME => {
                // Never allocated: answered at once, then skipped in bounded pieces (or input ends first).
                let message = format!("message of {n} bytes is over the {} MB limit", MAX_FRAME / (1024 * 1024));
                write_frame(out, &substitute(None, ErrorCode::InvalidRequest, &message)).await?;
                out.flush().await?;
                let skipped = tokio::io::copy(&mut (&mut r).take(n as u64), &mut tokio::io::sink()).await?;
                if (skipped as usize) < n {
                    return Ok(());
                }
                continue;
            }
            Some(n) => {
                let mut body = vec![0u8; n];
                if r.read_exact(&mut body).await.is_err() {
                    return Ok(());
                }
                check(body)
            }
            // Without a length the body cannot be found; the next header block starts afresh.
            None => substitute(None, ErrorCode::ParseError, "missing or invalid Content-Length header"),
        };
        write_frame(out, &body).await?;
        out.flush().await?;
    }
    Ok(())
}

/// Copies LSP frames from the server to the client, giving substitutes' answers their `null` id back.
pub async fn deliver<R, O>(from_server: R, output: O) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    O: AsyncWrite,
{
    tokio::pin!(output);
    let mut r = BufReader::with_capacity(64 * 1024, from_server);
    let mut line = Vec::new();
    while let Some(length) = read_headers(&mut r, &mut line).await? {
        let Some(n) = length else { continue };
        let mut body = vec![0u8; n];
        r.read_exact(&mut body).await?;
        if body.starts_with(ERROR_RESPONSE) {
            body = restore_id(body);
        }
        write_frame(&mut output, &body).await?;
        // Batch what is already waiting; flush when caught up.
        if r.buffer().is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await?;
    output.shutdown().await
}

fn restore_id(body: Vec<u8>) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(&body) else { return body };
    let Some(id) = v.get("id").and_then(Value::as_str) else { return body };
    let restored = if id.starts_with(NULL_ID_MARK) {
        Value::Null
    } else if let Some(raw) = id.strip_prefix(RAW_ID_MARK) {
        serde_json::from_str(raw).unwrap_or(Value::Null)
    } else {
        return body;
    };
    v["id"] = restored;
    serde_json::to_vec(&v).unwrap_or(body)
}

/// An id tower-lsp can carry (a string or an i64), else its marked JSON text.
fn carried_id(id: &Value) -> Option<Value> {
    match id {
        Value::String(_) => Some(id.clone()),
        Value::Number(n) if n.is_i64() => Some(id.clone()),
        Value::Number(n) => Some(json!(format!("{RAW_ID_MARK}{n}"))),
        _ => None,
    }
}

/// The top-level `"id"` of a JSON object too deep (or too broken) for the parser, by a shallow scan:
/// nested values are skipped by counting brackets outside strings.
fn shallow_id(body: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut i = 0;
    let mut key_start = None;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < body.len() && body[i] != b'"' {
                    i += if body[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 {
                    key_start = Some((start, i));
                }
            }
            b'{' | b'[' => {
                depth += 1;
                key_start = None;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b':' if depth == 1 => {
                if let Some((s, e)) = key_start.take() {
                    if &body[s..=e.min(body.len() - 1)] == b"\"id\"" {
                        let rest = &body[i + 1..];
                        let end = rest.iter().position(|b| *b == b',' || *b == b'}').unwrap_or(rest.len());
                        return serde_json::from_slice(rest[..end].trim_ascii()).ok();
                    }
                }
            }
            b',' => key_start = None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The body itself when tower-lsp can decode it, else the substitute request.
fn check(body: Vec<u8>) -> Vec<u8> {
    if let Ok(req) = serde_json::from_slice::<Request>(&body) {
        // tower-lsp never answers an unknown `$/` request, yet the spec wants MethodNotFound for it.
        let unknown_dollar = req.method().starts_with("$/") && req.method() != INVALID_MESSAGE;
        if let (true, Some(id)) = (unknown_dollar, req.id()) {
            let id = serde_json::to_value(id).ok();
            return substitute(id, ErrorCode::MethodNotFound, &format!("unknown method: {}", req.method()));
        }
        return body;
    }
    if serde_json::from_slice::<Response>(&body).is_ok() {
        return body;
    }
    let text = match std::str::from_utf8(&body) {
        Ok(t) => t,
        Err(_) => return substitute(None, ErrorCode::ParseError, "message body is not UTF-8"),
    };
    match serde_json::from_str::<Value>(text) {
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
            let id = shallow_id(&body).as_ref().and_then(carried_id);
            substitute(id, ErrorCode::InvalidRequest, "message nested too deeply")
        }
        Err(e) => substitute(None, ErrorCode::ParseError, &format!("message body is not JSON: {e}")),
        Ok(v) => {
            // Answer a broken request under its own id, so the client's request does not hang.
            let id = match (v.get("method"), v.get("id")) {
                (Some(_), Some(id)) => carried_id(id),
                _ => None,
            };
            let message = match v.get("id") {
                Some(Value::Number(n)) if !n.is_i64() => "request ids must be strings or integers",
                _ => "not a valid JSON-RPC 2.0 message",
            };
            substitute(id, ErrorCode::InvalidRequest, message)
        }
    }
}

fn substitute(id: Option<Value>, code: ErrorCode, message: &str) -> Vec<u8> {
    static N: AtomicU64 = AtomicU64::new(0);
    tracing::warn!("answering a client message with an error: {message}");
    let id = id.unwrap_or_else(|| json!(format!("{NULL_ID_MARK}{}", N.fetch_add(1, Ordering::Relaxed))));
    let req = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": INVALID_MESSAGE,
        "params": {"code": code.code(), "message": message},
    });
    serde_json::to_vec(&req).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_bodies_become_substitutes() {
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#.to_vec();
        assert_eq!(check(ok.clone()), ok);
        for (body, code) in [
            (&b"{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": "[..], -32700),
            (&b"\xff\xfe"[..], -32700),
            (&b"[1, 2, 3]"[..], -32600),
            (&b"{\"id\": 3, \"method\": \"x\"}"[..], -32600),
        ] {
            let v: Value = serde_json::from_slice(&check(body.to_vec())).unwrap();
            assert_eq!(v["method"], INVALID_MESSAGE);
            assert_eq!(v["params"]["code"], code);
            assert!(serde_json::from_value::<Request>(v).is_ok());
        }
        let v: Value = serde_json::from_slice(&check(b"{\"id\": 3, \"method\": \"x\"}".to_vec())).unwrap();
        assert_eq!(v["id"], 3);
    }

    #[test]
    fn unknown_dollar_requests_get_method_not_found() {
        let v: Value =
            serde_json::from_slice(&check(br#"{"jsonrpc":"2.0","id":"a","method":"$/unknown"}"#.to_vec())).unwrap();
        assert_eq!(v["method"], INVALID_MESSAGE);
        assert_eq!(v["id"], "a");
        assert_eq!(v["params"]["code"], -32601);
        // `$/` notifications pass untouched.
        let note = br#"{"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"off"}}"#.to_vec();
        assert_eq!(check(note.clone()), note);
    }

    #[test]
    fn marked_ids_go_out_as_null() {
        let marked = format!(r#"{{"jsonrpc":"2.0","error":{{"code":-32700,"message":"m"}},"id":"{NULL_ID_MARK}7"}}"#);
        let v: Value = serde_json::from_slice(&restore_id(marked.into_bytes())).unwrap();
        assert_eq!(v["id"], Value::Null);
        let other = br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"m"},"id":5}"#.to_vec();
        assert_eq!(restore_id(other.clone()), other);
    }

    #[test]
    fn ids_tower_lsp_cannot_hold_are_answered_under_their_own_id() {
        for raw in ["1.5", "9223372036854775808", "1e300", "-0.5"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"shutdown"}}"#);
            let sub: Value = serde_json::from_slice(&check(body.into_bytes())).unwrap();
            // The substitute itself is a request tower-lsp can decode.
            assert!(serde_json::from_value::<Request>(sub.clone()).is_ok(), "{sub}");
            let answer = json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "m"}, "id": sub["id"]});
            let back: Value = serde_json::from_slice(&restore_id(serde_json::to_vec(&answer).unwrap())).unwrap();
            let want: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(back["id"], want, "{raw}");
        }
    }

    #[test]
    fn a_deeply_nested_request_keeps_its_id() {
        let deep =
            format!(r#"{{"jsonrpc":"2.0","method":"x","params":{}1{},"id":42}}"#, "[".repeat(200), "]".repeat(200));
        let sub: Value = serde_json::from_slice(&check(deep.into_bytes())).unwrap();
        assert_eq!(sub["id"], 42);
        assert_eq!(sub["params"]["message"], "message nested too deeply");
        assert_eq!(shallow_id(br#"{"a":{"id":1},"s":"\"id\":2","id":"top"}"#), Some(json!("top")));
    }

    /// A seeded generator (xorshift): the same cases on every run, no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
    }

    /// One hostile message: a well-formed frame, a broken body, a lying or missing length, a long
    /// header line, odd ids, deep nesting, or raw garbage.
    fn hostile(rng: &mut Rng) -> Vec<u8> {
        let frame = |body: &[u8]| {
            let mut f = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
            f.extend_from_slice(body);
            f
        };
        let ids = ["1", "\"a\"", "1.5", "9223372036854775808", "1e300", "-7", "null", "[1]", "{}"];
        let id = ids[rng.below(ids.len() as u64) as usize];
        match rng.below(9) {
            0 => frame(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"stepwise/x","params":{{}}}}"#).as_bytes()),
            1 => frame(format!(r#"{{"jsonrpc":"2.0","method":"$/n","params":{{"id":{id}}}}}"#).as_bytes()),
            2 => {
                let n = rng.below(400) as usize;
                frame(
                    format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"method":"m","params":{}0{}}}"#,
                        "[".repeat(n),
                        "]".repeat(n)
                    )
                    .as_bytes(),
                )
            }
            3 => {
                let bytes: Vec<u8> = (0..rng.below(300)).map(|_| rng.next() as u8).collect();
                frame(&bytes)
            }
            4 => {
                let body = br#"{"jsonrpc":"2.0","id":3,"method":"x"}"#;
                let lie = body.len() as i64 + rng.below(9) as i64 - 4;
                let mut f = format!("Content-Length: {}\r\n\r\n", lie.max(0)).into_bytes();
                f.extend_from_slice(body);
                f
            }
            5 => {
                format!("Content-Length: {}\r\n\r\n", [u64::MAX, 1 << 63, 1 << 40][rng.below(3) as usize]).into_bytes()
            }
            6 => {
                let mut f = vec![b'H'; rng.below(20_000) as usize];
                f.extend_from_slice(b": v\r\n\r\n");
                f
            }
            7 => b"Content-Type: x\r\n\r\n{}".to_vec(),
            _ => (0..rng.below(64)).map(|_| rng.next() as u8).collect(),
        }
    }

    /// Every frame `forward` writes is one tower-lsp can decode, whatever came in; it never panics and
    /// never allocates a claimed length it has not received.
    #[tokio::test]
    async fn fuzz_forward_only_emits_decodable_frames() {
        let mut rng = Rng(0x5eed_1234_abcd_0001);
        let mut frames = 0;
        for case in 0..1500 {
            let mut input = Vec::new();
            for _ in 0..1 + rng.below(6) {
                input.extend(hostile(&mut rng));
            }
            let mut out: Vec<u8> = Vec::new();
            let _ = forward(&input[..], &mut out).await;
            let mut rest = &out[..];
            while !rest.is_empty() {
                let head_end = rest.windows(4).position(|w| w == b"\r\n\r\n").expect("a header block");
                let head = std::str::from_utf8(&rest[..head_end]).unwrap();
                let n: usize = head.trim_start_matches("Content-Length: ").parse().unwrap();
                let body = &rest[head_end + 4..head_end + 4 + n];
                let ok =
                    serde_json::from_slice::<Request>(body).is_ok() || serde_json::from_slice::<Response>(body).is_ok();
                assert!(ok, "case {case}: undecodable frame {:?}", String::from_utf8_lossy(body));
                rest = &rest[head_end + 4 + n..];
                frames += 1;
            }
        }
        assert!(frames > 1500, "the cases should produce frames ({frames})");
    }
}
