//! Test support for stepwise: a scripted mock LLM server speaking the Anthropic and OpenAI wire formats.

pub mod mock;

pub use mock::{
    HttpError, MockModel, MockOptions, Recorded, Script, Step, StreamError, ToolCall, Turn, Usage,
};
