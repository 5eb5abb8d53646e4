//! Which MCP servers to start: the user's `mcp.json`, the workspace's `.mcp.json`, the editor setting
//! `mcpServers` and ACP `session/new`. Every source has the same shape (Claude Code's and Cursor's):
//! `{"mcpServers": {"NAME": {"command", "args", "env"} | {"type": "http", "url", "headers"}}}`, or the
//! inner map alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Raw", into = "Raw")]
pub enum ServerSpec {
    Stdio { command: String, args: Vec<String>, env: BTreeMap<String, String> },
    Http { url: String, headers: BTreeMap<String, String> },
}

/// Servers by name (sorted: the tools' order, and so the prompt, does not depend on a file's order).
pub type Servers = BTreeMap<String, ServerSpec>;

/// Where a server was configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    User,
    Workspace,
    Settings,
    Client,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Workspace => "workspace",
            Origin::Settings => "settings",
            Origin::Client => "client",
        }
    }
}

/// One server to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configured {
    pub name: String,
    pub spec: ServerSpec,
    pub origin: Origin,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
}

impl TryFrom<Raw> for ServerSpec {
    type Error = String;
    fn try_from(r: Raw) -> Result<Self, String> {
        let kind = r.kind.as_deref().map(str::to_ascii_lowercase);
        match (kind.as_deref(), r.command, r.url) {
            (None | Some("stdio"), Some(command), None) if !command.trim().is_empty() => {
                Ok(ServerSpec::Stdio { command, args: r.args, env: r.env })
            }
            (None | Some("http") | Some("streamable-http") | Some("streamablehttp"), None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("url must start with http:// or https://, got '{url}'"));
                }
                Ok(ServerSpec::Http { url, headers: r.headers })
            }
            (Some("sse"), ..) => Err("the old SSE transport is not supported: use \"type\": \"http\"".into()),
            (Some(k), ..) if !matches!(k, "stdio" | "http" | "streamable-http" | "streamablehttp") => {
                Err(format!("unknown type '{k}': use \"stdio\" or \"http\""))
            }
            (_, Some(_), Some(_)) => Err("give either a command or a url, not both".into()),
            _ => Err("a server needs a \"command\" (stdio) or a \"url\" (http)".into()),
        }
    }
}

impl From<ServerSpec> for Raw {
    fn from(s: ServerSpec) -> Raw {
        match s {
            ServerSpec::Stdio { command, args, env } => Raw { command: Some(command), args, env, ..Raw::default() },
            ServerSpec::Http { url, headers } => {
                Raw { kind: Some("http".into()), url: Some(url), headers, ..Raw::default() }
            }
        }
    }
}

/// Server names become part of tool names (`mcp__NAME__tool`), which providers limit to `[A-Za-z0-9_-]`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 32 {
        return Err(format!("server name '{name}' must be 1 to 32 characters"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') || name.contains("__") {
        return Err(format!("server name '{name}' may use only letters, digits, '-' and single '_'"));
    }
    Ok(())
}

/// Parses a whole file or setting: `{"mcpServers": {...}}` or the map alone. Each bad server is an error
/// naming it; the good ones are kept.
pub fn parse(v: &Value) -> (Servers, Vec<String>) {
    let map = match v.get("mcpServers").unwrap_or(v) {
        Value::Object(m) => m,
        Value::Null => return (Servers::new(), Vec::new()),
        other => return (Servers::new(), vec![format!("mcpServers must be an object, got {other}")]),
    };
    let mut servers = Servers::new();
    let mut bad = Vec::new();
    for (name, spec) in map {
        let parsed = check_name(name).and_then(|()| {
            serde_json::from_value::<ServerSpec>(spec.clone()).map_err(|e| format!("server '{name}': {e}"))
        });
        match parsed {
            Ok(s) => {
                servers.insert(name.clone(), s);
            }
            Err(e) => bad.push(e),
        }
    }
    (servers, bad)
}

