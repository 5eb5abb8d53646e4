//! One client for both providers: what differs is the wire format (a [`Wire`]); posting, the retry loop,
//! and reading a whole or streamed answer are the same.

use std::future::Future;
use std::sync::Mutex;

use serde_json::Value;

use super::http::{self, Body, Endpoint};
use super::prefix::{Pieces, PrefixCache};
use super::retry::Retry;
use super::sse::SseStream;
use super::{LlmError, ModelRequest, ModelResponse, ProviderConfig};

/// A provider's wire format. The request body is written in pieces ([`Pieces`]), serialised straight
/// from the conversation (no `serde_json::Value` tree of the history), and the pieces of earlier rounds
/// are kept ([`PrefixCache`]).
pub trait Wire: Pieces + Send + Sync {
    /// Where requests go, after the base URL.
    const PATH: &'static str;

    /// Headers that carry the key and the API version.
    fn headers(cfg: &ProviderConfig) -> Vec<(&'static str, String)>;

    /// Whether a refused request is worth sending again once the format has adapted to the server
    /// (OpenAI reasoning models want `max_completion_tokens`). Called once per refusal.
    fn adapt(&self, _error: &LlmError) -> bool {
        false
    }

    /// A whole JSON answer (servers and proxies that ignore `stream`).
    fn parse_whole(v: &Value) -> Result<ModelResponse, LlmError>;

    /// A streamed answer; `on_text` gets the text as it arrives.
    fn read_stream(
        sse: SseStream,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> impl Future<Output = Result<ModelResponse, LlmError>> + Send;
}

pub struct Client<W: Wire> {
    endpoint: Endpoint,
    wire: W,
    cache: Mutex<PrefixCache>,
}

impl<W: Wire> Client<W> {
    pub fn new(cfg: ProviderConfig, http: reqwest::Client, wire: W) -> Self {
        Client { endpoint: Endpoint::new(cfg, http, W::PATH), wire, cache: Mutex::default() }
    }

    /// The request body.
    fn encode(&self, req: &ModelRequest<'_>) -> Result<bytes::Bytes, LlmError> {
        let mut cache = self.cache.lock().unwrap_or_else(|poisoned| {
            // A panic mid-encoding may have left the pieces half-updated: start afresh.
            let mut c = poisoned.into_inner();
            *c = PrefixCache::default();
            c
        });
        let body = cache.encode(&self.wire, &self.endpoint.cfg, req);
        body.map(bytes::Bytes::from).map_err(|e| LlmError::Other(format!("cannot encode the request: {e}")))
    }

    pub async fn complete(
        &self,
        req: &ModelRequest<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, LlmError> {
        let cfg = &self.endpoint.cfg;
        let retry = Retry { max: cfg.max_retries, base: cfg.backoff };
        let owned = W::headers(cfg);
        let headers: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut attempt = 0;
        loop {
            let mut shown = false;
            let mut track = |t: &str| {
                shown = true;
                on_text(t)
            };
            let result = match self.endpoint.post(&headers, self.encode(req)?).await {
                Ok(Body::Json(v)) => W::parse_whole(&v).map(|r| http::announce(r, &mut track)),
                Ok(Body::Stream(sse)) => W::read_stream(sse, &mut track).await,
                Err(e) => Err(e),
            };
            let err = match result {
                Ok(r) => return Ok(r),
                Err(e) if self.wire.adapt(&e) => continue,
                Err(e) => e,
            };
            let Some(wait) = retry.wait(attempt, &err, shown) else { return Err(err) };
            tracing::warn!(%err, attempt = attempt + 1, wait_ms = wait.as_millis() as u64, "retrying model request");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }
}
