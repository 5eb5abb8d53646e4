//! Test support for stepwise: a scripted mock LLM server speaking the Anthropic and OpenAI wire formats,
//! and a fake editor driving the LSP sidecar (`lsp_client`).

pub mod checkpoint_steps;
pub mod disk;
pub mod images;
pub mod intel;
pub mod lsp_client;
pub mod mcp_servers;
pub mod mock;
pub mod mock_cache;
pub mod pty;
pub mod sent;
pub mod temp;
pub mod terminal;

pub use mock::{HttpError, MockModel, MockOptions, Recorded, Script, Step, StreamError, ToolCall, Turn, Usage};
pub use temp::TempDir;
pub mod acp_agent;
pub mod acp_client;
pub mod acp_terminals;
