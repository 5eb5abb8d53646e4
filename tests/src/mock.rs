//! A scripted mock LLM HTTP server.
//!
//! It speaks the real wire formats of the Anthropic Messages API (`POST /v1/messages`) and of
//! OpenAI chat completions (`POST /v1/chat/completions`, also `/chat/completions`), both as a
//! single JSON body and as server-sent events when the request has `"stream": true`.
//! Each model request consumes the next [`Step`] of the [`Script`].
//!
//! HTTP/1.1 is handled by hand over a tokio `TcpListener`: keep-alive, `Content-Length` and
//! chunked request bodies, `Expect: 100-continue`; JSON answers carry `Content-Length`,
//! streams use `Transfer-Encoding: chunked`.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

// ---------------------------------------------------------------------------------------------
// Script
// ---------------------------------------------------------------------------------------------

/// The steps the mock serves, in order. Deserializes from `[...]` or `{"steps": [...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Script(pub Vec<Step>);

impl Script {
    pub fn new(steps: Vec<Step>) -> Script {
        Script(steps)
    }

    /// Parses a script from JSON text (`[...]` or `{"steps": [...]}`).
    pub fn from_json(text: &str) -> Result<Script, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Loads a script from a JSON file.
    pub fn load(path: impl AsRef<Path>) -> std::io::Result<Script> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)?;
        Script::from_json(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))
    }
}

impl From<Vec<Step>> for Script {
    fn from(steps: Vec<Step>) -> Script {
        Script(steps)
    }
}

impl<'de> Deserialize<'de> for Script {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Script, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let list = match value {
            Value::Array(list) => list,
            Value::Object(mut map) => match map.remove("steps") {
                Some(Value::Array(list)) => list,
                _ => return Err(D::Error::custom("a script object needs a \"steps\" array")),
            },
            _ => return Err(D::Error::custom("a script is an array of steps or {\"steps\": [...]}")),
        };
        list.into_iter()
            .enumerate()
            .map(|(i, v)| serde_json::from_value(v).map_err(|e| D::Error::custom(format!("step {i}: {e}"))))
            .collect::<Result<Vec<Step>, _>>()
            .map(Script)
    }
}

/// One scripted answer, tagged by `"type"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    /// One model response.
    Turn(Turn),
    /// An HTTP error status.
    HttpError(HttpError),
    /// Accept the request and never answer.
    Hang,
    /// Start an SSE stream, then drop the connection mid-stream.
    StreamError(StreamError),
    /// Exactly this status, content type and body: what a proxy, a misconfigured or hostile server sends.
    Raw(Raw),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Raw {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Step {
    pub fn raw(status: u16, content_type: impl Into<String>, body: impl Into<String>) -> Step {
        Step::Raw(Raw { status, content_type: content_type.into(), body: body.into() })
    }
}

impl Step {
    /// A turn that only says `text`.
    pub fn text(text: impl Into<String>) -> Step {
        Step::Turn(Turn::text(text))
    }

    /// A turn with one tool call and no text.
    pub fn tool(name: impl Into<String>, input: Value) -> Step {
        Step::Turn(Turn::default().with_tool(name, input))
    }

    /// An HTTP error with the provider's default error body.
    pub fn http_error(status: u16) -> Step {
        Step::HttpError(HttpError::new(status))
    }

    /// A stream cut off after `message_start` (and `text`, if any).
    pub fn stream_error(text: Option<&str>) -> Step {
        Step::StreamError(StreamError { text: text.map(str::to_owned) })
    }
}

/// One model response. See the crate docs for how it is rendered per provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Anthropic or OpenAI spelling; mapped to the other provider's name when needed
    /// (`end_turn`<->`stop`, `tool_use`<->`tool_calls`, `max_tokens`<->`length`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Delay before the response starts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Delay between SSE events.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chunk_delay_ms: u64,
}

