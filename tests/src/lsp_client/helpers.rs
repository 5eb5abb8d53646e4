//! Helpers for tests: the usual editor, tool results and conversation checks, polling.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::builder::*;
use super::editor::*;
use super::policy::*;
use super::TempDir;
use crate::mock::MockModel;

/// The transcript notifications of a run (progress, usage, assistant text, tool calls): tests that
/// look only at a run's outcome pass them to [`EditorBuilder::ignore`].
pub const TRANSCRIPT: [&str; 4] = ["$/progress", "stepwise/usage", "stepwise/assistantText", "stepwise/toolCall"];

/// A test's workspace folder and the directory its server saves sessions in: tagged `tag` and
/// `{tag}-state`.
pub fn folder_and_state(tag: &str) -> (TempDir, TempDir) {
    (TempDir::new(tag), TempDir::new(&format!("{tag}-state")))
}

/// The usual editor of one folder: `dir` as its only folder, sessions saved in `state`, and `mock` as
/// the model. Add options, policies and ignored methods, then [`EditorBuilder::start`] it.
pub fn editor(preset: ClientPreset, dir: &TempDir, state: &TempDir, mock: &MockModel) -> EditorBuilder {
    TestEditor::builder(preset).folder(dir.path()).mock(mock).state_dir(state.path())
}

/// Capabilities of an editor that answers `stepwise/query` (as VS Code and the Neovim plugin do), for
/// [`EditorBuilder::capabilities`].
pub fn answers_query(caps: &mut Value) {
    caps["experimental"]["stepwise"]["query"] = json!(true);
}

/// [`editor`] for code intelligence through the editor: every call approved, the `diagnostics` setting
/// `auto`, and `stepwise/query` answered (as VS Code and the Neovim plugin do) by `answer`.
pub fn querying_editor(
    preset: ClientPreset,
    dir: &TempDir,
    state: &TempDir,
    mock: &MockModel,
    answer: Policy,
) -> EditorBuilder {
    editor(preset, dir, state, mock)
        .option("approval", json!("auto"))
        .option("diagnostics", json!("auto"))
        .capabilities(answers_query)
        .policy("stepwise/query", answer)
}

/// A `stepwise/query` answer (for `Policy::With`) giving every document listed in a diagnostics question
/// `settled` and `diagnostics` at once, whatever version was asked (other questions: `null`); `asked`
/// sees each diagnostics question.
pub fn answer_all(settled: bool, diagnostics: Value, asked: impl Fn(&Value) + Send + Sync + 'static) -> Answer {
    std::sync::Arc::new(move |params: &Value| {
        if params["kind"] != "diagnostics" || !params["documents"].is_array() {
            return Ok(Value::Null);
        }
        asked(params);
        Ok(diagnostics_answer(params, settled, &diagnostics))
    })
}

/// The answer to a diagnostics `stepwise/query` that gives every document it lists (and no other) `settled`
/// and `diagnostics`.
pub fn diagnostics_answer(params: &Value, settled: bool, diagnostics: &Value) -> Value {
    let docs = params["documents"].as_array().cloned().unwrap_or_default();
    let items: Vec<Value> =
        docs.iter().map(|d| json!({"uri": d["uri"], "settled": settled, "diagnostics": diagnostics.clone()})).collect();
    json!({"items": items})
}

/// [`editor`] for a test of what a run leaves behind: every call approved (`approval: auto`), the
/// transcript unread.
pub fn auto_editor(preset: ClientPreset, dir: &TempDir, state: &TempDir, mock: &MockModel) -> EditorBuilder {
    editor(preset, dir, state, mock).option("approval", json!("auto")).ignore(&TRANSCRIPT)
}

/// The editor of one folder with no model configured: `dir` as its only folder, sessions saved in `state`.
pub fn editor_without_model(preset: ClientPreset, dir: &TempDir, state: &TempDir) -> EditorBuilder {
    TestEditor::builder(preset).folder(dir.path()).state_dir(state.path())
}

/// The tool results of the last message of a model request body: `(content, is_error)`.
pub fn tool_results(body: &Value) -> Vec<(String, bool)> {
    let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or(Value::Null);
    last["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    let content = match &b["content"] {
                        Value::String(s) => s.clone(),
                        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                        other => other.to_string(),
                    };
                    (content, b["is_error"].as_bool().unwrap_or(false))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Checks that a conversation alternates roles, starts with the user, and that every tool use is
/// answered by exactly one tool result in the next message.
pub fn assert_valid_conversation(body: &Value) {
    let msgs = body["messages"].as_array().expect("messages");
    assert!(!msgs.is_empty());
    assert_eq!(msgs[0]["role"], "user", "{body}");
    for (i, w) in msgs.windows(2).enumerate() {
        assert_ne!(w[0]["role"], w[1]["role"], "roles do not alternate at {i}: {body}");
    }
    for (i, m) in msgs.iter().enumerate() {
        if m["role"] != "assistant" {
            continue;
        }
        let uses: Vec<&str> = m["content"]
            .as_array()
            .map(|b| b.iter().filter(|b| b["type"] == "tool_use").filter_map(|b| b["id"].as_str()).collect())
            .unwrap_or_default();
        if uses.is_empty() {
            continue;
        }
        let next = msgs.get(i + 1).unwrap_or_else(|| panic!("tool use without results at {i}: {body}"));
        let results: Vec<&str> = next["content"]
            .as_array()
            .map(|b| {
                b.iter().filter(|b| b["type"] == "tool_result").filter_map(|b| b["tool_use_id"].as_str()).collect()
            })
            .unwrap_or_default();
        assert_eq!(uses, results, "tool uses and results differ at {i}: {body}");
    }
}

/// Waits (polling) until `f` holds; panics after `timeout`.
pub async fn eventually(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
