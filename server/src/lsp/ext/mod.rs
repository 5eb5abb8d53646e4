//! The LSP extension, typed (as rust-analyzer's `lsp/ext.rs`): every `stepwise/*` method and
//! `stepwise.*` command with its payload. docs/protocol.md documents exactly these (a test keeps the two
//! in step); the JSON Schema generated from these types (docs/protocol.schema.json) is what the editors'
//! TypeScript is generated from and what the Neovim tests check the server's messages against.

mod commands;
mod notifications;
mod results;
pub mod schema;

pub use commands::*;
pub use notifications::*;
pub use results::*;

use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;

/// Declares the notifications from the server, each with its params type.
macro_rules! notifications {
    ($($ty:ident $method:literal ($params:ty);)*) => {
        $(
            pub enum $ty {}
            impl Notification for $ty {
                type Params = $params;
                const METHOD: &'static str = $method;
            }
        )*

        /// Notifications from the server.
        pub const NOTIFICATIONS: &[&str] = &[$($method,)*];

        /// Each notification's method with its params' schema.
        fn notification_schemas(g: &mut schemars::SchemaGenerator) -> Vec<(&'static str, schemars::Schema)> {
            vec![$(($method, g.subschema_for::<$params>()),)*]
        }
    };
}

notifications! {
    PlanNotification "stepwise/plan" (Plan);
    ReminderNotification "stepwise/reminder" (Reminder);
    StatusNotification "stepwise/status" (Status);
    AssistantTextNotification "stepwise/assistantText" (AssistantText);
    ToolCallNotification "stepwise/toolCall" (ToolCall);
    UsageNotification "stepwise/usage" (Usage);
    CompactedNotification "stepwise/compacted" (Compacted);
    CheckpointNotification "stepwise/checkpoint" (Checkpoint);
    McpNotification "stepwise/mcp" (Mcp);
    ReviewNotification "stepwise/review" (Review);
    BackgroundNotification "stepwise/background" (Background);
    DiagnosticsNotification "stepwise/diagnostics" (Diagnostics);
    SessionsNotification "stepwise/sessions" (Sessions);
    SubagentNotification "stepwise/subagent" (Subagent);
}

/// `stepwise/saveDocuments`: the editor saves the listed documents and says which it saved.
pub enum SaveDocuments {}
impl Request for SaveDocuments {
    type Params = SaveDocumentsParams;
    type Result = Option<SavedDocuments>;
    const METHOD: &'static str = "stepwise/saveDocuments";
}

/// `stepwise/ask`: the user's leave for a tool call, asked of a client that declares
/// `experimental.stepwise.ask` (others get `window/showMessageRequest`).
pub enum AskRequest {}
impl Request for AskRequest {
    type Params = AskParams;
    type Result = AskAnswer;
    const METHOD: &'static str = "stepwise/ask";
}

/// `stepwise/query`: the editor answers from its own language servers (docs/protocol.md, "Code
/// intelligence"). The result is the LSP result of the kind asked, or `null`; `DiagnosticsAnswer` for
/// `diagnostics`.
pub enum Query {}
impl Request for Query {
    type Params = QueryParams;
    type Result = Option<serde_json::Value>;
    const METHOD: &'static str = "stepwise/query";
}

/// Requests from the server.
pub const REQUESTS: &[&str] = &[SaveDocuments::METHOD, AskRequest::METHOD, Query::METHOD];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::session::FinishReason;

    /// Every `stepwise/...` and `stepwise....` name in the text, in backticks.
    fn names(doc: &str) -> BTreeSet<String> {
        doc.match_indices("`stepwise")
            .filter_map(|(at, _)| doc[at + 1..].split('`').next())
            .filter(|s| {
                let name = s.trim_start_matches("stepwise/").trim_start_matches("stepwise.");
                name.len() < s.len() && !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric())
            })
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn docs_protocol_md_documents_exactly_the_extension() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/protocol.md")).unwrap();
        let documented = names(&doc);
        let ours: BTreeSet<String> =
            NOTIFICATIONS.iter().chain(REQUESTS).chain(COMMANDS).map(|s| s.to_string()).collect();
        let missing: Vec<_> = ours.difference(&documented).collect();
        let unknown: Vec<_> = documented.difference(&ours).collect();
        assert!(missing.is_empty(), "not documented in docs/protocol.md: {missing:?}");
        assert!(unknown.is_empty(), "documented but not in the server: {unknown:?}");
        // Each is documented in a table row of its own section.
        for name in &ours {
            let row = format!("| `{name}`");
            assert!(doc.contains(&row), "{name} has no row in docs/protocol.md");
        }
    }

    #[test]
    fn a_diagnostics_block_is_read_into_lines_with_their_places() {
        let block = "<diagnostics>\nsrc/a b:c.ts:3:7: error: Expected 1:2: got x (ts)\nsrc/b.ts: not checked (the editor did not answer in 900 ms)\n(2 errors in files outside the workspace not shown)\nsrc/c.rs, src/d.rs: not checked (rust-analyzer could not start)\n</diagnostics>";
        let lines = DiagnosticLine::of_block(block);
        assert_eq!(lines.len(), 4);
        assert_eq!(
            (lines[0].path.as_deref(), lines[0].line, lines[0].column),
            (Some("src/a b:c.ts"), Some(3), Some(7))
        );
        assert_eq!(lines[0].text, "src/a b:c.ts:3:7: error: Expected 1:2: got x (ts)");
        assert_eq!((lines[1].path.as_deref(), lines[1].line), (Some("src/b.ts"), None));
        assert_eq!((lines[2].path.as_deref(), lines[2].line), (None, None));
        // A line naming several files links to none of them.
        assert_eq!((lines[3].path.as_deref(), lines[3].line), (None, None));
        assert_eq!(lines[3].text, "src/c.rs, src/d.rs: not checked (rust-analyzer could not start)");
    }

    #[test]
    fn payloads_are_camel_case_and_leave_out_what_is_absent() {
        let value = |v| serde_json::to_value(v).unwrap();
        let at = At { workspace: "file:///w".into(), session: "main".into() };
        let s = value(Status::idle(&at, "run-1", FinishReason::Error, Some("no key")));
        assert_eq!(
            s,
            serde_json::json!({"workspace": "file:///w", "session": "main", "state": "idle", "runId": "run-1", "reason": "error", "message": "no key"})
        );
        let s = Status { error_kind: Some(ErrorKind::Setup), ..Status::new(&at, "r", RunState::Running) };
        assert_eq!(value(s)["errorKind"], "setup");
    }
}
