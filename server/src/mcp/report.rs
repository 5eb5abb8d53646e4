//! What `stepwise doctor` says about MCP servers: each one found, where from and in what state. Nothing
//! is started (that would run commands); a workspace file not trusted yet says so.

use std::path::Path;

use serde_json::{json, Value};

use super::config::Servers;
use super::{sources, Origin, ServerSpec};

pub struct McpReport {
    pub servers: Vec<Value>,
    pub problems: Vec<String>,
}

pub fn report(root: &Path, settings: Option<&Servers>) -> McpReport {
    let found = sources::find(root, settings, Default::default());
    let untrusted = found.untrusted.is_some();
    let servers = found
        .servers
        .iter()
        .map(|c| {
            let state = if c.origin == Origin::Workspace && untrusted { "untrusted" } else { "configured" };
            let mut v = json!({"name": c.name, "origin": c.origin.as_str(), "state": state});
            match &c.spec {
                ServerSpec::Stdio { command, args, .. } => {
                    v["transport"] = json!("stdio");
                    v["command"] = json!(command);
                    v["args"] = json!(args);
                }
                // Headers may carry tokens: only the URL is shown.
                ServerSpec::Http { url, .. } => {
                    v["transport"] = json!("http");
                    v["url"] = json!(url);
                }
            }
            v
        })
        .collect();
    McpReport { servers, problems: found.problems }
}

/// One line per server for the text report.
pub fn line(v: &Value) -> String {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    let what = if s("transport") == "http" {
        s("url").to_string()
    } else {
        let args: Vec<&str> = v
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        format!("{} {}", s("command"), args.join(" ")).trim_end().to_string()
    };
    let state = match s("state") {
        "untrusted" => "not trusted yet: starts once you trust the workspace's .mcp.json",
        other => other,
    };
    format!("{} ({}, {}): {what} [{state}]", s("name"), s("transport"), s("origin"))
}
