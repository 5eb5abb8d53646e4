//! Keeping a long conversation inside the model's context window.
//!
//! When the latest prompt passes a share of the window (or the provider says it is too long), the
//! conversation is compacted before the next request: first old tool results are shortened (the newest
//! rounds stay whole); if that is not enough, the model is asked for a summary in a separate request
//! without tools, and the conversation continues from the original task, the summary, the current plan
//! and the newest rounds. The plan lives outside the conversation and is never lost.

use std::collections::HashMap;

use crate::llm::{Block, Llm, LlmError, Message, ModelRequest, Role};
use crate::plan::Plan;

/// Tool results of the newest rounds kept whole.
const KEEP_ROUNDS: usize = 3;
/// Older tool results longer than this are shortened.
const SHORTEN_OVER: usize = 1_000;
/// Messages of the newest rounds kept after a summary (whole rounds: an assistant turn and its results).
const KEEP_AFTER_SUMMARY: usize = 4;

const SUMMARY_SYSTEM: &str = "You summarise a coding agent's conversation so that the agent can continue it with \
only your summary. Keep: the user's requests, decisions made, files read or changed (with paths), commands run \
and their important results, errors met, and what remains to do. Be concise; no preamble.";
const SUMMARY_ASK: &str = "Summarise the conversation so far for the agent that continues it.";

/// A rough token count (four characters a token, an image `images::TOKENS`, not its base64), for
/// decisions before the provider has counted.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    let image = crate::images::TOKENS as usize * 4;
    let chars: usize = messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|b| match b {
            Block::Text { text } => text.len(),
            Block::ToolUse { name, input, .. } => name.len() + encoded_len(input),
            Block::ToolResult { content, images, .. } => content.len() + images.len() * image,
            Block::Image { .. } => image,
        })
        .sum();
    (chars / 4) as u64
}

/// The length of `v` encoded as JSON, counted without building the string.
fn encoded_len(v: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    // Writing a `Value` cannot fail, and this writer never does.
    let _ = serde_json::to_writer(&mut n, v);
    n.0
}

/// Shortens tool results older than the newest `KEEP_ROUNDS` rounds (their images left out too); returns
/// how many were shortened.
pub fn shorten_old_results(messages: &mut [Message]) -> usize {
    let names: HashMap<String, String> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::ToolUse { id, name, .. } => Some((id.clone(), name.clone())),
            _ => None,
        })
        .collect();
    let result_turns: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.content.iter().any(|b| matches!(b, Block::ToolResult { .. })))
        .map(|(i, _)| i)
        .collect();
    let old = result_turns.len().saturating_sub(KEEP_ROUNDS);
    let mut shortened = 0;
    let long = |content: &str| content.len() > SHORTEN_OVER && !content.starts_with("[earlier output of");
    let heavy =
        |b: &Block| matches!(b, Block::ToolResult { content, images, .. } if long(content) || !images.is_empty());
    for &i in &result_turns[..old] {
        // Blocks are shared with copies of the conversation (llm::Content): only those changed are copied.
        if !messages[i].content.iter().any(heavy) {
            continue;
        }
        for b in &mut messages[i].content {
            if let Block::ToolResult { tool_use_id, content, images, .. } = b {
                if !images.is_empty() {
                    let what = match images.len() {
                        1 => "its image".to_string(),
                        n => format!("its {n} images"),
                    };
                    *content = format!("{content}\n[{what} left out to save context; read it again if needed]");
                    images.clear();
                    shortened += 1;
                } else if long(content) {
                    let tool = names.get(tool_use_id).map(String::as_str).unwrap_or("a tool");
                    *content = format!(
                        "[earlier output of {tool}, {} characters, left out to save context; run it again if needed]",
                        content.chars().count()
                    );
                    shortened += 1;
                }
            }
        }
    }
    shortened
}

/// The conversation after a summary: [task + summary + plan] then the newest whole rounds.
fn rebuild(messages: &[Message], summary: &str, plan: &Plan) -> Vec<Message> {
    let task = messages
        .first()
        .and_then(|m| {
            m.content.iter().find_map(|b| if let Block::Text { text } = b { Some(text.clone()) } else { None })
        })
        .unwrap_or_default();
    // The kept tail starts with an assistant turn, so roles alternate after the new first user turn and
    // every tool result keeps its call.
    let mut start = messages.len().saturating_sub(KEEP_AFTER_SUMMARY);
    while start < messages.len() && messages[start].role != Role::Assistant {
        start += 1;
    }
    let mut head = format!("{task}\n\n[Summary of the conversation so far]\n{summary}");
    if !plan.is_empty() {
        head.push_str(&format!("\n\n[Current plan]\n{}", plan.render()));
    }
    let mut out = vec![Message { role: Role::User, content: vec![Block::Text { text: head }].into() }];
    out.extend_from_slice(&messages[start..]);
    out
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub summarized: bool,
    /// A summary that failed: the conversation was only shortened, and this says why.
    pub summary_error: Option<String>,
}

