//! What the commands answer, and the server's own requests' params and results (docs/protocol.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plan::{PlanItem, PlanState};

/// `stepwise.run`, `stepwise.commentPlan`, `stepwise.approvePlan`: the run goes on in the background.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunStarted {
    pub run_id: String,
}

/// `stepwise.image`: the image's bytes in base64, and their media type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageData {
    pub media_type: String,
    pub data: String,
}

/// `stepwise.editPlan`: the plan as the edit left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EditedPlan {
    #[serde(flatten)]
    pub at: super::At,
    pub items: Vec<PlanItem>,
    pub completed: usize,
    pub total: usize,
    pub revision: u64,
}

impl EditedPlan {
    pub fn of(at: super::At, state: &PlanState) -> EditedPlan {
        let p = super::Plan::of(at, state);
        EditedPlan { at: p.at, items: p.items, completed: p.completed, total: p.total, revision: p.revision }
    }
}

/// `stepwise.skills`: the folder's skills, as a run would find them now, for the editor's `/` completion (a
/// prompt `/<name> [text]` calls one).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Skills {
    pub skills: Vec<Skill>,
}

/// One skill: its name and description.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Skill {
    pub name: String,
    pub description: String,
}

/// `stepwise.conversation`: the saved conversation as a view shows it, oldest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Conversation {
    #[serde(flatten)]
    pub at: super::At,
    pub entries: Vec<crate::transcript::Entry>,
}

/// `stepwise.changes`: what the agent changed in a run, or since a checkpoint.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Changes {
    #[serde(flatten)]
    pub at: super::At,
    /// The run the changes are of (the checkpoint's run, for `checkpoint`); `null` when there is none.
    pub run_id: Option<String>,
    pub files: Vec<crate::checkpoint::FileChanges>,
}

/// `stepwise.rewind`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rewound {
    /// Paths put back as they were at the checkpoint.
    pub files: Vec<String>,
    /// The conversation and the plan went back too.
    pub conversation: bool,
    /// Paths someone else changed after the agent's last change: left alone.
    pub conflicts: Vec<String>,
    /// Paths the checkpoint cannot put back, with why.
    pub unrestorable: Vec<PathReason>,
    /// Paths that could not be put back, with why.
    pub failed: Vec<PathReason>,
}

/// `stepwise.review`'s answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reviewed {
    /// Paths whose listed hunks (or whole change) were put back as they were.
    pub undone: Vec<String>,
    /// Paths someone else changed after the agent's last change: left alone.
    pub conflicts: Vec<String>,
    /// Paths that could not be put back, with why.
    pub failed: Vec<PathReason>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PathReason {
    pub path: String,
    pub reason: String,
}

/// `stepwise/saveDocuments`' params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SaveDocumentsParams {
    pub uris: Vec<String>,
}

/// `stepwise/saveDocuments`' result (`null`: all saved).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SavedDocuments {
    #[serde(default)]
    pub saved: Vec<String>,
}

/// `stepwise/ask`'s params: the user's leave for one tool call, typed so a client shows it in the call's
/// place without reading `message` (the same question in one line, for a client that only shows text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskParams {
    #[serde(flatten)]
    pub at: super::At,
    pub run_id: String,
    /// The tool call asked about (`stepwise/toolCall`'s `id`).
    pub call_id: String,
    pub kind: AskKind,
    pub message: String,
    /// `command` and `unsandboxed`: the shell command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `unsandboxed`: what the sandbox stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// `protectedWrite`: the path as the model gave it, and why it is protected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// `mcpTool`: the MCP server and its tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Asked by a child agent (`task`): its id, `sa-<n>` (the message names it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

/// What a question is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AskKind {
    /// A shell command (the sandbox off, or not available).
    Command,
    /// A write to a protected path.
    ProtectedWrite,
    /// Running again outside the sandbox a command it stopped.
    Unsandboxed,
    /// A call of an MCP server's tool.
    McpTool,
}

/// `stepwise/ask`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AskAnswer {
    pub answer: AskChoice,
}

/// The user's answer: `allowSession` also allows what is asked of this kind (this MCP server, running
/// outside the sandbox, or the agent's own tools) until the session is reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AskChoice {
    Allow,
    AllowSession,
    Deny,
}

/// What `stepwise/query` asks (docs/protocol.md, "Code intelligence").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum QueryKind {
    Diagnostics,
    Definition,
    References,
    Implementation,
    Hover,
    DocumentSymbol,
    WorkspaceSymbol,
    Rename,
}

/// A position in a document, in the negotiated position encoding (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueryPosition {
    pub line: u32,
    pub character: u32,
}

/// A document the agent wrote, at the version its text had then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueryDocument {
    pub uri: String,
    /// The open document's version after the agent's edit; left out for a file the editor has not opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
}

/// `stepwise/query`'s params: the server asks the editor what its language servers know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryParams {
    pub kind: QueryKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<QueryPosition>,
    /// `workspaceSymbol`'s search text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// `rename`'s new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    /// `diagnostics`: answer once each document's diagnostics were published for this version (or later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<Vec<QueryDocument>>,
    /// `diagnostics`: the longest the editor waits for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
}

/// `stepwise/query`'s result for `diagnostics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DiagnosticsAnswer {
    #[serde(default)]
    pub items: Vec<DocumentDiagnostics>,
}

/// One document's diagnostics as the editor has them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DocumentDiagnostics {
    pub uri: String,
    /// LSP `Diagnostic`s.
    #[serde(default)]
    #[schemars(with = "Vec<serde_json::Value>")]
    pub diagnostics: Vec<tower_lsp_server::ls_types::Diagnostic>,
    /// The diagnostics were published for the version asked for (or later); `false`: the wait ran out, or the
    /// editor knows none of its servers will check the document.
    #[serde(default)]
    pub settled: bool,
}

/// `stepwise.newSession`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionMade {
    pub session: String,
    /// The worktree's folder (the session's workspace), for a worktree session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// Its branch, for a git worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

/// `stepwise.sessions`: the folder's sessions, its own first, then the others by age (closed ones too,
/// which any command naming them reopens).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session: String,
    pub title: String,
    /// `running`, `waiting`, `idle`, or `closed`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// A worktree session's files changed and not applied yet (left out when it cannot be told).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unapplied: Option<usize>,
    /// The plan's progress, `completed/total` (left out for a closed session or an empty plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
}

/// `stepwise.applySession`'s answer: what was brought into the folder, and what was left alone because
/// the folder changed it since the session began (or it could not be carried).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedSession {
    pub applied: Vec<String>,
    pub conflicts: Vec<String>,
    /// The run the applied files belong to in the folder's session (its review lists them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}
