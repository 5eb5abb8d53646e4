//! The tools the model is given, their schemas (the seed's s03) and their dispatch.

use std::time::Duration;

use serde_json::Value;

pub mod background;
mod bash;
pub mod catalog;
mod files;
mod gate;

use crate::host::output::truncate_chars;
use crate::host::{resolve, Approvals, FileChange, Host, ResolvedPath};
use crate::llm::ToolSpec;
use crate::mcp::McpTools;
use crate::plan::{Mode, PlanBoard, PlanningStyle};
use crate::sandbox::{Sandbox, SandboxSettings};
use catalog::{Handler, Tool};
use gate::Gate;
pub use gate::{prepare, will_ask, Prepared};

/// The result of one tool call, as the model will read it, and the file change it made.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
    pub change: Option<FileChange>,
    /// What the model is shown besides the text (`read_file` of an image).
    pub images: Vec<crate::llm::Image>,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput { text: text.into(), is_error: false, change: None, images: Vec::new() }
    }
    /// A result the model reads as a failure, as given.
    pub fn failed(text: impl Into<String>) -> Self {
        ToolOutput { text: text.into(), is_error: true, change: None, images: Vec::new() }
    }
    /// Errors reach the model as `Error: <message>`.
    pub fn error(message: impl AsRef<str>) -> Self {
        Self::failed(format!("Error: {}", message.as_ref()))
    }
}

/// The tools offered in `mode` (the catalog's): the built-in ones, then the MCP servers' (`mcp__<server>__<tool>`).
pub fn specs(style: PlanningStyle, mode: Mode, mcp: Option<&McpTools>, intel: bool, skills: bool) -> Vec<ToolSpec> {
    catalog::specs(style, mode, mcp, intel, skills)
}

pub fn system_prompt(root: &std::path::Path, style: PlanningStyle, mode: Mode) -> String {
    let planning = match style {
        PlanningStyle::Todo => {
            "Use the todo tool to plan multi-step tasks. Mark in_progress before starting, completed when done."
        }
        PlanningStyle::Tasks => {
            "Use create_todos to plan multi-step tasks. Mark a step running with update_todo before starting it, completed (or failed) when done."
        }
    };
    let mut prompt = format!("You are a coding agent at {}.\n{planning}\nPrefer tools over prose.", root.display());
    if mode == Mode::Plan {
        prompt = format!("{prompt}\n{}", crate::plan::first::PLANNING_PROMPT);
    }
    prompt
}

/// Everything a tool call may touch.
pub struct ToolContext<'a, H: Host + ?Sized> {
    pub host: &'a H,
    pub plan: &'a PlanBoard,
    pub approvals: &'a Approvals,
    pub style: PlanningStyle,
    pub bash_timeout: Duration,
    /// The session's sandbox and the run's settings for it.
    pub sandbox: &'a Sandbox,
    pub sandbox_settings: SandboxSettings,
    /// The call's id, for the host's questions and edits.
    pub call_id: &'a str,
    /// The session's MCP tools, started.
    pub mcp: Option<&'a McpTools>,
    /// Plan mode refuses every tool that could change something.
    pub mode: Mode,
    /// The session's background commands.
    pub background: &'a crate::background::Background,
    /// The session's code intelligence (`None`: its tools are unknown).
    pub intel: Option<&'a crate::intel::Session>,
    /// The skills the run found (`None`: `load_skill` is unknown).
    pub skills: Option<&'a crate::skills::Skills>,
}

fn str_arg<'v>(input: &'v Value, tool: &str, key: &str) -> Result<&'v str, String> {
    match input.get(key) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(format!("{tool}: missing required argument '{key}'")),
        Some(_) => Err(format!("{tool}: argument '{key}' must be a string")),
    }
}

/// Runs one tool call. Never panics on model input: every problem becomes an error result.
pub async fn execute<H: Host + ?Sized>(name: &str, input: &Value, cx: &mut ToolContext<'_, H>) -> ToolOutput {
    let call = prepare(name, input, cx);
    execute_prepared(name, input, call, cx).await
}

