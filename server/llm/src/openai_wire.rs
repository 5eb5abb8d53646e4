//! The chat-completions request body, serialised straight from the conversation (no `serde_json::Value`
//! tree of the whole history per round). Anthropic-shaped history becomes chat messages: tool results
//! become `role: tool` messages, in order, followed by any text of the same user turn (the reminder, a
//! follow-up prompt); an assistant turn's tool calls go in its `tool_calls`. Images (a tool's, the
//! user's) go in that user message as `image_url` parts with a data URL: a tool message carries text only.

use std::fmt;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::{Block, DataUrl, Image, Message, Role, Schema, ToolSpec};

/// The body after the messages: the tools and the request's settings.
#[derive(Serialize)]
pub struct Tail<'a> {
    pub tools: Vec<WireTool<'a>>,
    pub stream: bool,
    pub stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
}

/// The whole body in one piece: what the pieces (`OpenAi`'s `Pieces`) must add up to (tests compare them).
#[cfg(test)]
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
    parameters: &'a Schema,
}

impl<'a> WireTool<'a> {
    pub fn new(t: &'a ToolSpec) -> Self {
        WireTool {
            kind: "function",
            function: Function { name: &t.name, description: &t.description, parameters: &t.input_schema },
        }
    }
}

/// The system prompt and the conversation as chat messages, in one piece (tests).
#[cfg(test)]
pub struct WireMessages<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
}

/// The text blocks of a message joined by blank lines, written without an intermediate string.
pub struct Joined<'a>(&'a [Block]);

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

struct Text<'a, 'b>(&'b Joined<'a>);

impl Serialize for Text<'_, '_> {
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

pub struct Calls<'a>(&'a [Block]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some(Call { id, name, input }),
            _ => None,
        }))
    }
}

/// A user message's parts when it carries images: the tools' images, the text, the user's images.
pub struct Parts<'a>(&'a [Block]);

impl<'a> Serialize for Parts<'a> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Url<'a> {
            url: DataUrl<'a>,
        }
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Part<'a, 'b> {
            ImageUrl { image_url: Url<'a> },
            Text { text: Text<'a, 'b> },
        }
        let image = |i: &'a Image| Part::ImageUrl { image_url: Url { url: i.data_url() } };
        let tools = self.0.iter().flat_map(|b| match b {
            Block::ToolResult { images, .. } => images.as_slice(),
            _ => &[],
        });
        let users = self.0.iter().filter_map(|b| match b {
            Block::Image { source } => Some(source),
            _ => None,
        });
        let joined = Joined(self.0);
        let text = (!joined.is_empty()).then_some(Part::Text { text: Text(&joined) });
        s.collect_seq(tools.map(image).chain(text).chain(users.map(image)))
    }
}

fn has_images(blocks: &[Block]) -> bool {
    blocks.iter().any(|b| match b {
        Block::ToolResult { images, .. } => !images.is_empty(),
        Block::Image { .. } => true,
        _ => false,
    })
}

/// One chat message of the body; a conversation message becomes several ([`elements`]).
pub enum Element<'a> {
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
    Assistant {
        text: Option<Joined<'a>>,
        calls: Option<Calls<'a>>,
    },
    User(Joined<'a>),
    /// A user message with images: its content is a list of parts.
    UserParts(Parts<'a>),
}

impl Serialize for Element<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct ToolMessage<'a> {
            role: &'static str,
            tool_call_id: &'a str,
            content: &'a str,
        }
        #[derive(Serialize)]
        struct Assistant<'a, 'b> {
            role: &'static str,
            content: Option<Text<'a, 'b>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            tool_calls: Option<&'b Calls<'a>>,
        }
        match self {
            Element::Tool { tool_call_id, content } => ToolMessage { role: "tool", tool_call_id, content }.serialize(s),
            Element::Assistant { text, calls } => {
                Assistant { role: "assistant", content: text.as_ref().map(Text), tool_calls: calls.as_ref() }
                    .serialize(s)
            }
            Element::User(text) => Plain { role: "user", content: Text(text) }.serialize(s),
            Element::UserParts(parts) => Plain { role: "user", content: parts }.serialize(s),
        }
    }
}

#[derive(Serialize)]
pub struct Plain<C: Serialize> {
    pub role: &'static str,
    pub content: C,
}

/// The chat messages `m` becomes, in order: its tool results, then its text (with an assistant turn's
/// tool calls, or a user turn's images); a user turn without text or images adds no message of its own.
pub fn elements<E>(m: &Message, mut f: impl FnMut(&Element<'_>) -> Result<(), E>) -> Result<(), E> {
    for b in &m.content {
        if let Block::ToolResult { tool_use_id, content, .. } = b {
            f(&Element::Tool { tool_call_id: tool_use_id, content })?;
        }
    }
    let text = Joined(&m.content);
    match m.role {
        Role::Assistant => {
            let has_calls = m.content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
            f(&Element::Assistant {
                text: (!text.is_empty()).then_some(text),
                calls: has_calls.then_some(Calls(&m.content)),
            })
        }
        Role::User if has_images(&m.content) => f(&Element::UserParts(Parts(&m.content))),
        Role::User if !text.is_empty() => f(&Element::User(text)),
        Role::User => Ok(()),
    }
}

#[cfg(test)]
impl Serialize for WireMessages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(None)?;
        seq.serialize_element(&Plain { role: "system", content: self.system })?;
        for m in self.messages {
            elements(m, |e| seq.serialize_element(e))?;
        }
        seq.end()
    }
}
