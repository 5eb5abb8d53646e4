//! Streamable HTTP (MCP 2025-06-18) over the reqwest client stepwise already has (rustls, compiled-in
//! roots). Each message is a POST; a request's answer comes as one JSON body or as a stream of events that
//! may carry the server's own requests and notifications first. The session id the server gives at
//! `initialize` goes with every later message, with the protocol version agreed; when the server has
//! forgotten the session (404) a new one is begun and the message sent again, once, as the spec asks. The
//! session is deleted when the connection is dropped. No redirects: they would replay the session id and
//! the configured headers elsewhere. The GET stream for messages a server starts on its own is not opened:
//! stepwise needs none of them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Response, StatusCode};
use serde_json::{json, Value};

use super::rpc::{self, Error, Peer};
use super::sse::Events;
use crate::locks::lock;

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";
const BOTH: &str = "application/json, text/event-stream";
/// An answer larger than this is refused rather than buffered.
pub const MAX_JSON: usize = 16 << 20;
/// How long what is sent in the background (a cancellation, the session's end) may take.
const BACKGROUND: Duration = Duration::from_secs(30);

/// One server's endpoint and session; clones share them.
#[derive(Clone)]
pub struct Http(Arc<State>);

struct State {
    client: reqwest::Client,
    url: String,
    /// The configured headers.
    headers: HeaderMap,
    session: Mutex<Session>,
    /// One new session at a time.
    renewing: tokio::sync::Mutex<()>,
}

#[derive(Clone, Default, PartialEq)]
struct Session {
    id: Option<String>,
    version: Option<String>,
}

impl Http {
    pub fn new(url: &str, headers: &BTreeMap<String, String>, connect_timeout: Duration) -> Result<Http, String> {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            let name = HeaderName::try_from(k.as_str()).map_err(|_| format!("bad header name '{k}'"))?;
            let value = HeaderValue::try_from(v.as_str()).map_err(|_| format!("bad value for header '{k}'"))?;
            map.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        let session = Mutex::default();
        let state = State { client, url: url.to_string(), headers: map, session, renewing: Default::default() };
        Ok(Http(Arc::new(state)))
    }

    /// Sends the request `msg` (whose id is `id`) and reads its answer into `peer`.
    pub async fn request(&self, peer: &Peer, id: u64, msg: &Value) -> Result<(), Error> {
        let r = self.post(peer, msg).await?;
        self.read_answer(peer, id, r).await
    }

    /// Sends a notification: the server takes it (202) or says why not.
    pub async fn notify(&self, peer: &Peer, msg: &Value) -> Result<(), Error> {
        let r = self.post(peer, msg).await?;
        accepted(r).await
    }

