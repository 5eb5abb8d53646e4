//! MCP tools: the session's servers, started together in the background (each within a time limit),
//! their tools offered to the model as `mcp__<server>__<tool>` in a stable order, and calls to them.
//! A server that fails is reported and its tools left out; a call that fails is an error result. The
//! servers stop when the set is dropped (stdio ones with everything they started: process.rs).

mod client;
pub mod config;
pub(crate) mod process;
pub mod report;
mod result;
pub use result::Answer;
pub mod sources;
pub mod trust;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::{join_all, BoxFuture};
use serde_json::Value;
use tokio::sync::watch;

pub use config::{Configured, Origin, ServerSpec};

use crate::llm::{Schema, ToolSpec};

/// Tool names providers accept: `[A-Za-z0-9_-]{1,64}`.
const MAX_NAME: usize = 64;
pub const PREFIX: &str = "mcp__";

/// How long a server may take to start (`STEPWISE_MCP_START_TIMEOUT`), and a call to answer
/// (`STEPWISE_MCP_TIMEOUT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub start: Duration,
    pub call: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { start: Duration::from_secs(30), call: Duration::from_secs(60) }
    }
}

/// What a run needs of MCP: the session's servers, and the time limits they were started with.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    pub set: Option<Arc<McpSet>>,
    pub timeout: Timeouts,
}

impl McpConfig {
    /// The time limits from `STEPWISE_MCP_START_TIMEOUT` and `STEPWISE_MCP_TIMEOUT` (seconds), read by
    /// `number` (config.rs: a value that is not one is an error naming the variable).
    pub fn read(number: impl Fn(&str, u64) -> Result<u64, String>) -> Result<McpConfig, String> {
        let secs = |var: &str, default: u64| number(var, default).map(|s| Duration::from_secs(s.max(1)));
        let timeout =
            Timeouts { start: secs("STEPWISE_MCP_START_TIMEOUT", 30)?, call: secs("STEPWISE_MCP_TIMEOUT", 60)? };
        Ok(McpConfig { set: None, timeout })
    }
}

/// Told to the user (a terminal line, an editor message, an ACP message): a server that failed.
pub type Report = Arc<dyn Fn(&str) + Send + Sync>;

/// A session's MCP servers, starting or started.
pub struct McpSet {
    rx: watch::Receiver<Option<Arc<McpTools>>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for McpSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpSet")
    }
}

impl Drop for McpSet {
    fn drop(&mut self) {
        // Servers still starting are dropped with the task, and so killed.
        self.task.abort();
    }
}

impl McpSet {
    /// Starts `servers` in `root` now, in the background. Those from the workspace's `.mcp.json` wait
    /// for `trusted` (the user's answer) and are left out when it says no.
    pub fn start(
        servers: Vec<Configured>,
        root: PathBuf,
        timeout: Timeouts,
        trusted: Option<BoxFuture<'static, bool>>,
        report: Report,
    ) -> Arc<McpSet> {
        let (tx, rx) = watch::channel(None);
        let task = tokio::spawn(async move {
            let (workspace, others): (Vec<_>, Vec<_>) =
                servers.into_iter().partition(|c| c.origin == Origin::Workspace);
            let start_all = |list: Vec<Configured>| {
                join_all(list.into_iter().map(|c| {
                    let root = root.clone();
                    async move {
                        let started = tokio::time::timeout(timeout.start, connect(&c, &root, timeout.start)).await;
                        let started = started.unwrap_or_else(|_| {
                            Err(format!(
                                "did not start within {}s (STEPWISE_MCP_START_TIMEOUT)",
                                timeout.start.as_secs()
                            ))
                        });
                        (c.name, c.origin, started)
                    }
                }))
            };
            let workspace_started = async {
                if workspace.is_empty() {
                    return Vec::new();
                }
                let yes = match trusted {
                    Some(answer) => answer.await,
                    None => true,
                };
                if yes {
                    start_all(workspace).await
                } else {
                    workspace
                        .into_iter()
                        .map(|c| (c.name, c.origin, Err("the workspace's .mcp.json is not trusted".into())))
                        .collect()
                }
            };
            let (mut all, more) = tokio::join!(start_all(others), workspace_started);
            all.extend(more);
            all.sort_by(|a, b| a.0.cmp(&b.0));
            let tools = McpTools::gather(all, timeout.call, &report);
            let _ = tx.send(Some(Arc::new(tools)));
        });
        Arc::new(McpSet { rx, task })
    }

