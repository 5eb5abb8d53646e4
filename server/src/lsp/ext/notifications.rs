//! The params of the `stepwise/*` notifications, as the server sends them (docs/protocol.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::{By, Change, PlanItem, PlanState};
use crate::session::FinishReason;

/// Which session a notification (or answer) is about: its folder, as the client named it, and the
/// session's id (`main`: the folder's own). Written as two fields of the payload.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct At {
    pub workspace: String,
    /// The session (`stepwise.newSession`'s id; `main`: the folder's own).
    pub session: String,
}

/// `stepwise/plan` (also the answer to `stepwise.plan`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "PlanParams")]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    #[serde(flatten)]
    pub at: At,
    pub items: Vec<PlanItem>,
    pub completed: usize,
    pub total: usize,
    /// Raised by every change.
    pub revision: u64,
    /// Who made the latest change.
    pub by: By,
    /// What the latest change was; left out when nothing changed since the session opened (a restored plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
}

impl Plan {
    pub fn of(at: At, state: &PlanState) -> Plan {
        Plan {
            at,
            items: state.plan.items.clone(),
            completed: state.plan.completed(),
            total: state.plan.items.len(),
            revision: state.revision,
            by: state.by,
            change: state.change,
        }
    }
}

/// `stepwise/reminder`: the model was nagged to update its plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "ReminderParams")]
pub struct Reminder {
    #[serde(flatten)]
    pub at: At,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Running,
    Waiting,
    Idle,
}

/// Why a run ended in `error`, so an editor can offer the right next step without reading the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "StatusParams")]
#[serde(rename_all = "camelCase")]
pub struct Status {
    #[serde(flatten)]
    pub at: At,
    pub state: RunState,
    pub run_id: String,
    /// Why the run ended (with `idle`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<FinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    /// How many of the folder's background tasks run when this status is sent, left out when none does
    /// (the live list: `stepwise/background`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_tasks: Option<u32>,
}

impl Status {
    pub fn new(at: &At, run_id: &str, state: RunState) -> Status {
        Status {
            at: at.clone(),
            state,
            run_id: run_id.to_string(),
            reason: None,
            message: None,
            error_kind: None,
            background_tasks: None,
        }
    }

    /// With the count of the folder's running background tasks (none: the field is left out, so a status
    /// reads as it did before background tasks).
    pub fn tasks(self, running: usize) -> Status {
        let n = (running > 0).then(|| u32::try_from(running).unwrap_or(u32::MAX));
        Status { background_tasks: n, ..self }
    }

    /// `idle`, ending a run.
    pub fn idle(at: &At, run_id: &str, reason: FinishReason, message: Option<&str>) -> Status {
        Status { reason: Some(reason), message: message.map(str::to_string), ..Status::new(at, run_id, RunState::Idle) }
    }
}

/// `stepwise/assistantText`: a piece of the model's text as it streams.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "AssistantTextParams")]
#[serde(rename_all = "camelCase")]
pub struct AssistantText {
    #[serde(flatten)]
    pub at: At,
    pub run_id: String,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Started,
    Finished,
}

/// `stepwise/toolCall`: around every tool call. `step` is the plan step in progress when it ran (the
/// edits it makes carry the same step in their label).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "ToolCallParams")]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    #[serde(flatten)]
    pub at: At,
    pub run_id: String,
    pub id: String,
    pub name: String,
    pub phase: Phase,
    pub summary: String,
    /// With `finished`: the result, shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    pub step: Option<String>,
    /// A child's call (`task`): the child's id, `sa-<n>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

/// `stepwise/subagent`: a child agent (`task`) started, went on (a round, a call) or ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "SubagentParams")]
#[serde(rename_all = "camelCase")]
pub struct Subagent {
    #[serde(flatten)]
    pub at: At,
    pub run_id: String,
    /// The `task` call that made it.
    pub tool_call_id: String,
    /// `sa-<n>`.
    pub id: String,
    pub description: String,
    /// The agent it runs as (`general`, `explore`, or one defined in a file).
    pub agent: String,
    pub state: crate::subagents::State,
    pub rounds: u32,
    /// The tool of its latest call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool: Option<String>,
    /// Its tokens so far (input and output), counted in the session's usage.
    pub tokens: u64,
}

/// `stepwise/usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "UsageParams")]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(flatten)]
    pub at: At,
    pub run_id: String,
    /// The whole prompt, cached or not.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub run_input_tokens: u64,
    pub run_output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// The latest prompt's size.
    pub context_tokens: u64,
    pub context_window: u64,
}

