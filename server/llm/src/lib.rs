//! Model providers behind one request/response shape.
//!
//! The conversation is kept in the Anthropic content-block shape (it is the richer of the two wire
//! formats); the OpenAI client translates at its edge.

mod anthropic;
mod anthropic_wire;
pub mod client;
mod content;
mod error;
mod http;
mod image;
mod loose;
mod openai;
mod openai_wire;
mod prefix;
mod replay;
mod retry;
mod sse;
mod window;
mod wire;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

pub use content::Content;
pub use error::LlmError;
pub use image::{DataUrl, Image};
pub use prefix::KeptMessages;
pub use replay::{Recorder, Replay};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// What the tool showed besides its text (`read_file` of an image): on Anthropic's wire inside
        /// the result's content, on OpenAI's in a user message after the tool messages.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// An image the user gave with a prompt (`{"type": "image", "source": {...}}`, Anthropic's block).
    Image {
        source: Image,
    },
}

impl Block {
    /// A tool's result without images.
    pub fn result(tool_use_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Block {
        Block::ToolResult { tool_use_id: tool_use_id.into(), content: content.into(), is_error, images: Vec::new() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Content,
}

impl Message {
    /// Whether `other` is a copy of this message that neither side has changed since (`content.rs`).
    pub fn same(&self, other: &Message) -> bool {
        self.role == other.role && self.content.same(&other.content)
    }
}

/// Tokens of one answer (or a sum of answers), the same on both wire formats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// The whole prompt, cached or not.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The part of the prompt read from the provider's cache.
    pub cache_read_tokens: u64,
    /// The part of the prompt written to the provider's cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// Context windows when none is configured: Anthropic's models, and a common size for the rest.
pub const DEFAULT_WINDOW_ANTHROPIC: u64 = 200_000;
pub const DEFAULT_WINDOW_OTHER: u64 = 128_000;

/// Stream indices past this are a broken or hostile server, not a model's answer (no giant vectors).
pub(crate) const MAX_STREAM_INDEX: u64 = 1024;

#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    /// Owned for tools learnt at run time (MCP servers'); borrowed for the built-in ones.
    pub name: std::borrow::Cow<'static, str>,
    pub description: std::borrow::Cow<'static, str>,
    pub input_schema: Schema,
}

/// A tool's input schema, kept as its JSON text: every request of a run carries the same one, written
/// into the body as it is (no value built and encoded per run: about 10 k instructions a tool before the
/// first model request, issue 39), and the request's cached frame (`prefix`) tells it unchanged by its
/// address instead of comparing it each round.
#[derive(Debug, Clone)]
pub enum Schema {
    /// A built-in tool's, written in the source (valid JSON: the catalog's tests read each).
    Static(&'static str),
    /// One learnt at run time (an MCP server's), encoded once.
    Shared(std::sync::Arc<RawValue>),
}

impl Schema {
    pub fn text(&self) -> &str {
        match self {
            Schema::Static(text) => text,
            Schema::Shared(raw) => raw.get(),
        }
    }

    /// The same schema: the same one shared, or written the same.
    pub fn same(&self, other: &Schema) -> bool {
        match (self, other) {
            (Schema::Static(a), Schema::Static(b)) if std::ptr::eq(*a, *b) => true,
            (Schema::Shared(a), Schema::Shared(b)) if std::sync::Arc::ptr_eq(a, b) => true,
            _ => self.text() == other.text(),
        }
    }

    /// The schema as a value (`Null` where its text is not JSON).
    pub fn value(&self) -> Value {
        serde_json::from_str(self.text()).unwrap_or(Value::Null)
    }
}

/// Equal as JSON values (key order and spacing aside).
impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.same(other) || self.value() == other.value()
    }
}

impl From<Value> for Schema {
    fn from(v: Value) -> Schema {
        match serde_json::value::to_raw_value(&v) {
            Ok(raw) => Schema::Shared(raw.into()),
            Err(_) => Schema::Static("{}"),
        }
    }
}

impl Serialize for Schema {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            // Checked as it is written (one pass over a few hundred bytes, once a run: the frame is kept).
            Schema::Static(text) => match serde_json::from_str::<&RawValue>(text) {
                Ok(raw) => raw.serialize(s),
                Err(e) => Err(serde::ser::Error::custom(format!("a built-in tool's schema is not JSON: {e}"))),
            },
            Schema::Shared(raw) => raw.serialize(s),
        }
    }
}

pub struct ModelRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub content: Vec<Block>,
    /// The provider's stop reason, normalised to Anthropic's names (`end_turn`, `tool_use`, `max_tokens`).
    pub stop_reason: String,
    #[serde(default)]
    pub usage: Usage,
}