/// Runs a call whose gate `prepare` decided.
pub async fn execute_prepared<H: Host + ?Sized>(
    name: &str,
    input: &Value,
    call: Prepared<'_>,
    cx: &mut ToolContext<'_, H>,
) -> ToolOutput {
    let Prepared { tool, gate, path } = call;
    let Some(tool) = tool else {
        return ToolOutput::failed(format!("Unknown tool: {name}"));
    };
    let gate = match gate {
        Gate::Refused(out) => return out,
        g => g,
    };
    if tool.handler == Handler::Mcp {
        return mcp_call(name, input, &gate, cx).await;
    }
    match run(tool, gate, path, input, cx).await {
        Ok(out) => out,
        Err(msg) => ToolOutput::error(msg),
    }
}

async fn mcp_call<H: Host + ?Sized>(name: &str, input: &Value, gate: &Gate<'_>, cx: &ToolContext<'_, H>) -> ToolOutput {
    let Some((set, tool)) = cx.mcp.and_then(|m| m.find(name).map(|t| (m, t))) else {
        return ToolOutput::failed(format!("Unknown tool: {name}"));
    };
    if let Err(denied) = gate::clear(cx, gate).await {
        return ToolOutput::error(denied);
    }
    let answer = set.call(tool, input).await;
    ToolOutput { is_error: answer.is_error, ..ToolOutput::ok(answer.text) }
}

async fn run<H: Host + ?Sized>(
    tool: &Tool,
    gate: Gate<'_>,
    path: Option<ResolvedPath>,
    input: &Value,
    cx: &mut ToolContext<'_, H>,
) -> Result<ToolOutput, String> {
    let name = tool.name;
    // The gate resolved a file tool's path already.
    let resolved = |path: Option<ResolvedPath>| match path {
        Some(p) => Ok(p),
        None => resolve(cx.host.root(), str_arg(input, name, "path")?),
    };
    match tool.handler {
        Handler::Shell => bash::run(cx, str_arg(input, name, "command")?, gate).await,
        Handler::BackgroundRun => background::run(cx, str_arg(input, name, "command")?, gate).await,
        Handler::KillBackground => background::kill(input, cx.background).await.map(ToolOutput::ok),
        Handler::CheckBackground => background::check(input, cx.background).map(ToolOutput::ok),
        Handler::LoadSkill => {
            let Some(skills) = cx.skills else { return Err(format!("Unknown tool: {name}")) };
            skills.load_for_model(str_arg(input, name, "name")?).map(ToolOutput::ok)
        }
        // The loop runs `task` itself; only a child, which is not offered it, gets here.
        Handler::Task => Err("task: a subagent cannot hand work to subagents of its own".into()),
        Handler::WriteFile => {
            let path = resolved(path)?;
            let content = str_arg(input, name, "content")?;
            let change = files::write(cx, &gate, &path, content).await?;
            Ok(ToolOutput {
                change: Some(change),
                ..ToolOutput::ok(format!("Wrote {} bytes", content.chars().count()))
            })
        }
        Handler::EditFile => {
            let given = str_arg(input, name, "path")?;
            let path = resolved(path)?;
            let (old, new) = (str_arg(input, name, "old_text")?, str_arg(input, name, "new_text")?);
            let change = files::edit(cx, &gate, &path, old, new).await?;
            Ok(ToolOutput { change: Some(change), ..ToolOutput::ok(format!("Edited {given}")) })
        }
        Handler::ReadFile => {
            let path = resolve(cx.host.root(), str_arg(input, name, "path")?)?;
            // An image (by its first bytes) is shown to the model; anything else is read as text.
            match crate::images::read_file(&path).await {
                Some(image) => image
                    .map(|c| ToolOutput { images: vec![c.image.clone()], ..ToolOutput::ok(c.describe(&path.given)) }),
                None => run_text(tool, input, cx).await.map(ToolOutput::ok),
            }
        }
        Handler::Diagnostics | Handler::CodeNav | Handler::Rename => {
            let Some(intel) = cx.intel else { return Err(format!("Unknown tool: {name}")) };
            match tool.handler {
                Handler::Diagnostics => {
                    crate::intel::tools::diagnostics(intel, cx.host, input).await.map(ToolOutput::ok)
                }
                Handler::CodeNav => crate::intel::tools::code_nav(intel, cx.host, input).await.map(ToolOutput::ok),
                _ => {
                    let ctx = files::context(cx, tool.name);
                    let (text, change) = crate::intel::rename::rename_symbol(intel, cx.host, input, &ctx).await?;
                    Ok(ToolOutput { change, ..ToolOutput::ok(text) })
                }
            }
        }
        _ => run_text(tool, input, cx).await.map(ToolOutput::ok),
    }
}

