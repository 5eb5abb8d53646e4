//! What the model was sent, read from a recorded request's body (either wire format's messages).

use serde_json::Value;
use stepwise::plan::{Mode, PlanningStyle};
use stepwise::tools::catalog;

/// The text blocks of a request's last user turn.
pub fn last_user_texts(body: &Value) -> Vec<String> {
    let Some(last) = body["messages"].as_array().and_then(|m| m.iter().rev().find(|m| m["role"] == "user")) else {
        panic!("no user message in {body}");
    };
    match &last["content"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(c) => c.iter().filter_map(|b| b["text"].as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    }
}

/// The text blocks of a request's last user turn, as one text (a line each).
pub fn last_user_text(body: &Value) -> String {
    last_user_texts(body).join("\n")
}

/// The names of the tools a request offered, in order.
pub fn tool_names(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().unwrap_or_else(|| panic!("no tools in {body}"));
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_else(|| panic!("a tool without a name: {t}")).to_string())
        .collect()
}

/// The built-in tools a run offers in the default mode, by name and in order, as the catalog decides them
/// (its own tests pin the list): those of the planning `style`, and the code-intelligence ones where `intel`
/// (no skill installed: no `load_skill`).
pub fn offered(style: PlanningStyle, intel: bool) -> Vec<String> {
    catalog::specs(style, Mode::Default, None, intel, false).into_iter().map(|s| s.name.into_owned()).collect()
}

/// The code-intelligence tools, by name, as the catalog lists them.
pub fn intel_tools() -> Vec<&'static str> {
    catalog::BUILTIN.iter().filter(|t| t.handler.needs_intel()).map(|t| t.name).collect()
}
