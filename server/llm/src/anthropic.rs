//! Anthropic Messages API with streaming.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::anthropic_wire::{WireMessage, WireSystem, WireTools};
use super::loose::{Count, Obj, Text};
use super::prefix::{self, Frame, Pieces};
use super::sse::SseStream;
use super::wire::Wire;
use super::{Block, LlmError, Message, ModelRequest, ModelResponse, ProviderConfig, Usage};

const PROVIDER: &str = "anthropic";

/// The Messages API's format (`POST /v1/messages`).
pub struct Anthropic;

impl Wire for Anthropic {
    const PATH: &'static str = "/v1/messages";

    fn headers(cfg: &ProviderConfig) -> Vec<(&'static str, String)> {
        vec![("x-api-key", cfg.api_key.clone()), ("anthropic-version", "2023-06-01".into())]
    }

    fn parse_whole(v: &Value) -> Result<ModelResponse, LlmError> {
        parse_message(v)
    }

    async fn read_stream(sse: SseStream, on_text: &mut (dyn FnMut(&str) + Send)) -> Result<ModelResponse, LlmError> {
        read_stream(sse, on_text).await
    }
}

/// The body is `WireRequest`'s serialisation, written in pieces: `{"model":…,"max_tokens":…,"system":…,
/// "messages":[` the messages `],"tools":[…],"stream":true}`.
impl Pieces for Anthropic {
    fn frame(&self, cfg: &ProviderConfig, req: &ModelRequest<'_>) -> serde_json::Result<Frame> {
        #[derive(Serialize)]
        struct Head<'a> {
            model: &'a str,
            max_tokens: u32,
            system: WireSystem<'a>,
        }
        #[derive(Serialize)]
        struct Tail<'a> {
            tools: WireTools<'a>,
            stream: bool,
        }
        let cache = cfg.prompt_cache;
        let head =
            Head { model: &cfg.model, max_tokens: cfg.max_tokens, system: WireSystem { text: req.system, cache } };
        let tail = Tail { tools: WireTools { tools: req.tools, cache }, stream: true };
        Ok(Frame { head: prefix::open_array_field(&head, "messages")?, tail: prefix::close_array_field(&tail)? })
    }

    fn message(&self, i: usize, m: &Message, mark: bool, out: &mut Vec<u8>) -> serde_json::Result<()> {
        if i > 0 {
            out.push(b',');
        }
        prefix::write(out, &WireMessage { message: m, cache: mark })
    }

    // Rolling breakpoints: the newest message (written now) and the previous request's newest (read
    // now), so each round reads the whole history before it from the cache.
    fn marked(&self, cfg: &ProviderConfig, i: usize, n: usize) -> bool {
        cfg.prompt_cache && (i + 1 == n || i + 3 == n)
    }

    fn stable(&self, cfg: &ProviderConfig, n: usize) -> usize {
        if cfg.prompt_cache {
            n.saturating_sub(3)
        } else {
            n
        }
    }
}

fn protocol(message: String) -> LlmError {
    LlmError::Protocol { provider: PROVIDER, message }
}

/// The whole body in one piece (as it was encoded before the pieces were kept between rounds): what
/// the pieces must add up to.
#[cfg(test)]
pub fn reference_body(cfg: &ProviderConfig, req: &ModelRequest<'_>) -> Vec<u8> {
    let cache = cfg.prompt_cache;
    let n = req.messages.len();
    let body = WireRequest {
        model: &cfg.model,
        max_tokens: cfg.max_tokens,
        system: WireSystem { text: req.system, cache },
        messages: req
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| WireMessage { message: m, cache: cache && (i + 1 == n || i + 3 == n) })
            .collect(),
        tools: WireTools { tools: req.tools, cache },
        stream: true,
    };
    serde_json::to_vec(&body).unwrap()
}

#[cfg(test)]
#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    system: WireSystem<'a>,
    messages: Vec<WireMessage<'a>>,
    tools: WireTools<'a>,
    stream: bool,
}

/// The whole prompt is `input_tokens` (uncached) + cache writes + cache reads; missing or malformed counts
/// as 0.
fn parse_usage(v: Option<&Value>) -> Usage {
    let get = |k: &str| v.and_then(|u| u.get(k)).and_then(Value::as_u64).unwrap_or(0);
    let (read, write) = (get("cache_read_input_tokens"), get("cache_creation_input_tokens"));
    Usage {
        input_tokens: get("input_tokens") + read + write,
        output_tokens: get("output_tokens"),
        cache_read_tokens: read,
        cache_write_tokens: write,
    }
}

fn parse_message(v: &Value) -> Result<ModelResponse, LlmError> {
    let blocks =
        v.get("content").and_then(Value::as_array).ok_or_else(|| protocol("message without content".into()))?;
    let mut content = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = b.get("text").and_then(Value::as_str).unwrap_or_default();
                if !text.is_empty() {
                    content.push(Block::Text { text: text.to_string() });
                }
            }
            Some("tool_use") => content.push(Block::ToolUse {
                id: b.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
                name: b.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                input: b.get("input").cloned().unwrap_or(Value::Null),
            }),
            _ => {} // thinking and other blocks are not part of this loop
        }
    }
    Ok(ModelResponse {
        content,
        stop_reason: v.get("stop_reason").and_then(Value::as_str).unwrap_or("end_turn").to_string(),
        usage: parse_usage(v.get("usage")),
    })
}

