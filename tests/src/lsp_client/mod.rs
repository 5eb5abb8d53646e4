//! A fake editor that drives the real `stepwise lsp` server, for end-to-end tests and benchmarks.
//!
//! Modelled on the test servers of ruff/ty (`tests/e2e`) and typos-lsp: the [`TestEditor`] speaks LSP over
//! an in-memory duplex pipe to [`stepwise::lsp::serve`] running in a task, or over the stdio of the real
//! binary. A background reader parses every frame the server writes and sorts it into queues:
//! responses (by id), notifications, and server→client requests. Server requests are either answered
//! at once by a per-method [`Policy`] (applying edits to the editor's own document model like a real
//! editor, then reporting them with `didChange`) or queued for the test to answer.
//!
//! Every notification and queued request must be read by the test: [`TestEditor::finish`] (and drop)
//! fails listing whatever went unread, except methods declared ignorable with [`TestEditor::ignore`].
//!
//! Files: `positions.rs` (positions, URIs), `policy.rs` (client presets, answers), `state.rs` (queues,
//! documents, answering server requests), `framing.rs` (reader, writer), `binary.rs` (the real binary),
//! `builder.rs`, `editor.rs` (the [`TestEditor`]), `helpers.rs` (for tests).

mod binary;
mod builder;
mod editor;
mod framing;
mod helpers;
mod policy;
mod positions;
mod state;

pub use crate::temp::TempDir;
pub use binary::stepwise_binary;
pub use builder::EditorBuilder;
pub use editor::{RunLog, TestEditor};
pub use helpers::{
    answer_all, answers_query, assert_valid_conversation, auto_editor, diagnostics_answer, editor,
    editor_without_model, eventually, folder_and_state, querying_editor, tool_results, TRANSCRIPT,
};
pub use policy::{Answer, ClientPreset, Policy};
pub use positions::{file_uri, offset_at, position_at, range, uri_path, PosEncoding};
pub use state::{Doc, Handled, Incoming, Report};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};

/// How long waits last unless a test says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The environment variable that holds the (fake) API key; named by `apiKeyEnv` in initializationOptions.
pub const TEST_KEY_ENV: &str = "STEPWISE_TEST_KEY";
pub const TEST_KEY: &str = "sk-stepwise-test";

/// Sets [`TEST_KEY_ENV`] once per process. Every caller wants the same value, so a race is harmless;
/// it happens before any server of this process starts reading the environment.
pub fn ensure_test_key() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| std::env::set_var(TEST_KEY_ENV, TEST_KEY));
}

/// JSON-RPC error codes.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const REQUEST_CANCELLED: i64 = -32800;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorObj {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl ErrorObj {
    pub fn new(code: i64, message: impl Into<String>) -> ErrorObj {
        ErrorObj { code, message: message.into(), data: None }
    }

    pub(crate) fn from_json(v: &Value) -> ErrorObj {
        ErrorObj {
            code: v.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: v.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
            data: v.get("data").cloned(),
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            v["data"] = d.clone();
        }
        v
    }
}

impl std::fmt::Display for ErrorObj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error {}: {}", self.code, self.message)
    }
}
