//! The request body without encoding the whole history every round: the conversation only grows (or is
//! replaced by a compaction), so the encoded messages of earlier rounds are kept and only what is new is
//! encoded. What is kept is checked against the conversation first (`Message::same`: the kept copies
//! share their blocks with the conversation until either changes, `content.rs`), so a history changed
//! in any way is encoded afresh from where it differs: the bytes sent are always exactly what encoding
//! the whole request would give.

use super::{Message, ModelRequest, ProviderConfig, ToolSpec};
use serde::Serialize;

/// How a wire format writes a request, in pieces.
pub trait Pieces {
    /// The bytes before the first message's and after the last message's encoding.
    fn frame(&self, cfg: &ProviderConfig, req: &ModelRequest<'_>) -> serde_json::Result<Frame>;
    /// Wire state the frame depends on besides the request (OpenAI's name of the output limit).
    fn frame_state(&self) -> u8 {
        0
    }
    /// Message `i`, with the separator that precedes it, appended to `out`; `mark`: with a cache breakpoint.
    fn message(&self, i: usize, m: &Message, mark: bool, out: &mut Vec<u8>) -> serde_json::Result<()>;
    /// Whether message `i` of `n` carries a cache breakpoint in this request (Anthropic's rolling
    /// breakpoints).
    fn marked(&self, _cfg: &ProviderConfig, _i: usize, _n: usize) -> bool {
        false
    }
    /// How many of `n` messages come before the first breakpoint: those are kept for the next request;
    /// the rest are encoded fresh each round (they are written differently once they are older).
    fn stable(&self, _cfg: &ProviderConfig, n: usize) -> usize {
        n
    }
}

pub struct Frame {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
}

struct FrameKey {
    system: String,
    tools: Vec<ToolSpec>,
    state: u8,
}

impl FrameKey {
    fn matches(&self, req: &ModelRequest<'_>, state: u8) -> bool {
        self.state == state
            && self.system == req.system
            && self.tools.len() == req.tools.len()
            && self.tools.iter().zip(req.tools).all(|(a, b)| {
                a.name == b.name && a.description == b.description && a.input_schema.same(&b.input_schema)
            })
    }
}

/// Messages encoded one by one, kept with copies of the messages they were encoded from: a conversation
/// that only grew is encoded only where it grew.
#[derive(Default)]
pub struct KeptMessages {
    /// Copies of the messages encoded in `bytes` (sharing their blocks), to tell whether the conversation
    /// still starts with them.
    mirror: Vec<Message>,
    /// Where each mirrored message's encoding ends in `bytes`.
    ends: Vec<usize>,
    bytes: Vec<u8>,
}

impl KeptMessages {
    /// The encoding of `messages[..upto]`: what was kept for the messages the conversation still starts
    /// with (compared exactly), and `encode` for the rest, which is kept from now on.
    pub fn update(
        &mut self,
        messages: &[Message],
        upto: usize,
        mut encode: impl FnMut(usize, &Message, &mut Vec<u8>) -> serde_json::Result<()>,
    ) -> serde_json::Result<&[u8]> {
        let upto = upto.min(messages.len());
        let same = self.mirror.iter().zip(messages).take_while(|(a, b)| a.same(b)).count();
        self.mirror.truncate(same);
        self.ends.truncate(same);
        self.bytes.truncate(self.ends.last().copied().unwrap_or(0));
        for (i, m) in messages.iter().enumerate().take(upto).skip(same) {
            if let Err(e) = encode(i, m, &mut self.bytes) {
                self.bytes.truncate(self.ends.last().copied().unwrap_or(0));
                return Err(e);
            }
            self.ends.push(self.bytes.len());
            self.mirror.push(m.clone());
        }
        let end = if upto == 0 { 0 } else { self.ends[upto - 1] };
        Ok(&self.bytes[..end])
    }

