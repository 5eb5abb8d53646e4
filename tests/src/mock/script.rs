//! The script the mock serves: steps, turns, tool calls, usage and scripted errors.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Value};

/// The steps the mock serves, in order. Deserializes from `[...]` or `{"steps": [...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Script(pub Vec<Step>);

impl Script {
    pub fn new(steps: Vec<Step>) -> Script {
        Script(steps)
    }

    /// Parses a script from JSON text (`[...]` or `{"steps": [...]}`).
    pub fn from_json(text: &str) -> Result<Script, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Loads a script from a JSON file.
    pub fn load(path: impl AsRef<Path>) -> std::io::Result<Script> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)?;
        Script::from_json(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))
    }
}

impl From<Vec<Step>> for Script {
    fn from(steps: Vec<Step>) -> Script {
        Script(steps)
    }
}

impl<'de> Deserialize<'de> for Script {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Script, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let list = match value {
            Value::Array(list) => list,
            Value::Object(mut map) => match map.remove("steps") {
                Some(Value::Array(list)) => list,
                _ => return Err(D::Error::custom("a script object needs a \"steps\" array")),
            },
            _ => return Err(D::Error::custom("a script is an array of steps or {\"steps\": [...]}")),
        };
        list.into_iter()
            .enumerate()
            .map(|(i, v)| serde_json::from_value(v).map_err(|e| D::Error::custom(format!("step {i}: {e}"))))
            .collect::<Result<Vec<Step>, _>>()
            .map(Script)
    }
}

/// One scripted answer, tagged by `"type"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    /// One model response.
    Turn(Turn),
    /// An HTTP error status.
    HttpError(HttpError),
    /// Accept the request and never answer.
    Hang,
    /// Start an SSE stream, then drop the connection mid-stream.
    StreamError(StreamError),
    /// Exactly this status, content type and body: what a proxy, a misconfigured or hostile server sends.
    Raw(Raw),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Raw {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Step {
    pub fn raw(status: u16, content_type: impl Into<String>, body: impl Into<String>) -> Step {
        Step::Raw(Raw { status, content_type: content_type.into(), body: body.into() })
    }
}

impl Step {
    /// A turn that only says `text`.
    pub fn text(text: impl Into<String>) -> Step {
        Step::Turn(Turn::text(text))
    }

    /// A turn with one tool call and no text.
    pub fn tool(name: impl Into<String>, input: Value) -> Step {
        Step::Turn(Turn::default().with_tool(name, input))
    }

    /// An HTTP error with the provider's default error body.
    pub fn http_error(status: u16) -> Step {
        Step::HttpError(HttpError::new(status))
    }

    /// A stream cut off after `message_start` (and `text`, if any).
    pub fn stream_error(text: Option<&str>) -> Step {
        Step::StreamError(StreamError { text: text.map(str::to_owned) })
    }
}

/// One model response. See the crate docs for how it is rendered per provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Anthropic or OpenAI spelling; mapped to the other provider's name when needed
    /// (`end_turn`<->`stop`, `tool_use`<->`tool_calls`, `max_tokens`<->`length`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Delay before the response starts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Delay between SSE events.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chunk_delay_ms: u64,
}

impl Turn {
    pub fn text(text: impl Into<String>) -> Turn {
        Turn { text: Some(text.into()), ..Turn::default() }
    }
    pub fn with_text(mut self, text: impl Into<String>) -> Turn {
        self.text = Some(text.into());
        self
    }
    pub fn with_tool(mut self, name: impl Into<String>, input: Value) -> Turn {
        self.tool_calls.push(ToolCall { name: name.into(), input, id: None });
        self
    }
    pub fn with_tool_id(mut self, id: impl Into<String>, name: impl Into<String>, input: Value) -> Turn {
        self.tool_calls.push(ToolCall { name: name.into(), input, id: Some(id.into()) });
        self
    }
    pub fn with_stop_reason(mut self, reason: impl Into<String>) -> Turn {
        self.stop_reason = Some(reason.into());
        self
    }
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Turn {
        self.usage = Some(Usage { input_tokens, output_tokens, ..Usage::default() });
        self
    }
    /// Anthropic's split of the prompt: `input` uncached, `read` from the cache, `write` into it.
    /// OpenAI renders `prompt_tokens = input + read + write` with `cached_tokens = read`.
    pub fn with_cache_usage(mut self, input: u64, read: u64, write: u64, output_tokens: u64) -> Turn {
        self.usage = Some(Usage {
            input_tokens: input,
            output_tokens,
            cache_read_input_tokens: read,
            cache_creation_input_tokens: write,
        });
        self
    }
    pub fn with_delay_ms(mut self, ms: u64) -> Turn {
        self.delay_ms = ms;
        self
    }
    pub fn with_chunk_delay_ms(mut self, ms: u64) -> Turn {
        self.chunk_delay_ms = ms;
        self
    }
}

impl From<Turn> for Step {
    fn from(turn: Turn) -> Step {
        Step::Turn(turn)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
}

impl Default for Usage {
    fn default() -> Usage {
        Usage { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }
    }
}

impl Usage {
    pub(crate) fn anthropic(&self, output_tokens: u64) -> Value {
        let mut u = json!({"input_tokens": self.input_tokens, "output_tokens": output_tokens});
        if self.cache_read_input_tokens + self.cache_creation_input_tokens > 0 {
            u["cache_read_input_tokens"] = json!(self.cache_read_input_tokens);
            u["cache_creation_input_tokens"] = json!(self.cache_creation_input_tokens);
        }
        u
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpError {
    pub status: u16,
    /// The response body; default: the provider's error shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Extra response headers (values may be given as JSON numbers).
    #[serde(default, deserialize_with = "string_map", skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

impl HttpError {
    pub fn new(status: u16) -> HttpError {
        HttpError { status, body: None, headers: BTreeMap::new(), delay_ms: 0 }
    }
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> HttpError {
        self.headers.insert(name.into(), value.into());
        self
    }
    pub fn body(mut self, body: Value) -> HttpError {
        self.body = Some(body);
        self
    }
}

impl From<HttpError> for Step {
    fn from(e: HttpError) -> Step {
        Step::HttpError(e)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamError {
    /// Text streamed before the connection drops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub(crate) fn empty_object() -> Value {
    json!({})
}

pub(crate) fn string_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let map = BTreeMap::<String, Value>::deserialize(d)?;
    Ok(map
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (k, v)
        })
        .collect())
}
