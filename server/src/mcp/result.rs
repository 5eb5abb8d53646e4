//! A tool's answer as the model reads it: text joined; images, audio and binary resources named;
//! `isError` as an error result.

use serde_json::Value;

use crate::host::shell::truncate_middle;

/// A call's result as the model reads it (the tools turn it into their `ToolOutput`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub text: String,
    pub is_error: bool,
}

impl Answer {
    /// Errors reach the model as `Error: <message>`, as the built-in tools' do.
    pub fn error(message: impl AsRef<str>) -> Answer {
        Answer { text: format!("Error: {}", message.as_ref()), is_error: true }
    }
}

/// A `tools/call` result as the server sent it: its content blocks are kept as JSON (the content types
/// grow with the protocol, their wire names do not change).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallResult {
    #[serde(default)]
    pub content: Vec<Value>,
    pub structured_content: Option<Value>,
    pub is_error: Option<bool>,
}

/// As much as a shell command's output (the seed's cap).
const CAP: usize = 50_000;

pub fn output(r: &CallResult) -> Answer {
    let mut parts: Vec<String> = Vec::new();
    for v in &r.content {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
        parts.push(match s("type") {
            "text" => s("text").to_string(),
            "image" => format!("[image: {}]", s("mimeType")),
            "audio" => format!("[audio: {}]", s("mimeType")),
            "resource" => {
                let res = v.get("resource").cloned().unwrap_or(Value::Null);
                let r = |k: &str| res.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                match res.get("text").and_then(Value::as_str) {
                    Some(text) => format!("[resource: {}]\n{text}", r("uri")),
                    None => format!("[resource: {} {}]", r("uri"), r("mimeType")).trim_end().replace(" ]", "]"),
                }
            }
            "resource_link" => format!("[resource link: {}]", s("uri")),
            other => format!("[{other} content]"),
        });
    }
    if parts.is_empty() {
        if let Some(structured) = &r.structured_content {
            parts.push(structured.to_string());
        }
    }
    let text = truncate_middle(parts.join("\n").trim(), CAP);
    let text = if text.is_empty() { "(no output)".to_string() } else { text };
    if r.is_error == Some(true) {
        Answer { text: format!("Error: {text}"), is_error: true }
    } else {
        Answer { text, is_error: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> CallResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_joined_and_other_content_named() {
        let r = parse(json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AA==", "mimeType": "application/zip"}},
            {"type": "text", "text": "two"}
        ]}));
        let out = output(&r);
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "one\n[image: image/png]\n[resource: file:///a.txt]\ninside\n[resource: file:///b.bin application/zip]\ntwo"
        );
    }

    #[test]
    fn is_error_is_an_error_result() {
        let out = output(&parse(json!({"content": [{"type": "text", "text": "no such city"}], "isError": true})));
        assert_eq!(out, Answer { text: "Error: no such city".into(), is_error: true });
        assert_eq!(output(&parse(json!({"content": []}))).text, "(no output)");
    }
}