impl Turn {
    pub fn text(text: impl Into<String>) -> Turn {
        Turn { text: Some(text.into()), ..Turn::default() }
    }
    pub fn with_text(mut self, text: impl Into<String>) -> Turn {
        self.text = Some(text.into());
        self
    }
    pub fn with_tool(mut self, name: impl Into<String>, input: Value) -> Turn {
        self.tool_calls.push(ToolCall { name: name.into(), input, id: None });
        self
    }
    pub fn with_tool_id(mut self, id: impl Into<String>, name: impl Into<String>, input: Value) -> Turn {
        self.tool_calls.push(ToolCall { name: name.into(), input, id: Some(id.into()) });
        self
    }
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> Turn {
        self.stop_reason = Some(reason.into());
        self
    }
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Turn {
        self.usage = Some(Usage { input_tokens, output_tokens, ..Usage::default() });
        self
    }
    /// Anthropic's split of the prompt: `input` uncached, `read` from the cache, `write` into it.
    /// OpenAI renders `prompt_tokens = input + read + write` with `cached_tokens = read`.
    pub fn with_cache_usage(mut self, input: u64, read: u64, write: u64, output_tokens: u64) -> Turn {
        self.usage = Some(Usage {
            input_tokens: input,
            output_tokens,
            cache_read_input_tokens: read,
            cache_creation_input_tokens: write,
        });
        self
    }
    pub fn with_delay_ms(mut self, ms: u64) -> Turn {
        self.delay_ms = ms;
        self
    }
    pub fn with_chunk_delay_ms(mut self, ms: u64) -> Turn {
        self.chunk_delay_ms = ms;
        self
    }
}