    /// The same in the background, once, and whatever comes of it (a call's cancellation).
    pub fn notify_later(&self, msg: Value) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let http = self.clone();
        rt.spawn(async move {
            let sent = async { accepted(http.send(&msg, &http.session()).await?).await };
            if let Ok(Err(e)) = tokio::time::timeout(BACKGROUND, sent).await {
                tracing::debug!("MCP server at {}: a notification was not taken: {e}", http.0.url);
            }
        });
    }

    /// The protocol version the server answered `initialize` with, sent with every later message.
    pub fn agreed(&self, result: &Value) {
        lock(&self.0.session).version = result.get("protocolVersion").and_then(Value::as_str).map(str::to_string);
    }

    fn session(&self) -> Session {
        lock(&self.0.session).clone()
    }

    /// Posts `msg` in the session; in a new one if the server has forgotten it.
    async fn post(&self, peer: &Peer, msg: &Value) -> Result<Response, Error> {
        let session = self.session();
        let r = self.send(msg, &session).await?;
        if r.status() == StatusCode::NOT_FOUND && session.id.is_some() {
            self.renew(peer, &session).await?;
            return self.send(msg, &self.session()).await;
        }
        if msg.get("method").and_then(Value::as_str) == Some("initialize") {
            self.begun(&r);
        }
        Ok(r)
    }

    async fn send(&self, msg: &Value, session: &Session) -> Result<Response, Error> {
        let mut headers = self.0.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static(BOTH));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in [(SESSION_ID, &session.id), (PROTOCOL_VERSION, &session.version)] {
            if let Some(v) = value.as_deref().and_then(|v| HeaderValue::try_from(v).ok()) {
                headers.insert(name, v);
            }
        }
        let body = serde_json::to_vec(msg).unwrap_or_default();
        let sent = self.0.client.post(&self.0.url).headers(headers).body(body).send().await;
        sent.map_err(|e| Error::Failed(chain(&e)))
    }

    /// The session the server gave in its answer to `initialize` (none: it keeps none).
    fn begun(&self, r: &Response) {
        let id = r.headers().get(SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_string);
        *lock(&self.0.session) = Session { id, version: None };
    }

    /// Begins a new session in place of `stale`, unless another request already has.
    async fn renew(&self, peer: &Peer, stale: &Session) -> Result<(), Error> {
        let _one = self.0.renewing.lock().await;
        if self.session() != *stale {
            return Ok(());
        }
        tracing::info!("MCP server {}: its session expired (HTTP 404); beginning a new one", peer.name);
        let failed = |e: Error| Error::Failed(format!("its session expired (HTTP 404) and a new one failed: {e}"));
        let (id, rx) = peer.register()?;
        let _forget = rpc::Forget(peer, id);
        let begin = async {
            let r = self.send(&rpc::request(id, "initialize", super::initialize_params()), &Session::default()).await?;
            self.begun(&r);
            self.read_answer(peer, id, r).await?;
            rx.await.unwrap_or_else(|_| Err(Error::Failed("no answer".into())))
        };
        self.agreed(&begin.await.map_err(failed)?);
        let r = self.send(&rpc::notification("notifications/initialized", json!({})), &self.session()).await;
        accepted(r.map_err(failed)?).await.map_err(failed)
    }

    /// Reads the answer to the request `id` into `peer` (with what the server sends before it).
    async fn read_answer(&self, peer: &Peer, id: u64, r: Response) -> Result<(), Error> {
        let status = r.status();
        let kind = r.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
        if !status.is_success() {
            // A JSON-RPC error in the body is the server's answer; anything else is the HTTP failure.
            let body = body(r).await.unwrap_or_default();
            if let Ok(msg @ Value::Object(_)) = serde_json::from_slice::<Value>(&body) {
                if msg.get("error").is_some() && msg.get("id").and_then(Value::as_u64) == Some(id) {
                    peer.take(msg);
                    return Ok(());
                }
            }
            return Err(Error::Failed(status_text(status, &body)));
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Err(Error::Failed(format!("HTTP {status} where an answer was due")));
        }
        if kind.starts_with("text/event-stream") {
            self.read_events(peer, id, r).await?;
        } else if kind.starts_with("application/json") {
            let body = body(r).await?;
            let msg =
                serde_json::from_slice(&body).map_err(|e| Error::Failed(format!("its answer is not JSON: {e}")))?;
            self.take(peer, msg).await;
        } else {
            return Err(Error::Failed(format!("its answer has the content type '{kind}'")));
        }
        if peer.waits_for(id) {
            return Err(Error::Failed("its answer ended before the result".into()));
        }
        Ok(())
    }

    /// Reads a stream of events until the answer to `id` is among them.
    async fn read_events(&self, peer: &Peer, id: u64, mut r: Response) -> Result<(), Error> {
        let mut events = Events::new(MAX_JSON);
        while let Some(bytes) =
            r.chunk().await.map_err(|e| Error::Failed(format!("its answer broke off: {}", chain(&e))))?
        {
            for data in events.feed(&bytes) {
                let data =
                    data.map_err(|_| Error::Failed(format!("it sent an event larger than {} MiB", MAX_JSON >> 20)))?;
                match serde_json::from_str(&data) {
                    Ok(msg) => self.take(peer, msg).await,
                    Err(e) => tracing::warn!("MCP server {}: skipped an event that is not JSON: {e}", peer.name),
                }
                if !peer.waits_for(id) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Takes one message; a request of the server's own is answered at once.
    async fn take(&self, peer: &Peer, msg: Value) {
        let Some(reply) = peer.take(msg) else { return };
        if let Err(e) = async { accepted(self.send(&reply, &self.session()).await?).await }.await {
            tracing::warn!("MCP server {}: answering its request failed: {e}", peer.name);
        }
    }
}

impl Drop for State {
    /// Ends the session on the server, in the background and at best: nothing waits for it.
    fn drop(&mut self) {
        let Some(id) = lock(&self.session).id.take() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let Ok(id) = HeaderValue::try_from(id) else { return };
        let mut headers = self.headers.clone();
        headers.insert(SESSION_ID, id);
        let delete = self.client.delete(&self.url).headers(headers).timeout(BACKGROUND);
        rt.spawn(async move {
            let _ = delete.send().await;
        });
    }
}

async fn accepted(r: Response) -> Result<(), Error> {
    let status = r.status();
    if status.is_success() {
        return Ok(());
    }
    Err(Error::Failed(status_text(status, &body(r).await.unwrap_or_default())))
}

fn status_text(status: StatusCode, body: &[u8]) -> String {
    let body = String::from_utf8_lossy(body);
    format!("HTTP {status}: {}", crate::host::output::truncate_chars(body.trim(), 300))
}

/// The whole body, refused past `MAX_JSON`.
async fn body(mut r: Response) -> Result<Vec<u8>, Error> {
    let too_big = || Error::Failed(format!("its answer was larger than {} MiB", MAX_JSON >> 20));
    if r.content_length().is_some_and(|n| n > MAX_JSON as u64) {
        return Err(too_big());
    }
    let mut body = Vec::new();
    while let Some(bytes) =
        r.chunk().await.map_err(|e| Error::Failed(format!("its answer broke off: {}", chain(&e))))?
    {
        if body.len() + bytes.len() > MAX_JSON {
            return Err(too_big());
        }
        body.extend_from_slice(&bytes);
    }
    Ok(body)
}

/// An HTTP error with its causes (reqwest's own text names only the URL).
fn chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}
