//! The wire formats: a scripted turn as an Anthropic message or OpenAI completion, whole or as stream events.

use serde_json::{json, Value};

use super::routing::*;
use super::script::*;
use super::server::*;

pub(crate) struct Ctx {
    pub(crate) provider: Provider,
    pub(crate) model: String,
    pub(crate) stream: bool,
    pub(crate) include_usage: bool,
    pub(crate) id: u64,
    pub(crate) created: u64,
}

impl Ctx {
    fn message_id(&self) -> String {
        match self.provider {
            Provider::Anthropic => format!("msg_mock{:06}", self.id),
            Provider::OpenAi => format!("chatcmpl-mock{:06}", self.id),
        }
    }

    pub(crate) fn headers(&self) -> Vec<(String, String)> {
        match self.provider {
            Provider::Anthropic => vec![("request-id".into(), format!("req_mock{:06}", self.id))],
            Provider::OpenAi => vec![("x-request-id".into(), format!("req_mock{:06}", self.id))],
        }
    }
}

pub(crate) struct Call {
    id: String,
    name: String,
    input: Value,
}

pub(crate) fn assign_ids(turn: &Turn, provider: Provider, shared: &Shared) -> Vec<Call> {
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

pub(crate) fn stop_reason(turn: &Turn, calls: &[Call], provider: Provider) -> String {
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
pub(crate) fn split_even(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

pub(crate) fn anthropic_message(turn: &Turn, calls: &[Call], ctx: &Ctx) -> Value {
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

pub(crate) fn anthropic_events(turn: &Turn, calls: &[Call], ctx: &Ctx) -> Vec<(&'static str, Value)> {
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

pub(crate) fn openai_usage(turn: &Turn) -> Value {
    let u = turn.usage.unwrap_or_default();
    let prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
    let mut v = json!({"prompt_tokens": prompt, "completion_tokens": u.output_tokens,
           "total_tokens": prompt + u.output_tokens});
    if u.cache_read_input_tokens > 0 {
        v["prompt_tokens_details"] = json!({"cached_tokens": u.cache_read_input_tokens});
    }
    v
}

pub(crate) fn openai_completion(turn: &Turn, calls: &[Call], ctx: &Ctx) -> Value {
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

pub(crate) fn openai_chunks(turn: &Turn, calls: &[Call], ctx: &Ctx) -> Vec<Value> {
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
