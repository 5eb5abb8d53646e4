//! The context window a local server reports about itself, for when none is configured: llama.cpp's
//! `GET /props` (`default_generation_settings.n_ctx`) and vLLM's `GET /v1/models` (`max_model_len`).
//! Asked once per session, briefly; no answer means the default stays.

use std::time::Duration;

use serde_json::Value;

const ASK_FOR: Duration = Duration::from_secs(2);

/// The server's own context window for `model`, if it says.
pub async fn discover(http: &reqwest::Client, base_url: &str, model: &str) -> Option<u64> {
    let base = base_url.trim_end_matches('/');
    // OpenAI itself reports no window; do not ask it on every run.
    if base.contains("://api.openai.com") {
        return None;
    }
    let origin = base.strip_suffix("/v1").unwrap_or(base);
    if let Some(v) = get(http, &format!("{origin}/props")).await {
        let n = v.pointer("/default_generation_settings/n_ctx").or_else(|| v.get("n_ctx")).and_then(Value::as_u64);
        if let Some(n) = n.filter(|n| *n > 0) {
            return Some(n);
        }
    }
    let models = get(http, &format!("{base}/models")).await?;
    let list = models.get("data")?.as_array()?;
    let entry = list.iter().find(|m| m.get("id").and_then(Value::as_str) == Some(model)).or(list.first())?;
    entry.get("max_model_len").and_then(Value::as_u64).filter(|n| *n > 0)
}

async fn get(http: &reqwest::Client, url: &str) -> Option<Value> {
    let resp = tokio::time::timeout(ASK_FOR, http.get(url).send()).await.ok()?.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    tokio::time::timeout(ASK_FOR, resp.json::<Value>()).await.ok()?.ok()
}