    /// Every kept message's encoding.
    pub fn encoded(&self) -> &[u8] {
        &self.bytes
    }
}

/// The request body's pieces of the latest request.
#[derive(Default)]
pub struct PrefixCache {
    frame: Option<(FrameKey, Frame)>,
    messages: KeptMessages,
}

impl PrefixCache {
    /// The whole request body.
    pub fn encode<P: Pieces>(
        &mut self,
        wire: &P,
        cfg: &ProviderConfig,
        req: &ModelRequest<'_>,
    ) -> serde_json::Result<Vec<u8>> {
        let state = wire.frame_state();
        if !self.frame.as_ref().is_some_and(|(key, _)| key.matches(req, state)) {
            let key = FrameKey { system: req.system.to_string(), tools: req.tools.to_vec(), state };
            self.frame = Some((key, wire.frame(cfg, req)?));
        }
        let Some((_, frame)) = &self.frame else { return Ok(Vec::new()) };
        let n = req.messages.len();
        // Kept: everything before the first message with a breakpoint.
        let stable = wire.stable(cfg, n).min(n);
        let kept = self.messages.update(req.messages, stable, |i, m, out| wire.message(i, m, false, out))?;
        let mut fresh = Vec::new();
        for (i, m) in req.messages.iter().enumerate().skip(stable) {
            wire.message(i, m, wire.marked(cfg, i, n), &mut fresh)?;
        }
        // Sized exactly: growing a body of the whole history would copy it again.
        let mut body = Vec::with_capacity(frame.head.len() + kept.len() + fresh.len() + frame.tail.len());
        body.extend_from_slice(&frame.head);
        body.extend_from_slice(kept);
        body.extend_from_slice(&fresh);
        body.extend_from_slice(&frame.tail);
        Ok(body)
    }
}

/// `value` (a struct) serialised without its closing brace, then `,"key":[`: a body up to its array's
/// first element.
pub fn open_array_field<T: Serialize>(value: &T, key: &str) -> serde_json::Result<Vec<u8>> {
    let mut out = serde_json::to_vec(value)?;
    out.pop();
    if out.len() > 1 {
        out.push(b',');
    }
    serde_json::to_writer(&mut out, key)?;
    out.extend_from_slice(b":[");
    Ok(out)
}

/// `value` (a struct) serialised without its opening brace, after the `]` that closes the array before it.
pub fn close_array_field<T: Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let rest = serde_json::to_vec(value)?;
    let mut out = Vec::with_capacity(rest.len() + 1);
    out.push(b']');
    if rest.len() > 2 {
        out.push(b',');
    }
    out.extend_from_slice(&rest[1..]);
    Ok(out)
}

