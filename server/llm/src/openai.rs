//! OpenAI-compatible chat completions (OpenAI, Ollama, llama.cpp, vLLM), streamed.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::loose::{Count, List, Obj, Text};
use super::openai_wire::{elements, Plain, StreamOptions, Tail, WireTool};
use super::prefix::{self, Frame, Pieces};
use super::sse::SseStream;
use super::wire::Wire;
use super::{Block, LlmError, Message, ModelRequest, ModelResponse, ProviderConfig, Usage};

const PROVIDER: &str = "openai";

/// Chat completions (`POST {base}/chat/completions`).
#[derive(Default)]
pub struct OpenAi {
    /// Reasoning models refuse `max_tokens`; once one has said so, the limit goes as
    /// `max_completion_tokens` for the rest of the session (local servers keep getting `max_tokens`).
    completion_tokens: AtomicBool,
}

impl Wire for OpenAi {
    const PATH: &'static str = "/chat/completions";

    fn headers(cfg: &ProviderConfig) -> Vec<(&'static str, String)> {
        // Local servers need no key; an empty one is not sent.
        if cfg.api_key.is_empty() {
            Vec::new()
        } else {
            vec![("authorization", format!("Bearer {}", cfg.api_key))]
        }
    }

    fn adapt(&self, error: &LlmError) -> bool {
        match error {
            LlmError::Status { status: 400, message, .. }
                if !self.completion_tokens.load(Ordering::Relaxed) && refuses_max_tokens(message) =>
            {
                tracing::info!("the server wants max_completion_tokens instead of max_tokens; switching");
                self.completion_tokens.store(true, Ordering::Relaxed);
                true
            }
            _ => false,
        }
    }

    fn parse_whole(v: &Value) -> Result<ModelResponse, LlmError> {
        parse_completion(v)
    }

    async fn read_stream(sse: SseStream, on_text: &mut (dyn FnMut(&str) + Send)) -> Result<ModelResponse, LlmError> {
        read_stream(sse, on_text).await
    }
}

/// The body is `WireRequest`'s serialisation, written in pieces: `{"model":…,"messages":[` the system
/// message, then each conversation message's chat messages, `],"tools":[…],…}`.
impl Pieces for OpenAi {
    fn frame(&self, cfg: &ProviderConfig, req: &ModelRequest<'_>) -> serde_json::Result<Frame> {
        #[derive(Serialize)]
        struct Head<'a> {
            model: &'a str,
        }
        let mut head = prefix::open_array_field(&Head { model: &cfg.model }, "messages")?;
        prefix::write(&mut head, &Plain { role: "system", content: req.system })?;
        // Exactly one of the two names is sent: local servers reject the newer one.
        let modern = self.completion_tokens.load(Ordering::Relaxed);
        let tail = Tail {
            tools: req.tools.iter().map(WireTool::new).collect(),
            stream: true,
            stream_options: StreamOptions { include_usage: true },
            max_tokens: (!modern).then_some(cfg.max_tokens),
            max_completion_tokens: modern.then_some(cfg.max_tokens),
        };
        Ok(Frame { head, tail: prefix::close_array_field(&tail)? })
    }

    fn frame_state(&self) -> u8 {
        self.completion_tokens.load(Ordering::Relaxed).into()
    }

    fn message(&self, _i: usize, m: &Message, _mark: bool, out: &mut Vec<u8>) -> serde_json::Result<()> {
        elements(m, |e| {
            out.push(b',');
            prefix::write(out, e)
        })
    }
}

/// The whole body in one piece (as it was encoded before the pieces were kept between rounds): what
/// the pieces must add up to.
#[cfg(test)]
pub fn reference_body(wire: &OpenAi, cfg: &ProviderConfig, req: &ModelRequest<'_>) -> Vec<u8> {
    use super::openai_wire::{WireMessages, WireRequest};
    let modern = wire.completion_tokens.load(Ordering::Relaxed);
    let body = WireRequest {
        model: &cfg.model,
        messages: WireMessages { system: req.system, messages: req.messages },
        tools: req.tools.iter().map(WireTool::new).collect(),
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        max_tokens: (!modern).then_some(cfg.max_tokens),
        max_completion_tokens: modern.then_some(cfg.max_tokens),
    };
    serde_json::to_vec(&body).unwrap()
}

/// OpenAI's answer to `max_tokens` on a reasoning model: "Unsupported parameter: 'max_tokens' ... Use
/// 'max_completion_tokens' instead."
fn refuses_max_tokens(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("max_tokens") && (m.contains("max_completion_tokens") || m.contains("unsupported"))
}

