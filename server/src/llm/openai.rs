//! OpenAI-compatible chat completions (OpenAI, Ollama, llama.cpp, vLLM), streamed.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{json, Value};

use super::http::{self, Body, Endpoint};
use super::sse::SseStream;
use super::{Block, LlmError, Message, ModelRequest, ModelResponse, ProviderConfig, Role, Usage};

const PROVIDER: &str = "openai";

pub struct Client {
    endpoint: Endpoint,
    /// Reasoning models refuse `max_tokens`; once one has said so, the limit goes as
    /// `max_completion_tokens` for the rest of the session (local servers keep getting `max_tokens`).
    completion_tokens: AtomicBool,
}

impl Client {
    pub fn new(cfg: ProviderConfig, http: reqwest::Client) -> Self {
        Client { endpoint: Endpoint::new(cfg, http, "/chat/completions"), completion_tokens: AtomicBool::new(false) }
    }

    pub async fn complete(
        &self,
        req: &ModelRequest<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, LlmError> {
        let cfg = &self.endpoint.cfg;
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect();
        let mut body = json!({
            "model": cfg.model,
            "messages": wire_messages(req.system, req.messages),
            "tools": tools,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        let auth = format!("Bearer {}", cfg.api_key);
        let headers: &[(&str, &str)] = if cfg.api_key.is_empty() { &[] } else { &[("authorization", auth.as_str())] };
        let answer = loop {
            let modern = self.completion_tokens.load(Ordering::Relaxed);
            let (key, other) = if modern { LIMIT_KEYS } else { (LIMIT_KEYS.1, LIMIT_KEYS.0) };
            if let Some(obj) = body.as_object_mut() {
                obj.remove(other);
                obj.insert(key.into(), json!(cfg.max_tokens));
            }
            match self.endpoint.post(headers, &body).await {
                Err(LlmError::Status { status: 400, message, .. }) if !modern && refuses_max_tokens(&message) => {
                    tracing::info!("the server wants max_completion_tokens instead of max_tokens; switching");
                    self.completion_tokens.store(true, Ordering::Relaxed);
                }
                other => break other?,
            }
        };
        match answer {
            Body::Json(v) => Ok(http::announce(parse_completion(&v)?, on_text)),
            Body::Stream(sse) => read_stream(sse, on_text).await,
        }
    }
}

/// (the newer name, the older one).
const LIMIT_KEYS: (&str, &str) = ("max_completion_tokens", "max_tokens");

/// OpenAI's answer to `max_tokens` on a reasoning model: "Unsupported parameter: 'max_tokens' ... Use
/// 'max_completion_tokens' instead."
fn refuses_max_tokens(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("max_tokens") && (m.contains("max_completion_tokens") || m.contains("unsupported"))
}

fn protocol(message: String) -> LlmError {
    LlmError::Protocol { provider: PROVIDER, message }
}

/// Anthropic-shaped history to chat messages: tool results become `role: tool` messages, in order,
/// followed by any text of the same user turn (the reminder, a follow-up prompt).
fn wire_messages(system: &str, messages: &[Message]) -> Vec<Value> {
    let mut out = vec![json!({"role": "system", "content": system})];
    for m in messages {
        let mut text = String::new();
        let mut calls = Vec::new();
        for b in &m.content {
            match b {
                Block::Text { text: t } => {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(t);
                }
                Block::ToolUse { id, name, input } => calls.push(json!({
                    "id": id, "type": "function",
                    "function": {"name": name, "arguments": match input {
                        Value::String(raw) => raw.clone(),
                        other => other.to_string(),
                    }}
                })),
                Block::ToolResult { tool_use_id, content, .. } => {
                    out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}))
                }
            }
        }
        match m.role {
            Role::Assistant => {
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                out.push(msg);
            }
            Role::User if !text.is_empty() => out.push(json!({"role": "user", "content": text})),
            Role::User => {}
        }
    }
    out
}

fn stop_reason(finish: Option<&str>, has_tools: bool) -> String {
    match finish {
        Some("tool_calls") | Some("function_call") => "tool_use".into(),
        Some("length") => "max_tokens".into(),
        Some("stop") | None if has_tools => "tool_use".into(),
        Some("stop") | None => "end_turn".into(),
        // Passed on as they are (`content_filter`, ...): the loop ends the run on a stop it does not know.
        Some(other) => other.to_string(),
    }
}