/// `value` appended to `out`.
pub fn write<T: Serialize>(out: &mut Vec<u8>, value: &T) -> serde_json::Result<()> {
    serde_json::to_writer(out, value)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::Duration;

    use serde_json::json;

    use super::super::anthropic::{self, Anthropic};
    use super::super::openai::{self, OpenAi};
    use super::super::{Block, Image, ProviderKind, Role};
    use super::*;

    fn cfg(kind: ProviderKind, prompt_cache: bool) -> ProviderConfig {
        ProviderConfig {
            kind,
            model: "m\"odel".into(),
            base_url: "http://127.0.0.1:1".into(),
            api_key: String::new(),
            max_tokens: 100,
            timeout: Duration::from_secs(1),
            max_retries: 0,
            backoff: Duration::from_millis(1),
            context_window: 1000,
            prompt_cache,
        }
    }

    fn tools() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "bash".into(),
                description: "Run.".into(),
                input_schema: json!({"type": "object"}).into(),
            },
            ToolSpec {
                name: "todo".into(),
                description: "Plan \"it\".".into(),
                input_schema: json!({"required": ["items"]}).into(),
            },
        ]
    }

    /// Counts the messages encoded, kept or fresh, to show each is encoded a bounded number of times.
    struct Counting<P> {
        inner: P,
        kept: Cell<usize>,
    }

    impl<P: Pieces> Pieces for Counting<P> {
        fn frame(&self, cfg: &ProviderConfig, req: &ModelRequest<'_>) -> serde_json::Result<Frame> {
            self.inner.frame(cfg, req)
        }
        fn frame_state(&self) -> u8 {
            self.inner.frame_state()
        }
        fn message(&self, i: usize, m: &Message, mark: bool, out: &mut Vec<u8>) -> serde_json::Result<()> {
            self.kept.set(self.kept.get() + 1);
            self.inner.message(i, m, mark, out)
        }
        fn marked(&self, cfg: &ProviderConfig, i: usize, n: usize) -> bool {
            self.inner.marked(cfg, i, n)
        }
        fn stable(&self, cfg: &ProviderConfig, n: usize) -> usize {
            self.inner.stable(cfg, n)
        }
    }

    fn round(i: usize) -> [Message; 2] {
        let input =
            if i % 7 == 3 { json!("{not an object") } else { json!({"command": format!("echo {i} \"q\" \\ é")}) };
        [
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Text { text: format!("Round {i}\n") },
                    Block::ToolUse { id: format!("t{i}"), name: "bash".into(), input },
                ]
                .into(),
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        tool_use_id: format!("t{i}"),
                        content: "x".repeat(i * 10),
                        is_error: i.is_multiple_of(5),
                        // Some rounds read an image.
                        images: if i % 4 == 2 { vec![Image::new("image/png", format!("iVBOR{i}+/="))] } else { vec![] },
                    },
                    Block::Text { text: "<reminder>Update your todos.</reminder>".into() },
                ]
                .into(),
            },
        ]
    }

    /// Every request of a conversation that grows, is compacted and is summarised is byte for byte the
    /// whole body encoded afresh, in both formats, with and without breakpoints.
    #[test]
    fn the_pieces_add_up_to_the_whole_body_through_every_change() {
        let specs = tools();
        type Reference = Box<dyn Fn(&ProviderConfig, &ModelRequest<'_>) -> Vec<u8>>;
        let cases: Vec<(ProviderConfig, Reference)> = vec![
            (cfg(ProviderKind::Anthropic, true), Box::new(anthropic::reference_body)),
            (cfg(ProviderKind::Anthropic, false), Box::new(anthropic::reference_body)),
            (cfg(ProviderKind::Openai, false), Box::new(|c, r| openai::reference_body(&OpenAi::default(), c, r))),
        ];
        for (cfg, reference) in cases {
            let mut cache = PrefixCache::default();
            let mut messages: Vec<Message> = Vec::new();
            let mut check = |messages: &[Message], system: &str, tools: &[ToolSpec]| {
                let req = ModelRequest { system, messages, tools };
                let got = match cfg.kind {
                    ProviderKind::Anthropic => cache.encode(&Anthropic, &cfg, &req).unwrap(),
                    ProviderKind::Openai => cache.encode(&OpenAi::default(), &cfg, &req).unwrap(),
                };
                let want = reference(&cfg, &req);
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap(), "{:?}", cfg.kind);
            };
            check(&messages, "sys", &specs);
            let shot = Block::Image { source: Image::new("image/jpeg", "/9j/4AAQ") };
            messages.push(Message {
                role: Role::User,
                content: vec![Block::Text { text: "the task".into() }, shot.clone()].into(),
            });
            for i in 0..12 {
                check(&messages, "sys", &specs);
                messages.extend(round(i));
            }
            // A follow-up prompt joins the last user turn (the message changes in place), with an image.
            let Some(Message { content, .. }) = messages.last_mut() else { unreachable!() };
            content.push(Block::Text { text: "and then?".into() });
            content.push(shot);
            check(&messages, "sys", &specs);
            // An old result is shortened (compaction).
            if let Block::ToolResult { content, .. } = &mut messages[4].content[0] {
                *content = "[earlier output left out]".into();
            }
            check(&messages, "sys", &specs);
            // The summary request: another system prompt, no tools, one more block; then the main one again.
            let mut ask = messages.clone();
            ask.push(Message { role: Role::Assistant, content: vec![Block::Text { text: "summary?".into() }].into() });
            check(&ask, "summarise", &[]);
            check(&messages, "sys", &specs);
            // The conversation replaced by a summary and its newest rounds.
            let tail = messages.split_off(messages.len() - 4);
            messages = vec![Message { role: Role::User, content: vec![Block::Text { text: "summary".into() }].into() }];
            messages.extend(tail);
            check(&messages, "sys", &specs);
            messages.extend(round(40));
            check(&messages, "sys", &specs);
            // A new conversation.
            check(&[], "sys", &specs);
        }
    }

    #[test]
    fn a_growing_conversation_encodes_each_message_a_bounded_number_of_times() {
        for prompt_cache in [true, false] {
            let cfg = cfg(ProviderKind::Anthropic, prompt_cache);
            let wire = Counting { inner: Anthropic, kept: Cell::new(0) };
            let mut cache = PrefixCache::default();
            let specs = tools();
            let mut messages =
                vec![Message { role: Role::User, content: vec![Block::Text { text: "the task".into() }].into() }];
            for i in 0..100 {
                let req = ModelRequest { system: "sys", messages: &messages, tools: &specs };
                let body = cache.encode(&wire, &cfg, &req).unwrap();
                assert_eq!(body, anthropic::reference_body(&cfg, &req));
                messages.extend(round(i));
            }
            // Encoding afresh would have encoded 1 + 3 + 5 + … ≈ 10,000 messages.
            assert!(wire.kept.get() <= 3 * messages.len(), "{} encodings", wire.kept.get());
        }
    }

    #[test]
    fn a_tool_input_with_its_keys_in_another_order_is_encoded_again() {
        let cfg = cfg(ProviderKind::Anthropic, false);
        let mut cache = PrefixCache::default();
        let specs = tools();
        let call = |input: serde_json::Value| Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse { id: "t".into(), name: "bash".into(), input }].into(),
        };
        let mut messages = vec![call(json!({"a": 1, "b": [1, {"c": 2, "d": 3}]}))];
        let mut reordered = serde_json::Map::new();
        reordered.insert("b".into(), json!([1, {"c": 2, "d": 3}]));
        reordered.insert("a".into(), json!(1));
        for _ in 0..2 {
            let req = ModelRequest { system: "s", messages: &messages, tools: &specs };
            assert_eq!(cache.encode(&Anthropic, &cfg, &req).unwrap(), anthropic::reference_body(&cfg, &req));
            messages[0] = call(serde_json::Value::Object(reordered.clone()));
        }
    }

    #[test]
    fn the_output_limit_name_switching_rebuilds_the_frame() {
        let cfg = cfg(ProviderKind::Openai, false);
        let wire = OpenAi::default();
        let mut cache = PrefixCache::default();
        let messages = vec![Message { role: Role::User, content: vec![Block::Text { text: "hi".into() }].into() }];
        let specs = tools();
        let req = ModelRequest { system: "sys", messages: &messages, tools: &specs };
        let before = String::from_utf8(cache.encode(&wire, &cfg, &req).unwrap()).unwrap();
        assert!(before.contains("\"max_tokens\":100"), "{before}");
        let refused = super::super::LlmError::Status {
            provider: "openai",
            status: 400,
            message: "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead.".into(),
            retry_after: None,
        };
        assert!(super::super::wire::Wire::adapt(&wire, &refused));
        let after = cache.encode(&wire, &cfg, &req).unwrap();
        assert_eq!(after, openai::reference_body(&wire, &cfg, &req));
        assert!(String::from_utf8(after).unwrap().contains("\"max_completion_tokens\":100"));
    }
}