/// `stepwise/compacted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CompactedParams")]
#[serde(rename_all = "camelCase")]
pub struct Compacted {
    #[serde(flatten)]
    pub at: At,
    pub run_id: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_error: Option<String>,
}

/// `stepwise/checkpoint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "CheckpointParams")]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    #[serde(flatten)]
    pub at: At,
    pub id: String,
    pub run_id: String,
    pub round: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

/// `stepwise/mcp`: how the folder's MCP servers started (failed ones with why).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "McpParams")]
pub struct Mcp {
    #[serde(flatten)]
    pub at: At,
    pub servers: Vec<McpServer>,
}

/// One MCP server's start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServer {
    pub name: String,
    /// Where it was configured.
    pub origin: String,
    /// `running` or `failed`.
    pub state: String,
    /// How many of its tools the model is offered.
    pub tools: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Mcp {
    pub fn of(at: At, servers: &[crate::mcp::ServerState]) -> Mcp {
        let servers = servers
            .iter()
            .map(|s| McpServer {
                name: s.name.clone(),
                origin: s.origin.to_string(),
                state: s.state.to_string(),
                tools: s.tools,
                error: s.error.clone(),
            })
            .collect();
        Mcp { at, servers }
    }
}

/// `stepwise/review`: the files with unreviewed changes and how many unreviewed hunks each has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "ReviewParams")]
pub struct Review {
    #[serde(flatten)]
    pub at: At,
    pub pending: Vec<Pending>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Pending {
    pub path: String,
    pub hunks: usize,
}

/// `stepwise/background`: the folder's background commands (`background_run`), sent when one starts,
/// prints (at most about ten times a second) or ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "BackgroundParams")]
pub struct Background {
    #[serde(flatten)]
    pub at: At,
    pub tasks: Vec<crate::background::TaskView>,
}

/// `stepwise/diagnostics`: the `<diagnostics>` block the model was told after a round that changed files,
/// with the id of the round's last call that changed a file (a view shows the lines under it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "DiagnosticsParams")]
#[serde(rename_all = "camelCase")]
pub struct Diagnostics {
    #[serde(flatten)]
    pub at: At,
    pub run_id: String,
    pub calls: Vec<String>,
    pub lines: Vec<DiagnosticLine>,
}

/// One line of a `<diagnostics>` block: an error with its place, a file that was not checked, or a note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiagnosticLine {
    /// The file, relative to the folder, as the model read it; left out for a note about no one file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// 1-based; left out for a line about the whole file (`not checked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The line as the model read it (`path:line:col: error: message (source)`).
    pub text: String,
}

impl DiagnosticLine {
    /// The lines of a `<diagnostics>` block, each with its place when it names one.
    pub fn of_block(block: &str) -> Vec<DiagnosticLine> {
        block
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && *l != "<diagnostics>" && *l != "</diagnostics>")
            .map(DiagnosticLine::of_line)
            .collect()
    }

    fn of_line(text: &str) -> DiagnosticLine {
        let line = |path: Option<&str>, line, column| DiagnosticLine {
            path: path.map(str::to_string),
            line,
            column,
            text: text.to_string(),
        };
        // `path:line:col: ...`: the last `:N:N: ` whose path part is not empty (a path may hold a colon).
        let mut rest = text;
        let mut at = 0;
        while let Some(i) = rest.find(": ") {
            let head = &text[..at + i];
            let mut parts = head.rsplitn(3, ':');
            if let (Some(col), Some(ln), Some(path)) = (parts.next(), parts.next(), parts.next()) {
                if let (Ok(ln), Ok(col)) = (ln.parse(), col.parse()) {
                    if !path.is_empty() {
                        return line(Some(path), Some(ln), Some(col));
                    }
                }
            }
            if rest[i..].starts_with(": not checked") {
                // Several files in one line (`a.rs, b.rs: not checked (...)`): about no one file.
                return line(Some(head).filter(|h| !h.contains(", ")), None, None);
            }
            at += i + 2;
            rest = &text[at..];
        }
        line(None, None, None)
    }
}

/// `stepwise/sessions`: a folder's sessions, whenever one is made, closed or reopened, or a worktree
/// session's changes were applied (the same list as `stepwise.sessions`; runs starting and ending are
/// `stepwise/status`, which names the session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "SessionsParams")]
pub struct Sessions {
    pub workspace: String,
    pub sessions: Vec<super::SessionInfo>,
}