impl From<Turn> for Step {
    fn from(turn: Turn) -> Step {
        Step::Turn(turn)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
}

impl Default for Usage {
    fn default() -> Usage {
        Usage { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }
    }
}

impl Usage {
    fn anthropic(&self, output_tokens: u64) -> Value {
        let mut u = json!({"input_tokens": self.input_tokens, "output_tokens": output_tokens});
        if self.cache_read_input_tokens + self.cache_creation_input_tokens > 0 {
            u["cache_read_input_tokens"] = json!(self.cache_read_input_tokens);
            u["cache_creation_input_tokens"] = json!(self.cache_creation_input_tokens);
        }
        u
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpError {
    pub status: u16,
    /// The response body; default: the provider's error shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Extra response headers (values may be given as JSON numbers).
    #[serde(default, deserialize_with = "string_map", skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

impl HttpError {
    pub fn new(status: u16) -> HttpError {
        HttpError { status, body: None, headers: BTreeMap::new(), delay_ms: 0 }
    }
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> HttpError {
        self.headers.insert(name.into(), value.into());
        self
    }
    pub fn body(mut self, body: Value) -> HttpError {
        self.body = Some(body);
        self
    }
}

impl From<HttpError> for Step {
    fn from(e: HttpError) -> Step {
        Step::HttpError(e)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamError {
    /// Text streamed before the connection drops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn empty_object() -> Value {
    json!({})
}

fn string_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let map = BTreeMap::<String, Value>::deserialize(d)?;
    Ok(map
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (k, v)
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// Recorded requests
// ---------------------------------------------------------------------------------------------

/// One request as the mock received it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    pub method: String,
    /// The request target as sent (including any query string).
    pub path: String,
    /// Header names in lowercase, in the order received.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body, or `Null` when empty or not JSON.
    pub body: Value,
}

impl Recorded {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// `{"method","path","headers":{name: value},"body"}`, as written to the record file.
    pub fn to_json(&self) -> Value {
        let mut headers = serde_json::Map::new();
        for (k, v) in &self.headers {
            match headers.get_mut(k) {
                Some(Value::String(prev)) => {
                    prev.push_str(", ");
                    prev.push_str(v);
                }
                _ => {
                    headers.insert(k.clone(), Value::String(v.clone()));
                }
            }
        }
        json!({"method": self.method, "path": self.path, "headers": headers, "body": self.body})
    }
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// Options for [`MockModel::start_with`].
#[derive(Clone, Debug, Default)]
pub struct MockOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Append each request as one JSON line to this file.
    pub record: Option<PathBuf>,
    /// Log one line per request to stderr.
    pub log: bool,
    /// Turns without scripted usage report estimated tokens (characters / 4) with a simulated prompt
    /// cache: Anthropic's breakpoints, OpenAI's automatic prefix cache (see `mock_cache`).
    pub simulate_usage: bool,
    /// Append one line per request to this file: when it had been read whole and when its answer had been
    /// written whole, in microseconds since the mock started (`{received_us} {answered_us}`). The gap
    /// from one answer to the next request is the client's own time.
    pub timing: Option<PathBuf>,
}

struct Shared {
    steps: Mutex<VecDeque<Step>>,
    requests: Mutex<Vec<Recorded>>,
    count: watch::Sender<usize>,
    next_id: AtomicU64,
    connections: AtomicU64,
    record: Option<Mutex<std::fs::File>>,
    log: bool,
    cache: Option<Mutex<crate::mock_cache::PrefixCache>>,
    timing: Option<(Instant, Mutex<std::fs::File>)>,
}

impl Shared {
    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Records a request and, for a model request, takes its step in the same critical section, so
    /// whoever sees the request recorded also sees its step gone.
    fn record(&self, rec: Recorded, takes_step: bool) -> (usize, Option<Step>) {
        let mut requests = self.requests.lock().unwrap();
        let step = if takes_step { self.steps.lock().unwrap().pop_front() } else { None };
        if let Some(file) = &self.record {
            let mut line = rec.to_json().to_string();
            line.push('\n');
            let mut file = file.lock().unwrap();
            let _ = file.write_all(line.as_bytes());
            let _ = file.flush();
        }
        requests.push(rec);
        let n = requests.len();
        self.count.send_replace(n);
        (n, step)
    }
}

/// The running mock server. Dropping it stops the server and closes its connections.
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for MockModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockModel").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl MockModel {
    /// Starts the server on 127.0.0.1 with a free port. Panics if it cannot bind.
    pub async fn start(script: impl Into<Script>) -> MockModel {
        MockModel::start_with(script, MockOptions::default()).await.expect("mock model: cannot bind 127.0.0.1")
    }

    /// Starts the server with options (fixed port, record file, stderr log).
    pub async fn start_with(script: impl Into<Script>, options: MockOptions) -> std::io::Result<MockModel> {
        let listener = TcpListener::bind(("127.0.0.1", options.port)).await?;
        let addr = listener.local_addr()?;
        let record = match &options.record {
            Some(path) => Some(Mutex::new(std::fs::OpenOptions::new().create(true).append(true).open(path)?)),
            None => None,
        };
        let shared = Arc::new(Shared {
            steps: Mutex::new(script.into().0.into()),
            requests: Mutex::new(Vec::new()),
            count: watch::Sender::new(0),
            next_id: AtomicU64::new(1),
            connections: AtomicU64::new(0),
            record,
            log: options.log,
            cache: options.simulate_usage.then(Default::default),
            timing: match &options.timing {
                Some(path) => Some((Instant::now(), Mutex::new(std::fs::File::create(path)?))),
                None => None,
            },
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(MockModel { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT` (Anthropic base: `POST {url}/v1/messages`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` (OpenAI base: `POST {base}/chat/completions`).
    pub fn openai_base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests have arrived and returns all of them.
    /// Panics with the requests seen so far on timeout.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<Recorded> {
        let mut rx = self.shared.count.subscribe();
        if tokio::time::timeout(timeout, rx.wait_for(|c| *c >= n)).await.is_err() {
            let got = self.requests();
            let seen: Vec<String> = got.iter().map(|r| format!("{} {}", r.method, r.path)).collect();
            panic!("mock model: timed out after {timeout:?} waiting for {n} request(s); got {}: {seen:?}", got.len());
        }
        self.requests()
    }

    /// Appends a step to the script.
    pub fn push(&self, step: impl Into<Step>) {
        self.shared.steps.lock().unwrap().push_back(step.into());
    }

    /// Steps not yet consumed.
    pub fn remaining(&self) -> usize {
        self.shared.steps.lock().unwrap().len()
    }

    /// TCP connections accepted so far (keep-alive reuse shows as fewer connections than requests).
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed) as usize
    }

    /// Stops the server and closes all its connections (also done on drop).
    pub fn shutdown(&self) {
        self.task.abort();
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // The connection tasks live in this JoinSet: aborting this task drops it and aborts them all.
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    shared.connections.fetch_add(1, Ordering::Relaxed);
                    conns.spawn(handle_conn(stream, shared.clone()));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1
// ---------------------------------------------------------------------------------------------

const MAX_HEAD: usize = 1 << 20;

struct Request {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn keep_alive(&self) -> bool {
        let conn = self.header("connection").unwrap_or("").to_ascii_lowercase();
        if self.version == "HTTP/1.0" {
            conn.contains("keep-alive")
        } else {
            !conn.contains("close")
        }
    }
}

fn bad(msg: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.to_owned())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads more bytes into `buf`; errors on EOF.
async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let mut tmp = [0u8; 16 * 1024];
    let n = stream.read(&mut tmp).await?;
    if n == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    buf.extend_from_slice(&tmp[..n]);
    Ok(())
}

/// Reads one request; `Ok(None)` when the client closed the connection between requests.
/// Bytes after the request stay in `buf` for the next one.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<Option<Request>> {
    // Head.
    let head_end = loop {
        // Tolerate stray CRLFs between requests.
        while buf.starts_with(b"\r\n") {
            buf.drain(..2);
        }
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("request head too large"));
        }
        let mut tmp = [0u8; 16 * 1024];
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "eof in request head"))
            };
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    buf.drain(..head_end + 4);

    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split_whitespace();
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if v.starts_with("HTTP/1.") => (m.to_owned(), t.to_owned(), v.to_owned()),
        _ => return Err(bad("bad request line")),
    };
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':').ok_or_else(|| bad("bad header line"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut req = Request { method, target, version, headers, body: Vec::new() };

    let chunked = req.header("transfer-encoding").is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    let length = match req.header("content-length") {
        Some(v) if !chunked => Some(v.parse::<usize>().map_err(|_| bad("bad content-length"))?),
        _ => None,
    };
    let has_body = chunked || length.is_some_and(|n| n > 0);
    if has_body && buf.is_empty() && req.header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }

    if chunked {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = find(buf, b"\r\n") {
                    break i;
                }
                read_more(stream, buf).await?;
            };
            let size_line = String::from_utf8_lossy(&buf[..line_end]).into_owned();
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16).map_err(|_| bad("bad chunk size"))?;
            buf.drain(..line_end + 2);
            if size == 0 {
                // Trailers, up to an empty line.
                loop {
                    let end = loop {
                        if let Some(i) = find(buf, b"\r\n") {
                            break i;
                        }
                        read_more(stream, buf).await?;
                    };
                    buf.drain(..end + 2);
                    if end == 0 {
                        break;
                    }
                }
                break;
            }
            while buf.len() < size + 2 {
                read_more(stream, buf).await?;
            }
            body.extend_from_slice(&buf[..size]);
            buf.drain(..size + 2);
        }
        req.body = body;
    } else if let Some(n) = length {
        while buf.len() < n {
            read_more(stream, buf).await?;
        }
        req.body = buf.drain(..n).collect();
    }
    Ok(Some(req))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

