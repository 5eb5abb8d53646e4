//! What the model was sent, read from a recorded request's body (either wire format's messages).

use serde_json::Value;

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
