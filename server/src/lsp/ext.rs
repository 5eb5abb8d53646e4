//! The LSP extension, typed (as rust-analyzer's `lsp/ext.rs`): every `stepwise/*` method and
//! `stepwise.*` command with its payload. docs/protocol.md documents exactly these (a test keeps the two
//! in step); the editors' TypeScript and Lua read these fields.

use serde::Serialize;
use serde_json::Value;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;

use crate::plan::{By, PlanItem, PlanState};
use crate::session::FinishReason;

macro_rules! custom_notification {
    ($ty:ident, $method:literal) => {
        pub enum $ty {}
        impl Notification for $ty {
            type Params = Value;
            const METHOD: &'static str = $method;
        }
    };
}

custom_notification!(PlanNotification, "stepwise/plan");
custom_notification!(ReminderNotification, "stepwise/reminder");
custom_notification!(StatusNotification, "stepwise/status");
custom_notification!(AssistantTextNotification, "stepwise/assistantText");
custom_notification!(ToolCallNotification, "stepwise/toolCall");
custom_notification!(UsageNotification, "stepwise/usage");
custom_notification!(CompactedNotification, "stepwise/compacted");
custom_notification!(CheckpointNotification, "stepwise/checkpoint");
custom_notification!(McpNotification, "stepwise/mcp");
custom_notification!(ReviewNotification, "stepwise/review");

/// Notifications from the server.
pub const NOTIFICATIONS: [&str; 10] = [
    PlanNotification::METHOD,
    ReminderNotification::METHOD,
    StatusNotification::METHOD,
    AssistantTextNotification::METHOD,
    ToolCallNotification::METHOD,
    UsageNotification::METHOD,
    CompactedNotification::METHOD,
    CheckpointNotification::METHOD,
    McpNotification::METHOD,
    ReviewNotification::METHOD,
];

/// `stepwise/saveDocuments`: the editor saves the listed documents and says which it saved.
pub enum SaveDocuments {}
impl Request for SaveDocuments {
    type Params = Value;
    type Result = Option<Value>;
    const METHOD: &'static str = "stepwise/saveDocuments";
}

/// Requests from the server.
pub const REQUESTS: [&str; 1] = [SaveDocuments::METHOD];

/// `workspace/executeCommand` commands.
pub const COMMANDS: [&str; 14] = [
    "stepwise.run",
    "stepwise.cancel",
    "stepwise.reset",
    "stepwise.plan",
    "stepwise.compact",
    "stepwise.editPlan",
    "stepwise.steer",
    "stepwise.checkpoints",
    "stepwise.rewind",
    "stepwise.conversation",
    "stepwise.changes",
    "stepwise.review",
    "stepwise.commentPlan",
    "stepwise.approvePlan",
];

/// `stepwise/plan` (also the answer to `stepwise.plan`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan<'a> {
    pub workspace: &'a str,
    pub items: &'a [PlanItem],
    pub completed: usize,
    pub total: usize,
    pub revision: u64,
    pub by: By,
}

impl<'a> Plan<'a> {
    pub fn of(workspace: &'a str, state: &'a PlanState) -> Plan<'a> {
        Plan {
            workspace,
            items: &state.plan.items,
            completed: state.plan.completed(),
            total: state.plan.items.len(),
            revision: state.revision,
            by: state.by,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Reminder<'a> {
    pub workspace: &'a str,
    pub text: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Running,
    Waiting,
    Idle,
}

/// Why a run ended in `error`, so an editor can offer the right next step without reading the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// The model is not configured (no key, no model, a bad setting): the fix is in the settings.
    Setup,
    /// The model's endpoint failed or answered what the loop cannot use.
    Model,
    /// stepwise itself failed (a panic).
    Internal,
}

/// `stepwise/status`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status<'a> {
    pub workspace: &'a str,
    pub state: RunState,
    pub run_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<FinishReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
}