/// The editor setting `mcpServers`: a bad server fails the setting, naming the server (the editor reports
/// the setting by name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting(pub Servers);

impl<'de> Deserialize<'de> for Setting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Setting, D::Error> {
        let (servers, bad) = parse(&Value::deserialize(d)?);
        if bad.is_empty() {
            Ok(Setting(servers))
        } else {
            Err(serde::de::Error::custom(bad.join("; ")))
        }
    }
}

/// A configuration file as read from disk.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub path: PathBuf,
    /// Its bytes: trust is given to one content of the file.
    pub content: String,
    pub servers: Servers,
    pub problems: Vec<String>,
}

/// The most of an MCP configuration file read (a FIFO or device in its place is not read: `text_file`).
const MAX_CONFIG: u64 = 4 << 20;

/// Reads `path` if it exists; a file that is not JSON is one problem naming it.
pub fn read_file(path: &Path) -> Option<ConfigFile> {
    let content = crate::text_file::read_string(path, MAX_CONFIG).ok()?;
    let path = &std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let (servers, problems) = match serde_json::from_str::<Value>(&content) {
        Ok(v) => parse(&v),
        Err(e) => (Servers::new(), vec![format!("{} is not JSON: {e}", path.display())]),
    };
    let problems = problems.into_iter().map(|p| format!("{}: {p}", path.display())).collect();
    Some(ConfigFile { path: path.to_path_buf(), content, servers, problems })
}

/// The user's file: `$XDG_CONFIG_HOME/stepwise/mcp.json`.
pub fn user_file() -> Option<ConfigFile> {
    read_file(&crate::instructions::config_dir()?.join("mcp.json"))
}

/// The workspace's file: `.mcp.json` at its root.
pub fn workspace_file(root: &Path) -> Option<ConfigFile> {
    read_file(&root.join(".mcp.json"))
}

/// Joins the sources; a later source's server replaces an earlier one of the same name.
pub fn merge(sources: impl IntoIterator<Item = (Origin, Servers)>) -> Vec<Configured> {
    let mut by_name: BTreeMap<String, Configured> = BTreeMap::new();
    for (origin, servers) in sources {
        for (name, spec) in servers {
            by_name.insert(name.clone(), Configured { name, spec, origin });
        }
    }
    by_name.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_shapes_and_both_transports() {
        let v = json!({"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}},
            "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X": "y"}},
        }});
        let (s, bad) = parse(&v);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(
            s["fs"],
            ServerSpec::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "x".into()],
                env: [("A".to_string(), "1".to_string())].into()
            }
        );
        assert!(matches!(&s["web"], ServerSpec::Http { url, .. } if url == "http://127.0.0.1:1/mcp"));
        let (inner, _) = parse(&v["mcpServers"]);
        assert_eq!(inner, s);
    }

    #[test]
    fn bad_servers_are_named_and_the_rest_kept() {
        let v = json!({
            "ok": {"command": "srv"},
            "nothing": {},
            "old": {"type": "sse", "url": "http://x"},
            "ftp": {"url": "ftp://x"},
            "bad name": {"command": "x"},
            "nums": {"command": 3},
        });
        let (s, bad) = parse(&v);
        assert_eq!(s.keys().collect::<Vec<_>>(), ["ok"]);
        assert_eq!(bad.len(), 5, "{bad:?}");
        for name in ["nothing", "old", "ftp", "bad name", "nums"] {
            assert!(bad.iter().any(|b| b.contains(&format!("'{name}'"))), "{name}: {bad:?}");
        }
        assert_eq!(parse(&json!([1])).1.len(), 1);
    }

    #[test]
    fn later_sources_replace_earlier_ones() {
        let one = |c: &str| {
            Servers::from([(
                "a".to_string(),
                ServerSpec::Stdio { command: c.into(), args: vec![], env: Default::default() },
            )])
        };
        let merged = merge([(Origin::User, one("u")), (Origin::Workspace, one("w"))]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].origin, Origin::Workspace);
    }
}