/// Compacts `messages` so that their estimate falls under `target` tokens when it can; `force_summary`
/// when the provider already refused the shortened conversation.
pub async fn compact(
    messages: &mut Vec<Message>,
    plan: &Plan,
    llm: &Llm,
    target: u64,
    force_summary: bool,
) -> Compacted {
    let tokens_before = estimate_tokens(messages);
    shorten_old_results(messages);
    if !force_summary && estimate_tokens(messages) <= target {
        return Compacted {
            tokens_before,
            tokens_after: estimate_tokens(messages),
            summarized: false,
            summary_error: None,
        };
    }
    let mut ask = messages.clone();
    let q = Block::Text { text: SUMMARY_ASK.into() };
    match ask.last_mut() {
        Some(m) if m.role == Role::User => m.content.push(q),
        _ => ask.push(Message { role: Role::User, content: vec![q].into() }),
    }
    let req = ModelRequest { system: SUMMARY_SYSTEM, messages: &ask, tools: &[] };
    let summary = llm.complete(&req, &mut |_| {}).await.map(|r| r.text());
    match summary {
        Ok(text) if !text.trim().is_empty() => {
            *messages = rebuild(messages, text.trim(), plan);
            Compacted { tokens_before, tokens_after: estimate_tokens(messages), summarized: true, summary_error: None }
        }
        Ok(_) => fallback(messages, tokens_before, "the model's summary was empty".into()),
        Err(e) => fallback(messages, tokens_before, summary_failure(&e)),
    }
}

fn fallback(messages: &[Message], tokens_before: u64, why: String) -> Compacted {
    Compacted { tokens_before, tokens_after: estimate_tokens(messages), summarized: false, summary_error: Some(why) }
}

fn summary_failure(e: &LlmError) -> String {
    format!("the summary request failed: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round(i: usize, output: &str) -> [Message; 2] {
        [
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolUse {
                    id: format!("t{i}"),
                    name: "bash".into(),
                    input: json!({"command": "x"}),
                }]
                .into(),
            },
            Message { role: Role::User, content: vec![Block::result(format!("t{i}"), output, false)].into() },
        ]
    }

    fn conversation(rounds: usize, output: &str) -> Vec<Message> {
        let mut m = vec![Message { role: Role::User, content: vec![Block::Text { text: "the task".into() }].into() }];
        for i in 0..rounds {
            m.extend(round(i, output));
        }
        m
    }

    #[test]
    fn tool_inputs_count_as_their_json() {
        let input = json!({"command": "echo \"é\"", "n": [1, 2]});
        let m = vec![Message {
            role: Role::Assistant,
            content: vec![Block::ToolUse { id: "t".into(), name: "bash".into(), input: input.clone() }].into(),
        }];
        assert_eq!(encoded_len(&input), input.to_string().len());
        assert_eq!(estimate_tokens(&m), ((4 + input.to_string().len()) / 4) as u64);
    }

    #[test]
    fn old_long_results_are_shortened_and_the_newest_kept() {
        let long = "x".repeat(5000);
        let mut m = conversation(5, &long);
        assert_eq!(shorten_old_results(&mut m), 2);
        let contents: Vec<&str> = m
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| if let Block::ToolResult { content, .. } = b { Some(content.as_str()) } else { None })
            .collect();
        assert_eq!(
            contents[0],
            "[earlier output of bash, 5000 characters, left out to save context; run it again if needed]"
        );
        assert_eq!(contents[1], contents[0]);
        assert!(contents[2..].iter().all(|c| c.len() == 5000), "the newest rounds stay whole");
        // Nothing left to shorten: a second pass changes nothing.
        assert_eq!(shorten_old_results(&mut m), 0);
    }

    #[test]
    fn an_image_counts_as_its_tokens_and_old_ones_are_left_out() {
        let image = crate::llm::Image::new("image/png", "A".repeat(4_000_000));
        let mut m = conversation(5, "short");
        let with_image = |b: &mut Block| {
            if let Block::ToolResult { images, .. } = b {
                images.push(image.clone());
            }
        };
        for i in [2, 10] {
            with_image(&mut m[i].content[0]);
        }
        m[0].content.push(Block::Image { source: image.clone() });
        let text_only = estimate_tokens(&conversation(5, "short"));
        assert_eq!(estimate_tokens(&m), text_only + 3 * crate::images::TOKENS, "not its 4 MB of base64");
        // The old round's image goes with the old output; the newest rounds' stays, and the user's.
        assert_eq!(shorten_old_results(&mut m), 1);
        assert_eq!(
            m[2].content[0],
            Block::result("t0", "short\n[its image left out to save context; read it again if needed]", false)
        );
        assert!(matches!(&m[10].content[0], Block::ToolResult { images, .. } if images.len() == 1));
        assert_eq!(crate::images::count(&m), 2);
        assert_eq!(estimate_tokens(&m), estimate_tokens(&conversation(5, "short")) + 2 * crate::images::TOKENS + 15);
    }

    #[test]
    fn a_rebuilt_conversation_keeps_calls_with_their_results() {
        let m = conversation(5, "out");
        let mut plan = Plan::default();
        plan.update(&json!([{"id": "1", "text": "Keep going", "status": "in_progress"}])).unwrap();
        let out = rebuild(&m, "what happened", &plan);
        assert_eq!(out[0].role, Role::User);
        let Block::Text { text } = &out[0].content[0] else { panic!() };
        assert!(text.starts_with(
            "the task\n\n[Summary of the conversation so far]\nwhat happened\n\n[Current plan]\n[>] #1: Keep going"
        ));
        // Roles alternate, and the kept tail starts with a call whose result follows it.
        for pair in out.windows(2) {
            assert_ne!(pair[0].role, pair[1].role);
        }
        assert!(matches!(out[1].content[0], Block::ToolUse { .. }));
        assert!(out.len() < m.len());
    }
}
