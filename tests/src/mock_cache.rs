//! The mock's prompt-cache simulation (`MockOptions::simulate_usage`): token counts estimated as
//! characters / 4, Anthropic's explicit cache (a prefix is cached up to each `cache_control` breakpoint
//! the mock has seen) and OpenAI's automatic prefix cache (any earlier request's prefix, at message
//! boundaries).

use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::Hasher;

use serde_json::Value;

use crate::mock::Usage;

/// The mock's estimate of a text's tokens.
pub fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// Prefixes seen so far, by hash of their text.
#[derive(Default)]
pub struct PrefixCache {
    seen: HashSet<u64>,
}

/// One piece of the prompt in order, and whether a breakpoint follows it.
struct Unit {
    text: String,
    breakpoint: bool,
    /// The end of a message (OpenAI caches at these boundaries).
    boundary: bool,
}

fn strip(v: &Value) -> (String, bool) {
    match v {
        Value::Object(m) => {
            let mut m = m.clone();
            let marked = m.remove("cache_control").is_some();
            (Value::Object(m).to_string(), marked)
        }
        other => (other.to_string(), false),
    }
}

fn units(body: &Value) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut push = |v: &Value, boundary: bool| {
        let (text, breakpoint) = strip(v);
        out.push(Unit { text, breakpoint, boundary });
    };
    for t in body["tools"].as_array().into_iter().flatten() {
        push(t, false);
    }
    match &body["system"] {
        Value::Array(blocks) => blocks.iter().for_each(|b| push(b, false)),
        Value::Null => {}
        s => push(s, false),
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        match &m["content"] {
            Value::Array(blocks) if !blocks.is_empty() => {
                let n = blocks.len();
                push(&Value::String(m["role"].as_str().unwrap_or_default().into()), false);
                for (i, b) in blocks.iter().enumerate() {
                    push(b, i + 1 == n);
                }
                // OpenAI messages carry their tool calls next to their content.
                if let Some(calls) = m.get("tool_calls") {
                    push(calls, true);
                }
            }
            _ => {
                let mut m = m.clone();
                if let Some(o) = m.as_object_mut() {
                    o.remove("cache_control");
                }
                push(&m, true)
            }
        }
    }
    out
}

impl PrefixCache {
    /// Anthropic: the longest prefix ending at a breakpoint seen before is read; up to the last
    /// breakpoint of this request is written; the rest is plain input. Every breakpoint prefix is remembered.
    pub fn anthropic(&mut self, body: &Value) -> (u64, u64, u64) {
        let (mut h, mut chars) = (DefaultHasher::new(), 0usize);
        let (mut read, mut last_mark) = (0usize, 0usize);
        let mut marks = Vec::new();
        for u in units(body) {
            h.write(u.text.as_bytes());
            chars += u.text.len();
            if u.breakpoint {
                let key = h.clone().finish();
                if self.seen.contains(&key) {
                    read = chars;
                }
                last_mark = chars;
                marks.push(key);
            }
        }
        self.seen.extend(marks);
        let read_t = estimate_tokens(read);
        let write_t = estimate_tokens(last_mark).saturating_sub(read_t);
        let input_t = estimate_tokens(chars).saturating_sub(read_t + write_t);
        (input_t, read_t, write_t)
    }

    /// OpenAI: the longest prefix (at a message boundary) of any earlier request is read from the cache.
    /// Returns (prompt tokens, cached tokens).
    pub fn openai(&mut self, body: &Value) -> (u64, u64) {
        let (mut h, mut chars, mut read) = (DefaultHasher::new(), 0usize, 0usize);
        let mut keys = Vec::new();
        for u in units(body) {
            h.write(u.text.as_bytes());
            chars += u.text.len();
            if u.boundary {
                let key = h.clone().finish();
                if self.seen.contains(&key) {
                    read = chars;
                }
                keys.push(key);
            }
        }
        self.seen.extend(keys);
        (estimate_tokens(chars), estimate_tokens(read))
    }
}

/// The usage the mock reports for a request when the script gives none and simulation is on.
pub fn simulated(cache: &mut PrefixCache, openai: bool, body: &Value, output_chars: usize) -> Usage {
    let output_tokens = estimate_tokens(output_chars).max(1);
    if openai {
        let (prompt, cached) = cache.openai(body);
        Usage {
            input_tokens: prompt - cached,
            output_tokens,
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: 0,
        }
    } else {
        let (input, read, write) = cache.anthropic(body);
        Usage { input_tokens: input, output_tokens, cache_read_input_tokens: read, cache_creation_input_tokens: write }
    }
}