async fn run_text<H: Host + ?Sized>(tool: &Tool, input: &Value, cx: &mut ToolContext<'_, H>) -> Result<String, String> {
    let name = tool.name;
    match tool.handler {
        Handler::ReadFile => {
            let path = resolve(cx.host.root(), str_arg(input, name, "path")?)?;
            let limit = match input.get("limit") {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
                Some(Value::String(s)) if s.trim().is_empty() => None,
                Some(Value::String(s)) => {
                    Some(s.trim().parse::<u64>().map_err(|_| "read_file: limit must be a whole number".to_string())?)
                }
                Some(_) => return Err("read_file: limit must be a whole number".into()),
            };
            cx.host.read_preview(&path, limit).await.map(|p| p.text)
        }
        Handler::Todo => {
            let items = input.get("items").ok_or("todo: missing required argument 'items'")?;
            cx.plan.model_change(true, |p| p.update(items))
        }
        Handler::CreateTodos => {
            let items = input.get("items").ok_or("create_todos: missing required argument 'items'")?;
            cx.plan.model_change(false, |p| p.create(items))
        }
        Handler::UpdateTodo => {
            let id = match input.get("id") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => return Err("update_todo: missing required argument 'id'".into()),
            };
            let status = str_arg(input, name, "status")?;
            cx.plan.model_change(false, |p| p.set_status(&id, status))
        }
        Handler::Shell
        | Handler::WriteFile
        | Handler::EditFile
        | Handler::Mcp
        | Handler::BackgroundRun
        | Handler::CheckBackground
        | Handler::KillBackground
        | Handler::Diagnostics
        | Handler::CodeNav
        | Handler::Rename
        | Handler::LoadSkill
        | Handler::Task => Err(format!("Unknown tool: {name}")),
    }
}

/// One line describing a call, for transcripts: the command, the path, the size of a plan.
pub fn summary(name: &str, input: &Value) -> String {
    let field = |k: &str| input.get(k).and_then(Value::as_str).map(|s| s.to_string());
    let s = match catalog::find(name).map(|t| t.handler) {
        Some(Handler::Shell | Handler::BackgroundRun) => field("command"),
        Some(Handler::CheckBackground | Handler::KillBackground) => field("task_id"),
        Some(Handler::LoadSkill) => field("name"),
        // The agent and what it was asked, as a view names the child.
        Some(Handler::Task) => Some(format!(
            "{}: {}",
            field("agent").unwrap_or_else(|| "general".into()),
            field("description").or_else(|| field("prompt")).unwrap_or_default()
        )),
        Some(Handler::ReadFile | Handler::WriteFile | Handler::EditFile) => field("path"),
        Some(Handler::Diagnostics) => match input.get("paths") {
            Some(Value::Array(a)) => Some(a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")),
            _ => Some("all files".to_string()),
        },
        Some(Handler::CodeNav) => Some(
            [field("action"), field("symbol").or_else(|| field("query")), field("path")]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" "),
        ),
        Some(Handler::Rename) => Some(format!(
            "{} -> {} in {}",
            field("symbol").unwrap_or_default(),
            field("new_name").unwrap_or_default(),
            field("path").unwrap_or_default()
        )),
        Some(Handler::Todo | Handler::CreateTodos) => Some(match input.get("items") {
            Some(Value::Array(a)) if a.len() == 1 => "1 item".to_string(),
            Some(Value::Array(a)) => format!("{} items", a.len()),
            _ => "items".to_string(),
        }),
        Some(Handler::UpdateTodo) => Some(format!(
            "#{} -> {}",
            input
                .get("id")
                .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
                .unwrap_or_default(),
            field("status").unwrap_or_default()
        )),
        _ => None,
    };
    let s = s.unwrap_or_default();
    let first = s.lines().next().unwrap_or("");
    let short = truncate_chars(first, 120);
    if short.len() < s.len() {
        format!("{short}…")
    } else {
        short.to_string()
    }
}