async fn write_json(
    stream: &mut TcpStream,
    status: u16,
    extra: &[(String, String)],
    body: &Value,
) -> std::io::Result<()> {
    let body = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    stream.write_all(&out).await?;
    stream.flush().await
}

/// Writes SSE events as HTTP chunks, with an optional delay between events.
struct Sse<'a> {
    stream: &'a mut TcpStream,
    delay: Duration,
    sent: usize,
}

impl<'a> Sse<'a> {
    async fn start(stream: &'a mut TcpStream, delay: Duration, extra: &[(String, String)]) -> std::io::Result<Sse<'a>> {
        let mut head = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n",
        );
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await?;
        stream.flush().await?;
        Ok(Sse { stream, delay, sent: 0 })
    }

    async fn raw(&mut self, data: &str) -> std::io::Result<()> {
        if self.sent > 0 && !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.sent += 1;
        let chunk = format!("{:x}\r\n{data}\r\n", data.len());
        self.stream.write_all(chunk.as_bytes()).await?;
        self.stream.flush().await
    }

    /// `event: NAME\ndata: JSON\n\n`
    async fn event(&mut self, name: &str, data: &Value) -> std::io::Result<()> {
        self.raw(&format!("event: {name}\ndata: {data}\n\n")).await
    }

    /// `data: JSON\n\n`
    async fn data(&mut self, data: &str) -> std::io::Result<()> {
        self.raw(&format!("data: {data}\n\n")).await
    }

    async fn finish(self) -> std::io::Result<()> {
        self.stream.write_all(b"0\r\n\r\n").await?;
        self.stream.flush().await
    }
}

// ---------------------------------------------------------------------------------------------
// Connections and routing
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Provider {
    Anthropic,
    OpenAi,
}

