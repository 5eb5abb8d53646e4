//! The Messages API's request body, serialised straight from the conversation: the system prompt and the
//! tools with their cache breakpoints, and each message's blocks in the API's shape (a tool result's
//! images inside its content).

use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::{object_or_empty, Block, Image, Message, ToolSpec};

/// `{"type": "ephemeral"}`: the prompt up to and including the marked block is cached. At most four per
/// request; we use up to four: the tools, the system prompt, and two rolling ones in the history.
#[derive(Serialize)]
pub struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

pub const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// A value with a cache breakpoint after it.
#[derive(Serialize)]
pub struct Cached<T> {
    #[serde(flatten)]
    inner: T,
    cache_control: CacheControl,
}

/// The system prompt: a plain string, or one text block carrying a breakpoint. It never changes between
/// rounds (plan renders and reminders go in the newest message), so the prefix stays byte-stable.
pub struct WireSystem<'a> {
    pub text: &'a str,
    pub cache: bool,
}

impl Serialize for WireSystem<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.cache {
            return s.serialize_str(self.text);
        }
        #[derive(Serialize)]
        struct Text<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            text: &'a str,
        }
        [Cached { inner: Text { kind: "text", text: self.text }, cache_control: EPHEMERAL }].serialize(s)
    }
}

/// The tool list, its last tool carrying a breakpoint when caching is on.
pub struct WireTools<'a> {
    pub tools: &'a [ToolSpec],
    pub cache: bool,
}

impl Serialize for WireTools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.tools.len()))?;
        for (i, t) in self.tools.iter().enumerate() {
            if self.cache && i + 1 == self.tools.len() {
                seq.serialize_element(&Cached { inner: t, cache_control: EPHEMERAL })?;
            } else {
                seq.serialize_element(t)?;
            }
        }
        seq.end()
    }
}

/// A message as the Messages API takes it: `Block`'s own shape (`WireBlock`); with `cache`, its last
/// block carries a breakpoint.
pub struct WireMessage<'a> {
    pub message: &'a Message,
    pub cache: bool,
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Content<'a>(&'a [Block], bool);
        impl Serialize for Content<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for (i, b) in self.0.iter().enumerate() {
                    if self.1 && i + 1 == self.0.len() {
                        seq.serialize_element(&Cached { inner: WireBlock(b), cache_control: EPHEMERAL })?
                    } else {
                        seq.serialize_element(&WireBlock(b))?
                    }
                }
                seq.end()
            }
        }
        let mut m = s.serialize_struct("Message", 2)?;
        m.serialize_field("role", &self.message.role)?;
        m.serialize_field("content", &Content(&self.message.content, self.cache))?;
        m.end()
    }
}

/// A block as the Messages API takes it: `Block`'s own shape, except that a tool input which is not a
/// JSON object (a model's malformed arguments) is sent back as `{}`, and a tool result with images has
/// them in its content, after its text: `"content": [{"type": "text", …}, {"type": "image", …}]`.
struct WireBlock<'a>(&'a Block);

impl Serialize for WireBlock<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Block::ToolUse { id, name, input } if !input.is_object() => {
                Block::ToolUse { id: id.clone(), name: name.clone(), input: object_or_empty(input) }.serialize(s)
            }
            Block::ToolResult { tool_use_id, content, is_error, images } if !images.is_empty() => {
                #[derive(Serialize)]
                #[serde(tag = "type", rename_all = "snake_case")]
                enum Part<'a> {
                    Text { text: &'a str },
                    Image { source: &'a Image },
                }
                let text = (!content.is_empty()).then_some(Part::Text { text: content });
                let parts: Vec<Part> =
                    text.into_iter().chain(images.iter().map(|i| Part::Image { source: i })).collect();
                let mut m = s.serialize_struct("ToolResult", 4)?;
                m.serialize_field("type", "tool_result")?;
                m.serialize_field("tool_use_id", tool_use_id)?;
                m.serialize_field("content", &parts)?;
                if *is_error {
                    m.serialize_field("is_error", &true)?;
                }
                m.end()
            }
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Role;

    fn wire(blocks: Vec<Block>, cache: bool) -> serde_json::Value {
        let message = Message { role: Role::User, content: blocks.into() };
        serde_json::to_value(WireMessage { message: &message, cache }).unwrap()
    }

    #[test]
    fn a_tools_images_go_inside_its_result_after_its_text() {
        let png = Image::new("image/png", "iVBORw0K");
        let source = json!({"type": "base64", "media_type": "image/png", "data": "iVBORw0K"});
        let read = Block::ToolResult {
            tool_use_id: "t1".into(),
            content: "Image a.png (image/png, 1x1, 1 KB) follows.".into(),
            is_error: false,
            images: vec![png.clone()],
        };
        assert_eq!(
            wire(vec![read.clone(), Block::Text { text: "<reminder>".into() }], false),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [
                    {"type": "text", "text": "Image a.png (image/png, 1x1, 1 KB) follows."},
                    {"type": "image", "source": source}]},
                {"type": "text", "text": "<reminder>"}]})
        );
        // The breakpoint on the last block, an error's flag, and no empty text block (the API refuses one).
        let bare =
            Block::ToolResult { tool_use_id: "t2".into(), content: String::new(), is_error: true, images: vec![png] };
        assert_eq!(
            wire(vec![bare], true),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "image", "source": source}],
                 "is_error": true, "cache_control": {"type": "ephemeral"}}]})
        );
        // Without images a result's content stays a string.
        assert_eq!(wire(vec![Block::result("t3", "ok", false)], false)["content"][0]["content"], "ok");
    }

    #[test]
    fn the_users_image_is_an_image_block() {
        let shot = Block::Image { source: Image::new("image/webp", "UklGRg==") };
        assert_eq!(
            wire(vec![Block::Text { text: "what is wrong here?".into() }, shot], true),
            json!({"role": "user", "content": [
                {"type": "text", "text": "what is wrong here?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": "UklGRg=="},
                 "cache_control": {"type": "ephemeral"}}]})
        );
    }
}
