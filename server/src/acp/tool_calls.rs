//! How a tool call looks to an ACP client: its kind, title, locations and content. Shared by the live
//! events and the history replayed on `session/load`.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    Content, ContentBlock, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, TextContent, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolKind,
};
use serde_json::Value;

use crate::host::FileChange;
use crate::plan::{Plan as StepPlan, Status};
use crate::tools::catalog::{self, Kind};

/// Diffs are the whole file before and after; past this size only the text result is sent.
const MAX_DIFF_BYTES: usize = 4 * 1024 * 1024;

pub(crate) fn kind(name: &str) -> ToolKind {
    match catalog::find(name).map(|t| t.kind) {
        Some(Kind::Read) => ToolKind::Read,
        Some(Kind::Edit) => ToolKind::Edit,
        Some(Kind::Execute) => ToolKind::Execute,
        Some(Kind::Think) => ToolKind::Think,
        Some(Kind::Other) | None => ToolKind::Other,
    }
}

/// `Run ls -la`, `Read src/a.rs`, `Edit src/a.rs`, `Update plan (3 items)`.
pub(crate) fn title(name: &str, input: &Value) -> String {
    let what = crate::tools::summary(name, input);
    let verb = catalog::title(name);
    if what.is_empty() {
        verb.to_string()
    } else if catalog::is_planning(name) {
        format!("{verb} ({what})")
    } else {
        format!("{verb} {what}")
    }
}

/// The file a call touches, absolute (as the protocol wants), at line 1 until the change is known.
pub(crate) fn locations(name: &str, input: &Value, root: &Path) -> Vec<ToolCallLocation> {
    if !matches!(catalog::find(name).map(|t| t.kind), Some(Kind::Read | Kind::Edit)) {
        return Vec::new();
    }
    let Some(given) = input.get("path").and_then(Value::as_str) else { return Vec::new() };
    match crate::host::resolve(root, given) {
        Ok(p) => vec![ToolCallLocation::new(p.abs).line(1)],
        Err(_) => Vec::new(),
    }
}

/// The `tool_call` that announces a call.
pub(crate) fn started(id: &str, name: &str, input: &Value, root: &Path) -> ToolCall {
    ToolCall::new(id.to_string(), title(name, input))
        .kind(kind(name))
        .status(ToolCallStatus::InProgress)
        .locations(locations(name, input, root))
        .raw_input(input.clone())
}

pub(crate) fn status(is_error: bool) -> ToolCallStatus {
    if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    }
}

/// What a finished call shows: its output (shell output fenced, so it renders as it was printed), and
/// the diff of an edit.
pub(crate) fn content(name: &str, output: &str, change: Option<&FileChange>) -> Vec<ToolCallContent> {
    let mut out = Vec::new();
    if let Some(c) = change.filter(|c| c.new_text.len() + c.old_text.as_ref().map_or(0, String::len) <= MAX_DIFF_BYTES)
    {
        out.push(ToolCallContent::Diff(Diff::new(c.path.clone(), c.new_text.clone()).old_text(c.old_text.clone())));
    }
    let shell = catalog::find(name).is_some_and(|t| t.kind == Kind::Execute);
    let text = if shell { fence(output) } else { output.to_string() };
    out.push(ToolCallContent::Content(Content::new(ContentBlock::Text(TextContent::new(text)))));
    out
}

fn fence(text: &str) -> String {
    // A fence longer than any run of backticks inside, so the output cannot close it.
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest.max(2) + 1);
    format!("{ticks}\n{}\n{ticks}", text.trim_end_matches('\n'))
}

/// The `plan` update: every entry, in order.
pub(crate) fn plan(plan: &StepPlan) -> Plan {
    let entries = plan
        .items
        .iter()
        .map(|item| {
            // ACP has no failed entry (the `tasks` style has): it is over, and says how it ended.
            let (status, text) = match item.status {
                Status::Pending => (PlanEntryStatus::Pending, item.text.clone()),
                Status::InProgress => (PlanEntryStatus::InProgress, item.text.clone()),
                Status::Completed => (PlanEntryStatus::Completed, item.text.clone()),
                Status::Failed => (PlanEntryStatus::Completed, format!("{} (failed)", item.text)),
            };
            PlanEntry::new(text, PlanEntryPriority::Medium, status)
        })
        .collect();
    Plan::new(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn titles_and_kinds() {
        assert_eq!(title("bash", &json!({"command": "ls -la"})), "Run ls -la");
        assert_eq!(title("edit_file", &json!({"path": "a.rs"})), "Edit a.rs");
        assert_eq!(title("todo", &json!({"items": [1, 2]})), "Update plan (2 items)");
        assert_eq!(title("todo", &json!({"items": [1]})), "Update plan (1 item)");
        assert_eq!(kind("todo"), ToolKind::Think);
        assert_eq!(kind("bash"), ToolKind::Execute);
        assert_eq!(kind("nope"), ToolKind::Other);
    }

    #[test]
    fn fence_outlasts_backticks() {
        assert_eq!(fence("a\n"), "```\na\n```");
        assert_eq!(fence("x ```` y"), "`````\nx ```` y\n`````");
    }
}