enum After {
    /// Keep serving this connection (if the client wants keep-alive).
    Continue,
    /// Close the connection now.
    Close,
    /// Never answer: wait for the client to go away.
    Hang,
}

async fn handle_conn(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::new();
    loop {
        let req = match read_request(&mut stream, &mut buf).await {
            Ok(Some(req)) => req,
            Ok(None) => return,
            Err(e) => {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    let body =
                        json!({"error": {"message": format!("mock model: {e}"), "type": "invalid_request_error"}});
                    let _ = write_json(&mut stream, 400, &[("connection".into(), "close".into())], &body).await;
                }
                return;
            }
        };
        let keep_alive = req.keep_alive();
        let received = Instant::now();
        let result = respond(&mut stream, &shared, req).await;
        if let Some((start, file)) = &shared.timing {
            let us = |t: Instant| t.duration_since(*start).as_secs_f64() * 1e6;
            let line = format!("{:.1} {:.1}\n", us(received), us(Instant::now()));
            let _ = file.lock().unwrap().write_all(line.as_bytes());
        }
        match result {
            Ok(After::Continue) if keep_alive => {}
            Ok(After::Hang) => {
                // Keep the socket open, discarding input, until the client closes it
                // (or the server is dropped, which aborts this task).
                let mut tmp = [0u8; 4096];
                while let Ok(n) = stream.read(&mut tmp).await {
                    if n == 0 {
                        break;
                    }
                }
                return;
            }
            _ => {
                let _ = stream.shutdown().await;
                return;
            }
        }
    }
}

fn route(target: &str) -> Option<Provider> {
    let mut path = target;
    if let Some(rest) = path.strip_prefix("http://") {
        path = rest.find('/').map_or("/", |i| &rest[i..]);
    }
    let path = path.split(['?', '#']).next().unwrap_or("");
    let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
    match path {
        "/v1/messages" => Some(Provider::Anthropic),
        "/v1/chat/completions" | "/chat/completions" => Some(Provider::OpenAi),
        _ => None,
    }
}