    /// The started servers' tools, once every server has started or failed.
    pub async fn ready(&self) -> Arc<McpTools> {
        self.when_ready().await.unwrap_or_else(|| Arc::new(McpTools::default()))
    }

    /// The same, as a future that does not keep the set alive: `None` if the set is dropped first.
    pub fn when_ready(&self) -> impl std::future::Future<Output = Option<Arc<McpTools>>> + Send + 'static {
        let mut rx = self.rx.clone();
        async move { rx.wait_for(Option::is_some).await.ok().and_then(|v| v.clone()) }
    }
}

/// One tool as the model sees it.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// `mcp__<server>__<tool>`.
    pub exposed: String,
    pub server: String,
    pub tool: String,
    description: String,
    /// Encoded once, when the server listed it: each round's request shares it (`Schema`).
    schema: Schema,
    index: usize,
}

/// A server that answered, with the tools it listed.
type Connected = (Live, Vec<client::Tool>);

struct Live {
    name: String,
    client: client::Client,
    /// A stdio server's process.
    process: Option<Process>,
}

/// A stdio server's process: killed (with everything it started) when the set goes; how it ended, said
/// once to every call it failed.
struct Process {
    reaper: tokio::sync::Mutex<process::Reaper>,
    stderr: Arc<Mutex<process::Stderr>>,
    ended: tokio::sync::OnceCell<String>,
}

impl Live {
    /// Why a call failed: for a stdio server gone, how it ended (it exited, it was killed).
    async fn why(&self, e: client::Error) -> String {
        match (&self.process, &e) {
            (Some(p), client::Error::Closed(_)) => {
                let ended = p.ended.get_or_init(|| async { p.reaper.lock().await.ended(e.to_string()).await });
                ended.await.clone()
            }
            _ => e.to_string(),
        }
    }
}

/// How one server's start went, as editors show it (`stepwise/mcp`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ServerState {
    pub name: String,
    pub origin: &'static str,
    /// `running` or `failed`.
    pub state: &'static str,
    /// How many of its tools the model is offered.
    pub tools: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a session's servers offer, and how each one's start went.
#[derive(Default)]
pub struct McpTools {
    live: Vec<Live>,
    tools: Vec<McpTool>,
    /// Every configured server, in name order.
    pub servers: Vec<ServerState>,
    timeout: Duration,
}