fn parse_args(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

/// `prompt_tokens` is the whole prompt, cached part included; anything missing or malformed counts as 0.
fn parse_usage(v: Option<&Value>) -> Usage {
    let get = |p: &str| v.and_then(|u| u.pointer(p)).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: get("/prompt_tokens"),
        output_tokens: get("/completion_tokens"),
        cache_read_tokens: get("/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
}

fn parse_completion(v: &Value) -> Result<ModelResponse, LlmError> {
    let choice = v.pointer("/choices/0").ok_or_else(|| protocol("no choices in completion".into()))?;
    let msg = choice.get("message").cloned().unwrap_or(Value::Null);
    let mut content = Vec::new();
    if let Some(t) = msg.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        content.push(Block::Text { text: t.to_string() });
    }
    for (i, c) in msg.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let id = c.get("id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("call_{i}"));
        let name = c.pointer("/function/name").and_then(Value::as_str).unwrap_or_default().to_string();
        let input = match c.pointer("/function/arguments") {
            Some(Value::String(raw)) => parse_args(raw),
            Some(obj @ Value::Object(_)) => obj.clone(),
            _ => Value::Object(Default::default()),
        };
        content.push(Block::ToolUse { id, name, input });
    }
    let has_tools = content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    Ok(ModelResponse {
        stop_reason: stop_reason(choice.get("finish_reason").and_then(Value::as_str), has_tools),
        content,
        usage: parse_usage(v.get("usage")),
    })
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    args: String,
}

async fn read_stream(mut sse: SseStream, on_text: &mut (dyn FnMut(&str) + Send)) -> Result<ModelResponse, LlmError> {
    let mut text = String::new();
    let mut calls: Vec<PartialCall> = Vec::new();
    let mut finish: Option<String> = None;
    let mut usage = Usage::default();
    let mut done = false;
    while let Some(ev) = sse.next().await? {
        let data = ev.data.trim();
        if data == "[DONE]" {
            done = true;
            break;
        }
        if data.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(data).map_err(|e| protocol(format!("invalid chunk ({e}): {data}")))?;
        if let Some(err) = v.get("error") {
            let message = err.get("message").and_then(Value::as_str).unwrap_or("streaming error").to_string();
            // The error's kind is the provider's own; a retry is left to the user.
            return Err(LlmError::Interrupted { provider: PROVIDER, status: None, message, retryable: false });
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            usage = parse_usage(Some(u));
        }
        let Some(choice) = v.pointer("/choices/0") else { continue };
        if let Some(piece) = choice.pointer("/delta/content").and_then(Value::as_str) {
            if !piece.is_empty() {
                on_text(piece);
                text.push_str(piece);
            }
        }
        for tc in choice.pointer("/delta/tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let idx = tc.get("index").and_then(Value::as_u64).unwrap_or(calls.len() as u64);
            if idx >= super::MAX_STREAM_INDEX {
                return Err(protocol(format!("tool call index {idx} is out of range")));
            }
            let idx = idx as usize;
            while calls.len() <= idx {
                calls.push(PartialCall::default());
            }
            let call = &mut calls[idx];
            if let Some(id) = tc.get("id").and_then(Value::as_str) {
                call.id = id.to_string();
            }
            if let Some(n) = tc.pointer("/function/name").and_then(Value::as_str) {
                call.name.push_str(n);
            }
            if let Some(a) = tc.pointer("/function/arguments").and_then(Value::as_str) {
                call.args.push_str(a);
            }
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            finish = Some(f.to_string());
        }
    }
    if !done && finish.is_none() {
        return Err(LlmError::Interrupted {
            provider: PROVIDER,
            status: None,
            message: "stream ended before it finished".into(),
            retryable: true,
        });
    }
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(Block::Text { text });
    }
    for (i, c) in calls.into_iter().enumerate() {
        let id = if c.id.is_empty() { format!("call_{i}") } else { c.id };
        content.push(Block::ToolUse { id, name: c.name, input: parse_args(&c.args) });
    }
    let has_tools = content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    Ok(ModelResponse { stop_reason: stop_reason(finish.as_deref(), has_tools), content, usage })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_translates_to_chat_messages() {
        let msgs = vec![
            Message { role: Role::User, content: vec![Block::Text { text: "hi".into() }] },
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolUse { id: "c1".into(), name: "bash".into(), input: json!({"command": "ls"}) }],
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::ToolResult { tool_use_id: "c1".into(), content: "a.txt".into(), is_error: false },
                    Block::Text { text: "<reminder>Update your todos.</reminder>".into() },
                ],
            },
        ];
        let w = wire_messages("sys", &msgs);
        assert_eq!(w[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(w[2]["tool_calls"][0]["function"]["arguments"], "{\"command\":\"ls\"}");
        assert_eq!(w[2]["content"], Value::Null);
        assert_eq!(w[3], json!({"role": "tool", "tool_call_id": "c1", "content": "a.txt"}));
        assert_eq!(w[4], json!({"role": "user", "content": "<reminder>Update your todos.</reminder>"}));
    }
}