fn error_body(provider: Provider, status: u16, message: &str) -> Value {
    match provider {
        Provider::Anthropic => {
            let kind = match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Provider::OpenAi => {
            let kind = match status {
                400 | 404 | 405 | 413 | 422 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                429 => "rate_limit_exceeded",
                _ => "server_error",
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
    }
}

async fn respond(stream: &mut TcpStream, shared: &Shared, req: Request) -> std::io::Result<After> {
    let body_json: Option<Value> = if req.body.is_empty() { None } else { serde_json::from_slice(&req.body).ok() };
    let rec = Recorded {
        method: req.method.clone(),
        path: req.target.clone(),
        headers: req.headers.clone(),
        body: body_json.clone().unwrap_or(Value::Null),
    };
    let takes_step =
        route(&req.target).is_some() && req.method == "POST" && matches!(body_json, Some(Value::Object(_)));
    let (n, step) = shared.record(rec, takes_step);

    let Some(provider) = route(&req.target) else {
        if shared.log {
            eprintln!("mock-model: #{n} {} {} -> 404", req.method, req.target);
        }
        let body = json!({"error": {"message": format!("mock model: no route for {} {}", req.method, req.target), "type": "not_found"}});
        write_json(stream, 404, &[], &body).await?;
        return Ok(After::Continue);
    };
    if req.method != "POST" {
        let body = error_body(provider, 405, &format!("mock model: method {} not allowed", req.method));
        write_json(stream, 405, &[("allow".into(), "POST".into())], &body).await?;
        return Ok(After::Continue);
    }
    let request = match body_json {
        Some(v @ Value::Object(_)) => v,
        _ => {
            let body = error_body(provider, 400, "mock model: request body is not a JSON object");
            write_json(stream, 400, &[], &body).await?;
            return Ok(After::Continue);
        }
    };

    if shared.log {
        let what = match &step {
            None => "exhausted",
            Some(Step::Turn(_)) => "turn",
            Some(Step::HttpError(_)) => "http_error",
            Some(Step::Hang) => "hang",
            Some(Step::StreamError(_)) => "stream_error",
            Some(Step::Raw(_)) => "raw",
        };
        eprintln!("mock-model: #{n} {} {} -> {what}", req.method, req.target);
    }
    let stream_mode = request.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let ctx = Ctx {
        provider,
        model: request.get("model").and_then(Value::as_str).unwrap_or("mock-model").to_owned(),
        stream: stream_mode,
        include_usage: request.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false),
        id: shared.next_id(),
        created: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
    };

    match step {
        None => {
            let message =
                format!("mock script exhausted: no step left for request #{n} ({} {})", req.method, req.target);
            write_json(stream, 500, &[], &error_body(provider, 500, &message)).await?;
            Ok(After::Continue)
        }
        Some(Step::Hang) => Ok(After::Hang),
        Some(Step::Raw(raw)) => {
            let head = format!(
                "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n\r\n",
                raw.status,
                reason(raw.status),
                raw.content_type,
                raw.body.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(raw.body.as_bytes()).await?;
            stream.flush().await?;
            Ok(After::Continue)
        }
        Some(Step::HttpError(e)) => {
            if e.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(e.delay_ms)).await;
            }
            let body = e.body.clone().unwrap_or_else(|| {
                error_body(provider, e.status, &format!("mock http_error {} {}", e.status, reason(e.status)))
            });
            let headers: Vec<(String, String)> = e.headers.into_iter().collect();
            write_json(stream, e.status, &headers, &body).await?;
            Ok(After::Continue)
        }
        Some(Step::Turn(mut turn)) => {
            if let (None, Some(cache)) = (turn.usage, &shared.cache) {
                let out = turn.text.as_deref().map_or(0, str::len)
                    + turn.tool_calls.iter().map(|c| c.input.to_string().len()).sum::<usize>();
                let mut cache = cache.lock().unwrap();
                let openai = provider == Provider::OpenAi;
                turn.usage = Some(crate::mock_cache::simulated(&mut cache, openai, &request, out));
            }
            if turn.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(turn.delay_ms)).await;
            }
            let calls = assign_ids(&turn, provider, shared);
            match (provider, ctx.stream) {
                (Provider::Anthropic, false) => {
                    write_json(stream, 200, &ctx.headers(), &anthropic_message(&turn, &calls, &ctx)).await?
                }
                (Provider::OpenAi, false) => {
                    write_json(stream, 200, &ctx.headers(), &openai_completion(&turn, &calls, &ctx)).await?
                }
                (Provider::Anthropic, true) => {
                    let mut sse =
                        Sse::start(stream, Duration::from_millis(turn.chunk_delay_ms), &ctx.headers()).await?;
                    for (name, data) in anthropic_events(&turn, &calls, &ctx) {
                        sse.event(name, &data).await?;
                    }
                    sse.finish().await?;
                }
                (Provider::OpenAi, true) => {
                    let mut sse =
                        Sse::start(stream, Duration::from_millis(turn.chunk_delay_ms), &ctx.headers()).await?;
                    for chunk in openai_chunks(&turn, &calls, &ctx) {
                        sse.data(&chunk.to_string()).await?;
                    }
                    sse.data("[DONE]").await?;
                    sse.finish().await?;
                }
            }
            Ok(After::Continue)
        }
        Some(Step::StreamError(se)) => {
            let turn = Turn { text: se.text.clone(), ..Turn::default() };
            if ctx.stream {
                let mut sse = Sse::start(stream, Duration::ZERO, &ctx.headers()).await?;
                match provider {
                    Provider::Anthropic => {
                        // message_start, ping, and the text block without its stop.
                        let events = anthropic_events(&turn, &[], &ctx);
                        let keep = if se.text.is_some() { events.len() - 3 } else { 2 };
                        for (name, data) in events.into_iter().take(keep) {
                            sse.event(name, &data).await?;
                        }
                    }
                    Provider::OpenAi => {
                        let chunks = openai_chunks(&turn, &[], &ctx);
                        let keep = chunks.len().saturating_sub(1 + usize::from(ctx.include_usage));
                        for chunk in chunks.into_iter().take(keep.max(1)) {
                            sse.data(&chunk.to_string()).await?;
                        }
                    }
                }
            } else {
                // Promise a longer body than we send.
                let partial = match provider {
                    Provider::Anthropic => {
                        r#"{"id":"msg_cut","type":"message","role":"assistant","content":[{"type":"text","text":""#
                    }
                    Provider::OpenAi => {
                        r#"{"id":"chatcmpl-cut","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":""#
                    }
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    partial.len() + 4096
                );
                stream.write_all(head.as_bytes()).await?;
                stream.write_all(partial.as_bytes()).await?;
                stream.flush().await?;
            }
            Ok(After::Close)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Wire formats
// ---------------------------------------------------------------------------------------------

struct Ctx {
    provider: Provider,
    model: String,
    stream: bool,
    include_usage: bool,
    id: u64,
    created: u64,
}

impl Ctx {
    fn message_id(&self) -> String {
        match self.provider {
            Provider::Anthropic => format!("msg_mock{:06}", self.id),
            Provider::OpenAi => format!("chatcmpl-mock{:06}", self.id),
        }
    }

    fn headers(&self) -> Vec<(String, String)> {
        match self.provider {
            Provider::Anthropic => vec![("request-id".into(), format!("req_mock{:06}", self.id))],
            Provider::OpenAi => vec![("x-request-id".into(), format!("req_mock{:06}", self.id))],
        }
    }
}

struct Call {
    id: String,
    name: String,
    input: Value,
}

fn assign_ids(turn: &Turn, provider: Provider, shared: &Shared) -> Vec<Call> {
    turn.tool_calls
        .iter()
        .map(|c| Call {
            id: c.id.clone().unwrap_or_else(|| match provider {
                Provider::Anthropic => format!("toolu_{}", shared.next_id()),
                Provider::OpenAi => format!("call_{}", shared.next_id()),
            }),
            name: c.name.clone(),
            input: c.input.clone(),
        })
        .collect()
}

fn stop_reason(turn: &Turn, calls: &[Call], provider: Provider) -> String {
    match (provider, turn.stop_reason.as_deref()) {
        (Provider::Anthropic, Some("stop")) => "end_turn".into(),
        (Provider::Anthropic, Some("tool_calls")) => "tool_use".into(),
        (Provider::Anthropic, Some("length")) => "max_tokens".into(),
        (Provider::OpenAi, Some("end_turn" | "stop_sequence")) => "stop".into(),
        (Provider::OpenAi, Some("tool_use")) => "tool_calls".into(),
        (Provider::OpenAi, Some("max_tokens")) => "length".into(),
        (_, Some(other)) => other.into(),
        (Provider::Anthropic, None) if calls.is_empty() => "end_turn".into(),
        (Provider::Anthropic, None) => "tool_use".into(),
        (Provider::OpenAi, None) if calls.is_empty() => "stop".into(),
        (Provider::OpenAi, None) => "tool_calls".into(),
    }
}

/// Splits text into word pieces that keep their whitespace ("a b c" -> "a ", "b ", "c").
pub fn word_pieces(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut cur = String::new();
    let mut in_space = false;
    let mut has_word = false;
    for ch in text.chars() {
        let space = ch.is_whitespace();
        if !space && in_space && has_word {
            pieces.push(std::mem::take(&mut cur));
            has_word = false;
        }
        in_space = space;
        has_word |= !space;
        cur.push(ch);
    }
    if !cur.is_empty() {
        pieces.push(cur);
    }
    pieces
}

/// Splits a string into `n` pieces of about equal length on char boundaries (fewer if short).
fn split_even(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn anthropic_message(turn: &Turn, calls: &[Call], ctx: &Ctx) -> Value {
    let usage = turn.usage.unwrap_or_default();
    let mut content = Vec::new();
    if let Some(text) = &turn.text {
        content.push(json!({"type": "text", "text": text}));
    }
    for c in calls {
        content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.input}));
    }
    json!({
        "id": ctx.message_id(),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(turn, calls, Provider::Anthropic),
        "stop_sequence": null,
        "usage": usage.anthropic(usage.output_tokens),
    })
}

