//! A scripted mock LLM HTTP server.
//!
//! It speaks the real wire formats of the Anthropic Messages API (`POST /v1/messages`) and of
//! OpenAI chat completions (`POST /v1/chat/completions`, also `/chat/completions`), both as a
//! single JSON body and as server-sent events when the request has `"stream": true`.
//! Each model request consumes the next [`Step`] of the [`Script`].
//!
//! HTTP/1.1 is handled by hand over a tokio `TcpListener`: keep-alive, `Content-Length` and
//! chunked request bodies, `Expect: 100-continue`; JSON answers carry `Content-Length`,
//! streams use `Transfer-Encoding: chunked`.
//!
//! Files: `script.rs` (what the mock serves), `server.rs` (the server, recorded requests), `http.rs`
//! (HTTP/1.1), `routing.rs` (the answer to each request), `wire.rs` (both wire formats).

mod http;
pub mod process;
mod routing;
mod script;
mod server;
mod wire;

pub use script::{HttpError, Raw, Script, Step, StreamError, ToolCall, Turn, Usage};
pub use server::{first_user_text, MockModel, MockOptions, Recorded};
pub use wire::word_pieces;