impl<'a> Status<'a> {
    pub fn new(workspace: &'a str, run_id: &'a str, state: RunState) -> Status<'a> {
        Status { workspace, state, run_id, reason: None, message: None, error_kind: None }
    }

    /// `idle`, ending a run.
    pub fn idle(workspace: &'a str, run_id: &'a str, reason: FinishReason, message: Option<&'a str>) -> Status<'a> {
        Status { reason: Some(reason), message, ..Status::new(workspace, run_id, RunState::Idle) }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantText<'a> {
    pub workspace: &'a str,
    pub run_id: &'a str,
    pub text: &'a str,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Started,
    Finished,
}

/// `stepwise/toolCall`: around every tool call. `step` is the plan step in progress when it ran (the
/// edits it makes carry the same step in their label).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall<'a> {
    pub workspace: &'a str,
    pub run_id: &'a str,
    pub id: &'a str,
    pub name: &'a str,
    pub phase: Phase,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    pub step: Option<&'a str>,
}

/// `stepwise/usage`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage<'a> {
    pub workspace: &'a str,
    pub run_id: &'a str,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub run_input_tokens: u64,
    pub run_output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub context_tokens: u64,
    pub context_window: u64,
}

/// `stepwise/compacted`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Compacted<'a> {
    pub workspace: &'a str,
    pub run_id: &'a str,
    pub tokens_before: u64,
    pub tokens_after: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_error: Option<&'a str>,
}

/// `stepwise/checkpoint`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint<'a> {
    pub workspace: &'a str,
    pub id: &'a str,
    pub run_id: &'a str,
    pub round: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<&'a str>,
}

/// `stepwise/mcp`: how the folder's MCP servers started (failed ones with why).
#[derive(Debug, Serialize)]
pub struct Mcp<'a> {
    pub workspace: &'a str,
    pub servers: &'a [crate::mcp::ServerState],
}

/// `stepwise.conversation`: the saved conversation as a view shows it, oldest first.
#[derive(Debug, Serialize)]
pub struct Conversation<'a> {
    pub workspace: &'a str,
    pub entries: &'a [crate::transcript::Entry],
}

/// `stepwise.changes`: what the agent changed in a run, or since a checkpoint.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Changes<'a> {
    pub workspace: &'a str,
    /// The run the changes are of (the checkpoint's run, for `checkpoint`); `null` when there is none.
    pub run_id: Option<&'a str>,
    pub files: &'a [crate::checkpoint::FileChanges],
}

/// `stepwise.review`'s answer.
#[derive(Debug, Default, Serialize)]
pub struct Reviewed {
    /// Paths whose listed hunks (or whole change) were put back as they were.
    pub undone: Vec<String>,
    /// Paths someone else changed after the agent's last change: left alone.
    pub conflicts: Vec<String>,
    /// Paths that could not be put back, with why.
    pub failed: Vec<PathReason>,
}

#[derive(Debug, Serialize)]
pub struct PathReason {
    pub path: String,
    pub reason: String,
}

/// `stepwise/review`: the files with unreviewed changes and how many unreviewed hunks each has.
#[derive(Debug, Serialize)]
pub struct Review<'a> {
    pub workspace: &'a str,
    pub pending: &'a [Pending],
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    pub path: String,
    pub hunks: usize,
}

/// The argument of the `Keep` and `Undo` code lenses: `stepwise.review`'s, naming one hunk.
#[derive(Debug, Serialize)]
pub struct LensReview<'a> {
    pub workspace: &'a str,
    pub path: &'a str,
    pub action: &'a str,
    pub hunks: [usize; 1],
}

/// A payload as the notifier carries it.
pub fn value(payload: impl Serialize) -> Value {
    serde_json::to_value(payload).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

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
            NOTIFICATIONS.iter().chain(&REQUESTS).chain(&COMMANDS).map(|s| s.to_string()).collect();
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
    fn the_commands_the_server_announces_are_the_typed_ones() {
        assert_eq!(crate::lsp::COMMANDS, COMMANDS);
    }

    #[test]
    fn payloads_are_camel_case_and_leave_out_what_is_absent() {
        let s = value(Status::idle("file:///w", "run-1", FinishReason::Error, Some("no key")));
        assert_eq!(
            s,
            serde_json::json!({"workspace": "file:///w", "state": "idle", "runId": "run-1", "reason": "error", "message": "no key"})
        );
        let s = Status { error_kind: Some(ErrorKind::Setup), ..Status::new("w", "r", RunState::Running) };
        assert_eq!(value(s)["errorKind"], "setup");
    }
}