fn protocol(message: String) -> LlmError {
    LlmError::Protocol { provider: PROVIDER, message }
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

/// One streamed chunk: only what is read of it (`loose.rs`: a mistyped field is left out, as before).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Chunk<'a> {
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(borrow)]
    choices: List<Obj<Choice<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Choice<'a> {
    #[serde(borrow)]
    delta: Obj<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Text<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Delta<'a> {
    #[serde(borrow)]
    content: Text<'a>,
    #[serde(borrow)]
    tool_calls: List<Obj<CallDelta<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CallDelta<'a> {
    index: Count,
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow)]
    function: Obj<FunctionDelta<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct FunctionDelta<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(borrow)]
    arguments: Text<'a>,
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
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| protocol(format!("invalid chunk ({e}): {data}")))?;
        if let Some(err) = chunk.error {
            let err: Value = serde_json::from_str(err.get()).unwrap_or(Value::Null);
            let message = err.get("message").and_then(Value::as_str).unwrap_or("streaming error").to_string();
            // The error's kind is the provider's own; a retry is left to the user.
            return Err(LlmError::Interrupted { provider: PROVIDER, status: None, message, retryable: false });
        }
        if let Some(u) = chunk.usage.and_then(|u| serde_json::from_str::<Value>(u.get()).ok()).filter(Value::is_object)
        {
            usage = parse_usage(Some(&u));
        }
        let Some(Obj(Some(choice))) = chunk.choices.0.into_iter().next() else { continue };
        let delta = choice.delta.0.unwrap_or_default();
        if let Some(piece) = delta.content.as_str() {
            if !piece.is_empty() {
                on_text(piece);
                text.push_str(piece);
            }
        }
        for tc in delta.tool_calls.0.into_iter().flat_map(|o| o.0) {
            let idx = tc.index.0.unwrap_or(calls.len() as u64);
            if idx >= super::MAX_STREAM_INDEX {
                return Err(protocol(format!("tool call index {idx} is out of range")));
            }
            let idx = idx as usize;
            while calls.len() <= idx {
                calls.push(PartialCall::default());
            }
            let call = &mut calls[idx];
            if let Some(id) = tc.id.as_str() {
                call.id = id.to_string();
            }
            let function = tc.function.0.unwrap_or_default();
            if let Some(n) = function.name.as_str() {
                call.name.push_str(n);
            }
            if let Some(a) = function.arguments.as_str() {
                call.args.push_str(a);
            }
        }
        if let Some(f) = choice.finish_reason.as_str() {
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
    use super::super::openai_wire::WireMessages;
    use super::super::Role;
    use super::*;
    use serde_json::json;

    #[test]
    fn history_translates_to_chat_messages() {
        let msgs = vec![
            Message { role: Role::User, content: vec![Block::Text { text: "hi".into() }].into() },
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolUse { id: "c1".into(), name: "bash".into(), input: json!({"command": "ls"}) }]
                    .into(),
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::result("c1", "a.txt", false),
                    Block::Text { text: "<reminder>Update your todos.</reminder>".into() },
                ]
                .into(),
            },
        ];
        let body = WireMessages { system: "sys", messages: &msgs };
        let w = serde_json::to_value(&body).unwrap();
        assert_eq!(w.as_array().unwrap().len(), 5, "{w}");
        assert_eq!(w[1], json!({"role": "user", "content": "hi"}));
        assert_eq!(w[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(w[2]["tool_calls"][0]["function"]["arguments"], "{\"command\":\"ls\"}");
        assert_eq!(w[2]["content"], Value::Null);
        assert_eq!(w[3], json!({"role": "tool", "tool_call_id": "c1", "content": "a.txt"}));
        assert_eq!(w[4], json!({"role": "user", "content": "<reminder>Update your todos.</reminder>"}));
    }

    #[test]
    fn assistant_text_with_calls_and_raw_arguments() {
        let msgs = vec![Message {
            role: Role::Assistant,
            content: vec![
                Block::Text { text: "one".into() },
                Block::Text { text: "two".into() },
                Block::ToolUse { id: "c1".into(), name: "bash".into(), input: json!("{not json") },
            ]
            .into(),
        }];
        let w = serde_json::to_value(WireMessages { system: "s", messages: &msgs }).unwrap();
        assert_eq!(
            w[1],
            json!({"role": "assistant", "content": "one\n\ntwo", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{not json"}}]})
        );
    }

    #[test]
    fn images_go_in_a_user_message_after_the_tool_messages() {
        let png = crate::Image::new("image/png", "iVBORw0K");
        let msgs = vec![Message {
            role: Role::User,
            content: vec![
                Block::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "Image a.png (image/png, 1x1, 1 KB) follows.".into(),
                    is_error: false,
                    images: vec![png.clone()],
                },
                Block::result("c2", "done", false),
                Block::Text { text: "and this one?".into() },
                Block::Image { source: crate::Image::new("image/gif", "R0lGOD") },
            ]
            .into(),
        }];
        let w = serde_json::to_value(WireMessages { system: "s", messages: &msgs }).unwrap();
        assert_eq!(
            w,
            json!([
                {"role": "system", "content": "s"},
                {"role": "tool", "tool_call_id": "c1", "content": "Image a.png (image/png, 1x1, 1 KB) follows."},
                {"role": "tool", "tool_call_id": "c2", "content": "done"},
                {"role": "user", "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                    {"type": "text", "text": "and this one?"},
                    {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lGOD"}}]}
            ])
        );
        // A turn of tool results whose only image is a tool's: a user message of that image alone.
        let only = vec![Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: "c1".into(),
                content: "x".into(),
                is_error: false,
                images: vec![png],
            }]
            .into(),
        }];
        let w = serde_json::to_value(WireMessages { system: "s", messages: &only }).unwrap();
        assert_eq!(
            w[2],
            json!({"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}]})
        );
    }
}
