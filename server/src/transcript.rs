//! The saved conversation as a reader sees it (`stepwise.conversation`): the user's prompts and steers,
//! plan edits, the model's text, each tool call with its result and the plan step it served, reminders.
//! Built from the saved messages alone; which run and round a message came from is the checkpoints'
//! to say (`Checkpoints::origins`), as the session does not record it.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::llm::{Block, Message, Role};
use crate::tools::catalog::Handler;

/// A tool's output in an entry is cut to this many characters (a view shows it on demand; the model's
/// whole result stays in the session).
pub const OUTPUT_CHARS: usize = 4000;

/// Where a message came from: the run, its prompt, and the plan step in progress when its round began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub run_id: String,
    pub prompt: String,
    pub step: Option<String>,
    /// The checkpoint before the message's round (a new one starts a new round).
    pub checkpoint: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EntryKind")]
pub enum Kind {
    User,
    Assistant,
    Tool,
    Reminder,
    Steer,
    PlanEdit,
    /// `<background-results>`: background tasks that ended, as the model was told.
    Background,
    /// The `<diagnostics>` block after a round that changed files: the errors the model was told of.
    Diagnostics,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub kind: Kind,
    /// The run the entry belongs to; empty when no checkpoint tells (before the first one kept).
    pub run_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolEntry>,
    /// Images the entry shows: a prompt's, or those a tool showed the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageEntry>,
    /// A child agent's entry (`task`): its id, `sa-<n>`; it follows the `task` call that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

/// An image of an entry, by reference: `stepwise.image` gives its bytes, so entries stay small.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageEntry {
    pub media_type: String,
    /// What `stepwise.image` takes (the same for the same image, while the server runs).
    pub id: String,
}