impl ModelResponse {
    pub fn text(&self) -> String {
        let mut out = String::new();
        for b in &self.content {
            if let Block::Text { text } = b {
                out.push_str(text);
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Anthropic,
    Openai,
}

impl ProviderKind {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "anthropic" => Some(Self::Anthropic),
            "openai" => Some(Self::Openai),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Openai => "openai",
        }
    }
}

/// Everything a provider client needs. `api_key` is never logged or serialised.
#[derive(Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub model: String,
    pub base_url: String,
    pub api_key: String,
    pub max_tokens: u32,
    /// The longest silence allowed: waiting for the answer to start, and between pieces of a stream.
    pub timeout: Duration,
    pub max_retries: u32,
    /// First backoff delay; doubles per retry.
    pub backoff: Duration,
    /// The model's context window in tokens (`STEPWISE_CONTEXT_WINDOW`); 0 when not configured: then
    /// an OpenAI-compatible server is asked (`Llm::learn_window`), else the provider's default applies.
    pub context_window: u64,
    /// Anthropic cache breakpoints on the stable prefix and the newest messages (`STEPWISE_PROMPT_CACHE`).
    pub prompt_cache: bool,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .finish_non_exhaustive()
    }
}

enum Backend {
    Anthropic(wire::Client<anthropic::Anthropic>),
    Openai(wire::Client<openai::OpenAi>),
    Replay(Replay),
}

/// A model endpoint: a real provider or a recorded session, optionally recording what it answers.
pub struct Llm {
    backend: Backend,
    recorder: Option<Mutex<Recorder>>,
    label: String,
    context_window: u64,
    /// Where to ask for the window when none was configured: (http client, base URL, model).
    ask_window: Option<(reqwest::Client, String, String)>,
}

impl Llm {
    /// A provider endpoint on the process's shared HTTP client; an error when that cannot be set up.
    pub fn new(cfg: ProviderConfig) -> Result<Llm, String> {
        let http = client::for_url(&cfg.base_url)?;
        let label = format!("{} {}", cfg.kind.name(), cfg.model);
        let ask_window = (cfg.context_window == 0 && cfg.kind == ProviderKind::Openai)
            .then(|| (http.clone(), cfg.base_url.clone(), cfg.model.clone()));
        let context_window = match (cfg.context_window, cfg.kind) {
            (0, ProviderKind::Anthropic) => DEFAULT_WINDOW_ANTHROPIC,
            (0, ProviderKind::Openai) => DEFAULT_WINDOW_OTHER,
            (n, _) => n,
        };
        let backend = match cfg.kind {
            ProviderKind::Anthropic => Backend::Anthropic(wire::Client::new(cfg, http, anthropic::Anthropic)),
            ProviderKind::Openai => Backend::Openai(wire::Client::new(cfg, http, openai::OpenAi::default())),
        };
        Ok(Llm { backend, recorder: None, label, context_window, ask_window })
    }

    pub fn replay(replay: Replay) -> Llm {
        Llm {
            label: "scripted replay".into(),
            backend: Backend::Replay(replay),
            recorder: None,
            context_window: DEFAULT_WINDOW_ANTHROPIC,
            ask_window: None,
        }
    }

    pub fn record_to(mut self, path: PathBuf) -> std::io::Result<Llm> {
        self.recorder = Some(Mutex::new(Recorder::create(path)?));
        Ok(self)
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// The model's context window in tokens.
    pub fn context_window(&self) -> u64 {
        self.context_window
    }

    /// With no window configured, asks an OpenAI-compatible server for its own (llama.cpp, vLLM).
    pub async fn learn_window(mut self) -> Llm {
        if let Some((http, base, model)) = self.ask_window.take() {
            if let Some(n) = window::discover(&http, &base, &model).await {
                tracing::info!(tokens = n, "the server reports its context window");
                self.context_window = n;
            }
        }
        self
    }

    /// One model turn. `on_text` receives assistant text as it streams.
    pub async fn complete(
        &self,
        req: &ModelRequest<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ModelResponse, LlmError> {
        let resp = match &self.backend {
            Backend::Anthropic(c) => c.complete(req, on_text).await?,
            Backend::Openai(c) => c.complete(req, on_text).await?,
            Backend::Replay(r) => r.next(on_text).await?,
        };
        if let Some(rec) = &self.recorder {
            if let Err(e) = client::lock(rec).write(&resp) {
                tracing::warn!("could not record model response: {e}");
            }
        }
        Ok(resp)
    }
}

/// A tool input that is not a JSON object cannot be echoed back to Anthropic as-is.
pub(crate) fn object_or_empty(v: &Value) -> Value {
    if v.is_object() {
        v.clone()
    } else {
        Value::Object(Default::default())
    }
}