impl McpTools {
    fn gather(
        started: Vec<(String, Origin, Result<Connected, String>)>,
        timeout: Duration,
        report: &Report,
    ) -> McpTools {
        let mut out = McpTools { timeout, ..McpTools::default() };
        for (name, origin, result) in started {
            let origin = origin.as_str();
            match result {
                Ok((live, tools)) => {
                    let index = out.live.len();
                    let mut list: Vec<McpTool> = tools
                        .into_iter()
                        .map(|t| McpTool {
                            exposed: exposed_name(&name, &t.name),
                            server: name.clone(),
                            tool: t.name,
                            description: t.description.unwrap_or_default(),
                            schema: schema(&t.input_schema).into(),
                            index,
                        })
                        .collect();
                    list.sort_by(|a, b| a.exposed.cmp(&b.exposed));
                    tracing::info!("MCP server {name}: {} tools", list.len());
                    let mut offered = 0;
                    for t in list {
                        if out.tools.iter().any(|o| o.exposed == t.exposed) {
                            tracing::warn!("MCP server {name}: tool {} left out: its name clashes", t.tool);
                        } else {
                            out.tools.push(t);
                            offered += 1;
                        }
                    }
                    out.live.push(live);
                    out.servers.push(ServerState { name, origin, state: "running", tools: offered, error: None });
                }
                Err(why) => {
                    report(&format!("MCP server '{name}' failed to start: {why}; its tools are left out"));
                    out.servers.push(ServerState { name, origin, state: "failed", tools: 0, error: Some(why) });
                }
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools as the model is given them, in a stable order (server, then tool name).
    pub fn specs(&self) -> impl Iterator<Item = ToolSpec> + '_ {
        self.tools.iter().map(|t| ToolSpec {
            name: Cow::Owned(t.exposed.clone()),
            description: Cow::Owned(if t.description.is_empty() {
                format!("The tool {} of the MCP server {}.", t.tool, t.server)
            } else {
                t.description.clone()
            }),
            input_schema: t.schema.clone(),
        })
    }

    pub fn find(&self, exposed: &str) -> Option<&McpTool> {
        self.tools.iter().find(|t| t.exposed == exposed)
    }

    /// Calls a tool; a failure of any kind (the server crashed, timed out, refused) is an error result.
    pub async fn call(&self, tool: &McpTool, input: &Value) -> Answer {
        let Some(live) = self.live.get(tool.index) else {
            return Answer::error(format!("MCP server {} is not running", tool.server));
        };
        let args = input.as_object().cloned().unwrap_or_default();
        let answer = tokio::time::timeout(self.timeout, live.client.call_tool(&tool.tool, args)).await;
        match answer {
            Ok(Ok(r)) => result::output(&r),
            Ok(Err(e)) => {
                let why = live.why(e).await;
                let tail = live.process.as_ref().map(|p| crate::locks::lock(&p.stderr).tail()).unwrap_or_default();
                let tail = if tail.is_empty() { String::new() } else { format!("\nits last output:\n{tail}") };
                Answer::error(format!("MCP server {} failed: {why}{tail}", live.name))
            }
            Err(_) => Answer::error(format!(
                "MCP tool {} of {} timed out after {}s (STEPWISE_MCP_TIMEOUT)",
                tool.tool,
                tool.server,
                self.timeout.as_secs()
            )),
        }
    }
}

/// `mcp__server__tool`, with characters providers refuse replaced and the whole at most 64 long.
fn exposed_name(server: &str, tool: &str) -> String {
    let clean: String =
        tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let mut name = format!("{PREFIX}{server}__{clean}");
    name.truncate(MAX_NAME);
    name
}

/// The input schema as providers want it: an object schema.
fn schema(s: &serde_json::Map<String, Value>) -> Value {
    let mut s = s.clone();
    if !s.contains_key("type") {
        s.insert("type".into(), Value::String("object".into()));
    }
    if !s.contains_key("properties") {
        s.insert("properties".into(), Value::Object(Default::default()));
    }
    Value::Object(s)
}

async fn connect(c: &Configured, root: &std::path::Path, timeout: Duration) -> Result<Connected, String> {
    let (client, process) = match &c.spec {
        ServerSpec::Stdio { command, args, env } => {
            let mut child = process::spawn(root, command, args, env)?;
            let client = client::Client::stdio(child.stdout, child.stdin, &c.name);
            if let Err(e) = client.initialize().await {
                return Err(child.reaper.why_failed(e.to_string(), &child.stderr).await);
            }
            let ended = Default::default();
            (client, Some(Process { reaper: child.reaper.into(), stderr: child.stderr, ended }))
        }
        ServerSpec::Http { url, headers } => {
            let client = client::Client::http(client::Http::new(url, headers, timeout)?, &c.name);
            client.initialize().await.map_err(|e| e.to_string())?;
            (client, None)
        }
    };
    let tools = client.list_tools().await.map_err(|e| format!("listing its tools failed: {e}"))?;
    Ok((Live { name: c.name.clone(), client, process }, tools))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_names_are_what_providers_accept() {
        assert_eq!(exposed_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(exposed_name("x", "a.b/c d"), "mcp__x__a_b_c_d");
        assert_eq!(exposed_name("srv", &"t".repeat(100)).len(), 64);
    }

    #[test]
    fn schemas_are_objects() {
        let s = schema(&serde_json::Map::new());
        assert_eq!(s, serde_json::json!({"type": "object", "properties": {}}));
    }
}