fn anthropic_events(turn: &Turn, calls: &[Call], ctx: &Ctx) -> Vec<(&'static str, Value)> {
    let usage = turn.usage.unwrap_or_default();
    let mut ev = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": {
                "id": ctx.message_id(), "type": "message", "role": "assistant", "model": ctx.model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": usage.anthropic(1),
            }}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    let mut index = 0;
    if let Some(text) = &turn.text {
        ev.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in word_pieces(text) {
            ev.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        ev.push(("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for c in calls {
        ev.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}}),
        ));
        // The real API opens with an empty partial_json.
        let mut pieces = vec![String::new()];
        pieces.extend(split_even(&c.input.to_string(), 3));
        for piece in pieces {
            ev.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        ev.push(("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    ev.push((
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason(turn, calls, Provider::Anthropic), "stop_sequence": null},
               "usage": {"output_tokens": usage.output_tokens}}),
    ));
    ev.push(("message_stop", json!({"type": "message_stop"})));
    ev
}

fn openai_usage(turn: &Turn) -> Value {
    let u = turn.usage.unwrap_or_default();
    let prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
    let mut v = json!({"prompt_tokens": prompt, "completion_tokens": u.output_tokens,
           "total_tokens": prompt + u.output_tokens});
    if u.cache_read_input_tokens > 0 {
        v["prompt_tokens_details"] = json!({"cached_tokens": u.cache_read_input_tokens});
    }
    v
}