impl ImageEntry {
    fn of(images: &[crate::llm::Image]) -> Vec<ImageEntry> {
        images.iter().map(|i| ImageEntry { media_type: i.media_type().to_string(), id: i.id() }).collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolEntry {
    pub id: String,
    pub name: String,
    pub summary: String,
    /// The result as the model read it (cut to `OUTPUT_CHARS`); empty while the call has no result.
    pub output: String,
    pub is_error: bool,
    /// The plan step in progress when the call was made.
    pub step: Option<String>,
}

/// The entries of `messages`, oldest first; `origins[i]` is where message `i` came from, if known.
pub fn entries(messages: &[Message], origins: &[Option<Origin>]) -> Vec<Entry> {
    let results: HashMap<&str, (&str, bool, &[crate::llm::Image])> = messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            Block::ToolResult { tool_use_id, content, is_error, images } => {
                Some((tool_use_id.as_str(), (content.as_str(), *is_error, images.as_slice())))
            }
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    let mut steps = Steps::default();
    let mut round = None;
    for (i, m) in messages.iter().enumerate() {
        let origin = origins.get(i).and_then(Option::as_ref);
        if origin.map(|o| o.checkpoint) != round {
            round = origin.map(|o| o.checkpoint);
            if let Some(o) = origin {
                steps.current = o.step.clone();
            }
        }
        let run_id = origin.map(|o| o.run_id.clone()).unwrap_or_default();
        let start = out.len();
        for b in m.content.iter() {
            let entry = |kind, text: &str| Entry {
                kind,
                run_id: run_id.clone(),
                text: Some(text.into()),
                tool: None,
                images: Vec::new(),
                subagent: None,
            };
            match (b, m.role) {
                (Block::Text { text }, Role::Assistant) => {
                    if !text.trim().is_empty() {
                        out.push(entry(Kind::Assistant, text));
                    }
                }
                // A skill the user called (`/<name>`) came with the prompt: the prompt shows it.
                (Block::Text { text }, Role::User)
                    if crate::skills::is_block(text) && origin.is_none_or(|o| *text != o.prompt) => {}
                (Block::Text { text }, Role::User) => {
                    let kind = user_kind(text, origin);
                    if kind == Kind::PlanEdit {
                        steps.plan_edit(text);
                    }
                    out.push(entry(kind, text));
                }
                (Block::ToolUse { id, name, input }, _) => {
                    let (output, is_error, images) = results.get(id.as_str()).copied().unwrap_or(("", false, &[]));
                    let step = steps.current.clone();
                    if !is_error {
                        steps.planning_call(name, input);
                    }
                    out.push(Entry {
                        kind: Kind::Tool,
                        run_id: run_id.clone(),
                        text: None,
                        tool: Some(ToolEntry {
                            id: id.clone(),
                            name: name.clone(),
                            summary: crate::tools::summary(name, input),
                            output: shown_output(name, output),
                            is_error,
                            step,
                        }),
                        images: ImageEntry::of(images),
                        subagent: None,
                    });
                }
                (Block::ToolResult { .. }, _) => {}
                // The user's image goes with the prompt it came with, or is an entry of its own.
                (Block::Image { source }, _) => {
                    let shown = ImageEntry::of(std::slice::from_ref(source));
                    let here = out.len() > start;
                    match out.last_mut() {
                        Some(e) if here && e.kind == Kind::User => e.images.extend(shown),
                        _ => out.push(Entry {
                            kind: Kind::User,
                            run_id: run_id.clone(),
                            text: None,
                            tool: None,
                            images: shown,
                            subagent: None,
                        }),
                    }
                }
            }
        }
    }
    out
}

/// A result as an entry shows it: cut to `OUTPUT_CHARS`; a `task` result keeps its last line too (how the
/// child ended, which views read back after a reload).
fn shown_output(name: &str, output: &str) -> String {
    let cut = crate::host::output::truncate_chars(output, OUTPUT_CHARS);
    match output.rsplit_once('\n') {
        Some((_, last)) if cut.len() < output.len() && name == crate::tools::catalog::TASK.name => {
            format!("{cut}\n…\n{last}")
        }
        _ => cut.to_string(),
    }
}

/// `entries` with each child's calls and text after the `task` call that made it, marked as the child's
/// (its prompt is the call's; its plan shows in its `todo` calls).
pub fn with_children(session: Vec<Entry>, children: &[crate::subagents::Record]) -> Vec<Entry> {
    if children.is_empty() {
        return session;
    }
    let mut out = Vec::with_capacity(session.len());
    for entry in session {
        let call = entry.tool.as_ref().filter(|t| t.name == crate::tools::catalog::TASK.name).map(|t| t.id.clone());
        let run_id = entry.run_id.clone();
        out.push(entry);
        for child in children.iter().filter(|c| Some(&c.tool_call_id) == call.as_ref()) {
            let theirs =
                entries(&child.messages, &[]).into_iter().filter(|e| matches!(e.kind, Kind::Tool | Kind::Assistant));
            out.extend(theirs.map(|e| Entry { run_id: run_id.clone(), subagent: Some(child.id.clone()), ..e }));
        }
    }
    out
}

/// A user turn's text: the harness's notes, the user's plan edit, the run's prompt, or a steer.
fn user_kind(text: &str, origin: Option<&Origin>) -> Kind {
    if text.starts_with("<reminder>") || text == crate::agent::CONTINUE {
        Kind::Reminder
    } else if text.starts_with(crate::intel::session::OPEN) {
        Kind::Diagnostics
    } else if text.starts_with("<plan-edit>") {
        Kind::PlanEdit
    } else if text.starts_with("<background-results>") {
        Kind::Background
    } else {
        match origin {
            // A compaction keeps the task at the head of its summary.
            Some(o) if text != o.prompt && !text.starts_with(&format!("{}\n\n[Summary", o.prompt)) => Kind::Steer,
            _ => Kind::User,
        }
    }
}

/// The plan step in progress, followed through the planning calls and the user's plan edits.
#[derive(Default)]
struct Steps {
    current: Option<String>,
    /// Item texts by id, as the last full list gave them.
    texts: HashMap<String, String>,
}

impl Steps {
    fn planning_call(&mut self, name: &str, input: &Value) {
        let id_of = |v: &Value| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        match crate::tools::catalog::find(name).map(|t| t.handler) {
            Some(Handler::Todo | Handler::CreateTodos) => {
                let Some(items) = input.get("items").and_then(Value::as_array) else { return };
                self.texts.clear();
                self.current = None;
                for it in items {
                    let text = it.get("text").and_then(Value::as_str).unwrap_or_default().to_string();
                    if let Some(id) = it.get("id") {
                        self.texts.insert(id_of(id), text.clone());
                    }
                    if it.get("status").and_then(Value::as_str) == Some("in_progress") {
                        self.current = Some(text);
                    }
                }
            }
            Some(Handler::UpdateTodo) => {
                let status = input.get("status").and_then(Value::as_str);
                let text = input.get("id").and_then(|id| self.texts.get(&id_of(id))).cloned();
                match status {
                    Some("in_progress") => self.current = text.or(self.current.take()),
                    Some(_) if text.is_some() && text == self.current => self.current = None,
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// `[>] #2: text` lines of the user's plan in its render form.
    fn plan_edit(&mut self, text: &str) {
        self.current = None;
        self.texts.clear();
        for line in text.lines() {
            let line = line.trim_start_matches("<plan-edit>The user changed the plan. It is now:");
            let Some((mark, rest)) = line.trim().split_at_checked(3) else { continue };
            let Some((id, text)) = rest.trim().strip_prefix('#').and_then(|r| r.split_once(": ")) else { continue };
            let text = text.trim_end_matches("</plan-edit>").to_string();
            self.texts.insert(id.to_string(), text.clone());
            if mark == "[>]" {
                self.current = Some(text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(role: Role, blocks: Vec<Block>) -> Message {
        Message { role, content: blocks.into() }
    }

    fn text(t: &str) -> Block {
        Block::Text { text: t.into() }
    }

    #[test]
    fn a_long_task_result_keeps_its_last_line() {
        let long = format!("{}\n\n(subagent sa-1: 2 rounds, 9 tokens, done)", "x".repeat(OUTPUT_CHARS + 10));
        let shown = shown_output("task", &long);
        assert!(shown.ends_with("\n…\n(subagent sa-1: 2 rounds, 9 tokens, done)"), "{shown}");
        assert_eq!(shown_output("bash", &long).chars().count(), OUTPUT_CHARS);
    }

    #[test]
    fn a_skill_the_user_called_is_shown_by_the_prompt_that_called_it() {
        let origin = Origin { run_id: "r1".into(), prompt: "/release 1.2".into(), step: None, checkpoint: 1 };
        let block = "<skill name=\"release\" path=\"/w/.agents/skills/release\">\nTag it.\n</skill>";
        let messages = vec![msg(Role::User, vec![text("/release 1.2"), text(block)])];
        let e = entries(&messages, &[Some(origin)]);
        let shown: Vec<(Kind, Option<&str>)> = e.iter().map(|e| (e.kind, e.text.as_deref())).collect();
        assert_eq!(shown, [(Kind::User, Some("/release 1.2"))]);
    }

    #[test]
    fn prompts_steers_tools_and_steps_are_told_apart() {
        let use_ = |id: &str, name: &str, input: Value| Block::ToolUse { id: id.into(), name: name.into(), input };
        let result = |id: &str, c: &str, e: bool| Block::result(id, c, e);
        let messages = vec![
            msg(Role::User, vec![text("fix it")]),
            msg(
                Role::Assistant,
                vec![
                    text("On it."),
                    use_("t1", "todo", json!({"items": [{"id": "1", "text": "Fix", "status": "in_progress"}]})),
                    use_("t2", "bash", json!({"command": "false"})),
                ],
            ),
            msg(
                Role::User,
                vec![result("t1", "[>] #1: Fix", false), result("t2", "[exit code: 1]", true), text("use tabs")],
            ),
            msg(Role::User, vec![text(crate::agent::REMINDER)]),
        ];
        let o = |cp| Some(Origin { run_id: "r1".into(), prompt: "fix it".into(), step: None, checkpoint: cp });
        let e = entries(&messages, &[o(1), o(1), o(2), o(2)]);
        let kinds: Vec<Kind> = e.iter().map(|e| e.kind).collect();
        use Kind::*;
        assert_eq!(kinds, [User, Assistant, Tool, Tool, Steer, Reminder]);
        let bash = e[3].tool.as_ref().unwrap();
        assert_eq!((bash.summary.as_str(), bash.output.as_str(), bash.is_error), ("false", "[exit code: 1]", true));
        assert_eq!(bash.step.as_deref(), Some("Fix"), "the todo call before it set the step");
        assert_eq!(e[2].tool.as_ref().unwrap().step, None);
        assert!(e.iter().all(|e| e.run_id == "r1"));
        let v = serde_json::to_value(&e[5]).unwrap();
        assert_eq!(v, json!({"kind": "reminder", "runId": "r1", "text": crate::agent::REMINDER}));
        // Without origins, plain text is the user's.
        assert_eq!(entries(&messages[..1], &[])[0].kind, User);
    }

    #[test]
    fn a_diagnostics_block_is_not_the_users_words() {
        let block = "<diagnostics>\nsrc/a.ts:3:7: error: Type 'string' is not assignable to type 'number'. (ts)\n</diagnostics>";
        let messages = vec![msg(Role::User, vec![text("fix it")]), msg(Role::User, vec![text(block)])];
        let o = Some(Origin { run_id: "r1".into(), prompt: "fix it".into(), step: None, checkpoint: 1 });
        let kinds: Vec<Kind> = entries(&messages, &[o.clone(), o]).iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [Kind::User, Kind::Diagnostics]);
    }

    #[test]
    fn a_plan_edit_sets_the_step() {
        let mut s = Steps::default();
        s.plan_edit(
            "<plan-edit>The user changed the plan. It is now:\n[x] #1: a\n[>] #2: b c\n\n(1/2 completed)</plan-edit>",
        );
        assert_eq!(s.current.as_deref(), Some("b c"));
        s.planning_call("update_todo", &json!({"id": "2", "status": "completed"}));
        assert_eq!(s.current, None);
        s.planning_call("update_todo", &json!({"id": 1, "status": "in_progress"}));
        assert_eq!(s.current.as_deref(), Some("a"));
    }
}