enum Partial {
    Text(String),
    Tool { id: String, name: String, json: String },
    Ignored,
}

/// One streamed event: only what is read of it (`loose.rs`: a mistyped field is left out, as before).
#[derive(Deserialize, Default)]
#[serde(default)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    index: Count,
    #[serde(borrow)]
    message: Obj<MessageStart<'a>>,
    #[serde(borrow)]
    content_block: Obj<BlockStart<'a>>,
    #[serde(borrow)]
    delta: Obj<Delta<'a>>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Obj<StreamError<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MessageStart<'a> {
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct BlockStart<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    text: Text<'a>,
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow)]
    name: Text<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    text: Text<'a>,
    #[serde(borrow)]
    partial_json: Text<'a>,
    #[serde(borrow)]
    stop_reason: Text<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StreamError<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    message: Text<'a>,
}

async fn read_stream(mut sse: SseStream, on_text: &mut (dyn FnMut(&str) + Send)) -> Result<ModelResponse, LlmError> {
    let mut blocks: Vec<Partial> = Vec::new();
    let mut usage = Usage::default();
    let mut stop_reason = None;
    let mut finished = false;
    while let Some(ev) = sse.next().await? {
        if ev.data.is_empty() {
            continue;
        }
        let v: Event =
            serde_json::from_str(&ev.data).map_err(|e| protocol(format!("invalid event data ({e}): {}", ev.data)))?;
        let kind = v.kind.as_str().unwrap_or(ev.event.as_str());
        let index = v.index.0.unwrap_or(0);
        if index >= super::MAX_STREAM_INDEX {
            return Err(protocol(format!("content block index {index} is out of range")));
        }
        let index = index as usize;
        match kind {
            "message_start" => {
                let u = v.message.0.and_then(|m| m.usage).and_then(|u| serde_json::from_str(u.get()).ok());
                usage = parse_usage(u.as_ref());
            }
            "content_block_start" => {
                let b = v.content_block.0.unwrap_or_default();
                let partial = match b.kind.as_str() {
                    Some("text") => {
                        let t = b.text.0.map(Cow::into_owned).unwrap_or_default();
                        if !t.is_empty() {
                            on_text(&t);
                        }
                        Partial::Text(t)
                    }
                    Some("tool_use") => Partial::Tool {
                        id: b.id.0.map(Cow::into_owned).unwrap_or_default(),
                        name: b.name.0.map(Cow::into_owned).unwrap_or_default(),
                        json: String::new(),
                    },
                    _ => Partial::Ignored,
                };
                while blocks.len() <= index {
                    blocks.push(Partial::Ignored);
                }
                blocks[index] = partial;
            }
            "content_block_delta" => {
                let d = v.delta.0.unwrap_or_default();
                match (blocks.get_mut(index), d.kind.as_str()) {
                    (Some(Partial::Text(t)), Some("text_delta")) => {
                        let piece = d.text.as_str().unwrap_or_default();
                        on_text(piece);
                        t.push_str(piece);
                    }
                    (Some(Partial::Tool { json, .. }), Some("input_json_delta")) => {
                        json.push_str(d.partial_json.as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v.delta.0.as_ref().and_then(|d| d.stop_reason.as_str()) {
                    stop_reason = Some(r.to_string());
                }
                let u: Option<Value> = v.usage.and_then(|u| serde_json::from_str(u.get()).ok());
                let count = |k: &str| u.as_ref().and_then(|u| u.get(k)).and_then(Value::as_u64);
                if let Some(o) = count("output_tokens") {
                    usage.output_tokens = o;
                }
                // Some servers report the prompt only at the end; then it replaces message_start's.
                if count("input_tokens").is_some() {
                    let late = parse_usage(u.as_ref());
                    usage = Usage { output_tokens: usage.output_tokens, ..late };
                }
            }
            "message_stop" => {
                finished = true;
                break;
            }
            "error" => {
                let e = v.error.0.unwrap_or_default();
                let msg = e.message.as_str().unwrap_or("unknown streaming error").to_string();
                let (status, retryable) = match e.kind.as_str() {
                    Some("overloaded_error") => (529, true),
                    Some("rate_limit_error") => (429, true),
                    Some("api_error") => (500, true),
                    _ => (400, false),
                };
                return Err(LlmError::Interrupted {
                    provider: PROVIDER,
                    status: Some(status),
                    message: msg,
                    retryable,
                });
            }
            _ => {} // ping, content_block_stop
        }
    }
    if !finished {
        return Err(LlmError::Interrupted {
            provider: PROVIDER,
            status: None,
            message: "stream ended before message_stop".into(),
            retryable: true,
        });
    }
    let content = blocks
        .into_iter()
        .filter_map(|p| match p {
            Partial::Text(text) if text.is_empty() => None,
            Partial::Text(text) => Some(Block::Text { text }),
            Partial::Tool { id, name, json } => {
                let input = if json.trim().is_empty() {
                    Value::Object(Default::default())
                } else {
                    // A malformed input is kept as a string; the tool layer reports it to the model.
                    serde_json::from_str(&json).unwrap_or(Value::String(json))
                };
                Some(Block::ToolUse { id, name, input })
            }
            Partial::Ignored => None,
        })
        .collect();
    Ok(ModelResponse { content, stop_reason: stop_reason.unwrap_or_else(|| "end_turn".into()), usage })
}
