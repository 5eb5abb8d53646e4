//! Sending one provider request, and reading what comes back: an event stream or a whole answer.

use std::time::Duration;

use serde_json::Value;

use super::error::{describe, silent};
use super::sse::SseStream;
use super::{LlmError, ModelResponse, ProviderConfig};

/// A provider endpoint: its settings, the shared HTTP client and the URL requests go to.
pub struct Endpoint {
    pub cfg: ProviderConfig,
    http: reqwest::Client,
    url: String,
}

impl Endpoint {
    pub fn new(cfg: ProviderConfig, http: reqwest::Client, path: &str) -> Endpoint {
        let url = format!("{}{path}", cfg.base_url.trim_end_matches('/'));
        Endpoint { cfg, http, url }
    }

    pub async fn post(&self, headers: &[(&str, &str)], body: bytes::Bytes) -> Result<Body, LlmError> {
        let resp = post(&self.http, &self.cfg, &self.url, headers, body).await?;
        read_body(resp, self.cfg.kind.name(), self.cfg.timeout).await
    }
}

pub enum Body {
    Stream(SseStream),
    /// A whole response, from servers and proxies that ignore `stream`.
    Json(Value),
}

async fn read_body(resp: reqwest::Response, provider: &'static str, silence: Duration) -> Result<Body, LlmError> {
    let status = resp.status().as_u16();
    let content_type =
        resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").trim().to_ascii_lowercase();
    if content_type.starts_with("text/event-stream") {
        return Ok(Body::Stream(SseStream::new(resp, provider, silence)));
    }
    let text = match tokio::time::timeout(silence, resp.text()).await {
        Err(_) => return Err(silent(provider, silence)),
        Ok(r) => r.map_err(|e| LlmError::Transport { provider, message: describe(&e) })?,
    };
    parse_whole(&text, &content_type, status)
        .map(Body::Json)
        .map_err(|message| LlmError::Protocol { provider, message })
}

/// A whole JSON answer, or an error that says what came instead (an HTML page from a proxy, an event
/// stream labelled as JSON), not just where the JSON parser stopped.
fn parse_whole(text: &str, content_type: &str, status: u16) -> Result<Value, String> {
    let shown = if content_type.is_empty() { "no content type".to_string() } else { content_type.to_string() };
    let start = text.trim_start();
    if content_type.starts_with("text/html") || start.starts_with('<') {
        let title = start
            .find("<title>")
            .and_then(|i| start[i + 7..].find("</title>").map(|j| start[i + 7..i + 7 + j].trim().to_string()))
            .filter(|t| !t.is_empty())
            .map(|t| format!(" titled '{t}'"))
            .unwrap_or_default();
        return Err(format!(
            "expected JSON but got an HTML page{title} (HTTP {status}, {shown}); is the base URL the API's address?"
        ));
    }
    if start.starts_with("data:") || start.starts_with("event:") {
        return Err(format!("expected JSON but got an event stream labelled '{shown}' (HTTP {status})"));
    }
    serde_json::from_str(text).map_err(|e| {
        let head: String = start.chars().take(120).collect();
        format!("expected JSON ({shown}, HTTP {status}) but could not read it ({e}); it begins: {head}")
    })
}

/// A whole (non-streamed) response still shows its text to the user.
pub fn announce(resp: ModelResponse, on_text: &mut (dyn FnMut(&str) + Send)) -> ModelResponse {
    let t = resp.text();
    if !t.is_empty() {
        on_text(&t);
    }
    resp
}

/// POSTs `body` to `url` once (a kept-alive connection the server had closed is not a failure: that
/// is sent again at once). Returns the successful response, or the provider's own error message with
/// its status and `retry-after`. Retries are the caller's (`retry.rs`).
async fn post(
    http: &reqwest::Client,
    cfg: &ProviderConfig,
    url: &str,
    headers: &[(&str, &str)],
    body: bytes::Bytes,
) -> Result<reqwest::Response, LlmError> {
    let provider = cfg.kind.name();
    let mut stale_retried = false;
    loop {
        let mut req = http.post(url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body.clone());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        return match tokio::time::timeout(cfg.timeout, req.send()).await {
            Err(_) => Err(LlmError::Transport {
                provider,
                message: format!("no answer within {}s (STEPWISE_MODEL_TIMEOUT)", cfg.timeout.as_secs()),
            }),
            Ok(Ok(resp)) if resp.status().is_success() => Ok(resp),
            Ok(Ok(resp)) => {
                let status = resp.status().as_u16();
                let retry_after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(|s| Duration::from_secs_f64(s.min(1e9)));
                let text = resp.text().await.unwrap_or_default();
                Err(LlmError::Status { provider, status, message: error_message(&text), retry_after })
            }
            Ok(Err(e)) => {
                let message = describe(&e);
                // A kept-alive connection the server closed just as we reused it: not the server
                // failing, so sent again at once on a fresh one, whatever the retry settings say.
                if !stale_retried && message.contains("connection closed before message completed") {
                    stale_retried = true;
                    tracing::debug!("a pooled connection was closed by the server; sending again");
                    continue;
                }
                Err(LlmError::Transport { provider, message })
            }
        };
    }
}

/// The provider's own words from an error body (both formats put them at `error.message`).
pub fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let msg = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    match msg {
        Some(m) => m,
        None if body.trim().is_empty() => "(empty response body)".into(),
        None => body.chars().take(500).collect(),
    }
}
