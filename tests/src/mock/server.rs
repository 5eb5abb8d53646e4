//! The running mock server: options, the requests it recorded, the accept loop.

use std::collections::VecDeque;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::routing::*;
use super::script::*;

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
    /// Append one line per request to this file: when it had been read whole, when its answer had been
    /// written whole and when its first bytes arrived, in microseconds since the mock started
    /// (`{received_us} {answered_us} {first_us}`). The gap from one answer to the next request is the
    /// client's own time (to its first bytes: without the time the request's bytes took to arrive).
    pub timing: Option<PathBuf>,
}

pub(crate) struct Shared {
    steps: Mutex<VecDeque<Step>>,
    /// Scripts of their own for conversations whose first user message holds a key (`MockModel::route`):
    /// several conversations at once (sessions side by side, subagents), each answered in its own order.
    routes: Mutex<Vec<(String, VecDeque<Step>)>>,
    requests: Mutex<Vec<Recorded>>,
    count: watch::Sender<usize>,
    next_id: AtomicU64,
    connections: AtomicU64,
    record: Option<Mutex<std::fs::File>>,
    pub(crate) log: bool,
    pub(crate) cache: Option<Mutex<crate::mock_cache::PrefixCache>>,
    pub(crate) timing: Option<(Instant, Mutex<std::fs::File>)>,
}

impl Shared {
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Records a request and, for a model request, takes its step in the same critical section, so
    /// whoever sees the request recorded also sees its step gone.
    pub(crate) fn record(&self, rec: Recorded, takes_step: bool) -> (usize, Option<Step>) {
        let mut requests = self.requests.lock().unwrap();
        let step = match takes_step {
            false => None,
            true => {
                let first = first_user_text(&rec.body);
                let mut routes = self.routes.lock().unwrap();
                match routes.iter_mut().find(|(key, _)| first.contains(key.as_str())) {
                    Some((_, steps)) => steps.pop_front(),
                    None => self.steps.lock().unwrap().pop_front(),
                }
            }
        };
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
            routes: Mutex::new(Vec::new()),
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

    /// Gives the conversations whose first user message contains `key` a script of their own (the rest
    /// take the main script's steps in turn).
    pub fn route(&self, key: impl Into<String>, steps: Vec<Step>) {
        self.shared.routes.lock().unwrap().push((key.into(), steps.into()));
    }

    /// Steps of `key`'s route not yet consumed.
    pub fn remaining_of(&self, key: &str) -> usize {
        self.shared.routes.lock().unwrap().iter().find(|(k, _)| k == key).map_or(0, |(_, s)| s.len())
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

pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
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

/// The text of a request's first user message (either wire format; its text blocks joined).
pub fn first_user_text(body: &Value) -> String {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else { return String::new() };
    let Some(first) = messages.iter().find(|m| m["role"] == "user") else { return String::new() };
    match &first["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}