fn openai_completion(turn: &Turn, calls: &[Call], ctx: &Ctx) -> Value {
    let mut message = json!({"role": "assistant", "content": turn.text, "refusal": null});
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.input.to_string()}}))
            .collect();
    }
    json!({
        "id": ctx.message_id(),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": stop_reason(turn, calls, Provider::OpenAi)}],
        "usage": openai_usage(turn),
    })
}

fn openai_chunks(turn: &Turn, calls: &[Call], ctx: &Ctx) -> Vec<Value> {
    let chunk = |delta: Value, finish: Value| {
        let mut c = json!({
            "id": ctx.message_id(), "object": "chat.completion.chunk", "created": ctx.created, "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if ctx.include_usage {
            c["usage"] = Value::Null;
        }
        c
    };
    let first_content = if turn.text.is_some() { json!("") } else { Value::Null };
    let mut out = vec![chunk(json!({"role": "assistant", "content": first_content, "refusal": null}), Value::Null)];
    if let Some(text) = &turn.text {
        for piece in word_pieces(text) {
            out.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (i, c) in calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                                   "function": {"name": c.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in split_even(&c.input.to_string(), 3) {
            out.push(chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}), Value::Null));
        }
    }
    out.push(chunk(json!({}), json!(stop_reason(turn, calls, Provider::OpenAi))));
    if ctx.include_usage {
        out.push(json!({
            "id": ctx.message_id(), "object": "chat.completion.chunk", "created": ctx.created, "model": ctx.model,
            "choices": [], "usage": openai_usage(turn),
        }));
    }
    out
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn pieces() {
        assert_eq!(word_pieces("Hello big  world\n"), vec!["Hello ", "big  ", "world\n"]);
        assert_eq!(word_pieces("  lead"), vec!["  lead"]);
        assert_eq!(word_pieces(""), Vec::<String>::new());
        assert_eq!(split_even("{}", 3), vec!["{", "}"]);
        assert_eq!(split_even("abcdefg", 3).concat(), "abcdefg");
        assert_eq!(split_even("héllo wörld", 3).len(), 3);
    }

    #[test]
    fn script_shapes() {
        let a = Script::from_json(r#"[{"type":"turn","text":"hi"},{"type":"hang"}]"#).unwrap();
        let b = Script::from_json(r#"{"steps":[{"type":"turn","text":"hi"},{"type":"hang"}]}"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.0, vec![Step::text("hi"), Step::Hang]);
        let e = Script::from_json(r#"[{"type":"turn","txt":"hi"}]"#).unwrap_err().to_string();
        assert!(e.contains("step 0") && e.contains("txt"), "{e}");
        let h = Script::from_json(r#"[{"type":"http_error","status":429,"headers":{"retry-after":0}}]"#).unwrap();
        assert_eq!(h.0, vec![HttpError::new(429).header("retry-after", "0").into()]);
        // Round trip.
        let s = Script(vec![
            Turn::text("a").with_tool("bash", json!({"command": "ls"})).with_usage(1, 2).into(),
            Step::stream_error(Some("x")),
        ]);
        let back = Script::from_json(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(s, back);
    }

    #[test]
    fn routes() {
        assert_eq!(route("/v1/messages"), Some(Provider::Anthropic));
        assert_eq!(route("/v1/messages?beta=true"), Some(Provider::Anthropic));
        assert_eq!(route("/v1/chat/completions"), Some(Provider::OpenAi));
        assert_eq!(route("/chat/completions"), Some(Provider::OpenAi));
        assert_eq!(route("/v1/complete"), None);
    }
}
