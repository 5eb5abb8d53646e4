//! The chat-completions request body, serialised straight from the conversation (no `serde_json::Value`
//! tree of the whole history per round). Anthropic-shaped history becomes chat messages: tool results
//! become `role: tool` messages, in order, followed by any text of the same user turn (the reminder, a
//! follow-up prompt); an assistant turn's tool calls go in its `tool_calls`.

use std::fmt;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::{Block, Message, Role, ToolSpec};

#[derive(Serialize)]
pub struct WireRequest<'a> {
    pub model: &'a str,
    pub messages: WireMessages<'a>,
    pub tools: Vec<WireTool<'a>>,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
}

#[derive(Serialize)]
pub struct StreamOptions {
    pub include_usage: bool,
}

#[derive(Serialize)]
pub struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> WireTool<'a> {
    pub fn new(t: &'a ToolSpec) -> Self {
        WireTool {
            kind: "function",
            function: Function { name: &t.name, description: &t.description, parameters: &t.input_schema },
        }
    }
}

pub struct WireMessages<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
}

/// The text blocks of a message joined by blank lines, written without an intermediate string.
struct Joined<'a>(&'a [Block]);

impl Joined<'_> {
    fn is_empty(&self) -> bool {
        !self.0.iter().any(|b| matches!(b, Block::Text { text } if !text.is_empty()))
    }
}

impl fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for b in self.0 {
            if let Block::Text { text } = b {
                if text.is_empty() {
                    continue;
                }
                if !first {
                    f.write_str("\n\n")?;
                }
                f.write_str(text)?;
                first = false;
            }
        }
        Ok(())
    }
}

struct Text<'a>(Joined<'a>);

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// Tool arguments as the JSON string chat completions expect (a model's raw, unparsable string as it was).
struct Arguments<'a>(&'a Value);

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(raw) => s.serialize_str(raw),
            other => s.collect_str(other),
        }
    }
}

struct Call<'a> {
    id: &'a str,
    name: &'a str,
    input: &'a Value,
}

impl Serialize for Call<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct F<'a> {
            name: &'a str,
            arguments: Arguments<'a>,
        }
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("id", self.id)?;
        m.serialize_entry("type", "function")?;
        m.serialize_entry("function", &F { name: self.name, arguments: Arguments(self.input) })?;
        m.end()
    }
}

struct Calls<'a>(&'a [Block]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some(Call { id, name, input }),
            _ => None,
        }))
    }
}

impl Serialize for WireMessages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Plain<C: Serialize> {
            role: &'static str,
            content: C,
        }
        #[derive(Serialize)]
        struct ToolMessage<'a> {
            role: &'static str,
            tool_call_id: &'a str,
            content: &'a str,
        }
        let mut seq = s.serialize_seq(None)?;
        seq.serialize_element(&Plain { role: "system", content: self.system })?;
        for m in self.messages {
            for b in &m.content {
                if let Block::ToolResult { tool_use_id, content, .. } = b {
                    seq.serialize_element(&ToolMessage { role: "tool", tool_call_id: tool_use_id, content })?;
                }
            }
            let text = Joined(&m.content);
            match m.role {
                Role::Assistant => {
                    #[derive(Serialize)]
                    struct Assistant<'a> {
                        role: &'static str,
                        content: Option<Text<'a>>,
                        #[serde(skip_serializing_if = "Option::is_none")]
                        tool_calls: Option<Calls<'a>>,
                    }
                    let has_calls = m.content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
                    seq.serialize_element(&Assistant {
                        role: "assistant",
                        content: (!text.is_empty()).then_some(Text(text)),
                        tool_calls: has_calls.then_some(Calls(&m.content)),
                    })?
                }
                Role::User if !text.is_empty() => {
                    seq.serialize_element(&Plain { role: "user", content: Text(text) })?
                }
                Role::User => {}
            }
        }
        seq.end()
    }
}
