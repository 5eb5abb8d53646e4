//! What stands between a call and its work, decided in one place: the tools ask the user by it, and
//! the loop tells the views beforehand whether a call will ask (ACP announces such a call `pending`).
//! It reads the catalog, plan mode, the sandbox, the protected paths and the MCP tools; the session's
//! standing approvals decide whether a question is put (`will_ask`, `clear`).

use serde_json::Value;

use super::catalog::{self, Asks, Handler, Tool};
use super::{str_arg, ToolContext, ToolOutput};
use crate::host::output::truncate_chars;
use crate::host::{is_dangerous, protected, resolve, Ask, Host, ResolvedPath};
use crate::sandbox::{Policy, SandboxMode};

/// Before a call runs.
#[derive(Debug)]
pub(super) enum Gate<'a> {
    /// It runs without a question.
    Open,
    /// A shell command runs without a question, inside this sandbox policy.
    Confined(Policy),
    /// It asks the user first, unless the session already allowed this kind of thing.
    Ask(Ask<'a>),
    /// It does not run: what the model reads instead (no question is put).
    Refused(ToolOutput),
}

/// A call with its gate decided once: the loop tells the views whether it will ask, then runs it
/// (deciding twice resolved a file tool's path and checked a command twice a call).
pub struct Prepared<'a> {
    /// `None`: a tool the run does not know.
    pub(super) tool: Option<&'static Tool>,
    pub(super) gate: Gate<'a>,
    /// A file tool's path, resolved once for the gate and the work.
    pub(super) path: Option<ResolvedPath>,
}

/// Decides the call `name(input)`'s gate.
pub fn prepare<'a, H: Host + ?Sized>(name: &str, input: &'a Value, cx: &ToolContext<'a, H>) -> Prepared<'a> {
    match known(name, cx) {
        Some(tool) => {
            let (gate, path) = decide(tool, name, input, cx);
            Prepared { tool: Some(tool), gate, path }
        }
        None => Prepared { tool: None, gate: Gate::Open, path: None },
    }
}

impl Prepared<'_> {
    /// Whether the call will put a question to the user before it runs: its gate asks, and the session has
    /// not already allowed that kind of thing. (A command the sandbox stops may ask later, to run outside it.)
    pub fn will_ask<H: Host + ?Sized>(&self, cx: &ToolContext<'_, H>) -> bool {
        match &self.gate {
            Gate::Ask(ask) => !cx.approvals.covers(ask),
            _ => false,
        }
    }
}

/// The catalog's description of a call the run knows (its planning style's tools, the started MCP tools).
pub(super) fn known<H: Host + ?Sized>(name: &str, cx: &ToolContext<'_, H>) -> Option<&'static Tool> {
    let tool = catalog::find(name)?;
    let known = match tool.handler {
        Handler::Mcp => cx.mcp.is_some_and(|m| m.find(name).is_some()),
        h if h.needs_intel() => cx.intel.is_some(),
        Handler::LoadSkill => cx.skills.is_some_and(|s| s.offered()),
        _ if tool.kind == catalog::Kind::Think => catalog::is_planning_in(name, cx.style),
        _ => true,
    };
    known.then_some(tool)
}

/// What stands before the call `name(input)` of a known `tool`.
#[cfg(test)]
fn gate<'a, H: Host + ?Sized>(tool: &Tool, name: &str, input: &'a Value, cx: &ToolContext<'a, H>) -> Gate<'a> {
    decide(tool, name, input, cx).0
}

/// The gate, and the path a file tool's gate resolved (the work uses it).
fn decide<'a, H: Host + ?Sized>(
    tool: &Tool,
    name: &str,
    input: &'a Value,
    cx: &ToolContext<'a, H>,
) -> (Gate<'a>, Option<ResolvedPath>) {
    if let Some(why) = catalog::refusal(name, cx.mode) {
        // Before anything else, approvals included: in plan mode nothing may change, even if allowed.
        return (Gate::Refused(ToolOutput::failed(why)), None);
    }
    if !input.is_object() {
        let shown = match input {
            Value::String(raw) => truncate_chars(raw, 200).to_string(),
            other => other.to_string(),
        };
        let e = format!("{name}: arguments must be a JSON object, got: {shown}");
        return (Gate::Refused(ToolOutput::error(e)), None);
    }
    let refused = |e: String| (Gate::Refused(ToolOutput::error(e)), None);
    match (tool.asks, tool.handler) {
        (Asks::Never, _) => (Gate::Open, None),
        (_, Handler::Shell | Handler::BackgroundRun) => match str_arg(input, name, "command") {
            Ok(command) => (shell(command, cx), None),
            Err(e) => refused(e),
        },
        (_, Handler::Mcp) => match cx.mcp.and_then(|m| m.find(name)) {
            // Like a shell command: the server runs code of its own, with the arguments the model chose.
            Some(t) => (Gate::Ask(Ask::Tool { server: &t.server, tool: &t.tool }), None),
            None => (Gate::Refused(ToolOutput::failed(format!("Unknown tool: {name}"))), None),
        },
        (Asks::ProtectedPath, _) => {
            // Writes to files that can run code or redirect credentials need the same approval as commands.
            let given = match str_arg(input, name, "path") {
                Ok(p) => p,
                Err(e) => return refused(e),
            };
            let path = match resolve(cx.host.root(), given) {
                Ok(p) => p,
                Err(e) => return refused(e),
            };
            let rel = path.abs.strip_prefix(cx.host.root()).unwrap_or(&path.abs);
            match protected(rel) {
                Some(why) => (Gate::Ask(Ask::Write { path: given, why }), Some(path)),
                None => (Gate::Open, Some(path)),
            }
        }
        (Asks::Always, _) => (Gate::Open, None),
    }
}

/// A shell command: blocked, in the sandbox unasked where it can start, else asked for. Wanted but
/// unable to start (said once, in the status and `stepwise doctor`): ask per command, as with the
/// sandbox off, never run unconfined unasked; in read-only (plan mode) not at all, as no answer can make
/// an unconfined command write nothing.
fn shell<'a, H: Host + ?Sized>(command: &'a str, cx: &ToolContext<'a, H>) -> Gate<'a> {
    if let Some(why) = is_dangerous(command) {
        // The first line is the seed's text (editors and suites match it); the reason follows.
        return Gate::Refused(ToolOutput::error(format!("Dangerous command blocked\n{why}")));
    }
    match cx.sandbox.policy(cx.host.root(), cx.sandbox_settings) {
        Ok(Some(policy)) => Gate::Confined(policy),
        Ok(None) => Gate::Ask(Ask::Command(command)),
        Err(why) if cx.sandbox_settings.mode == SandboxMode::ReadOnly => Gate::Refused(ToolOutput::error(format!(
            "read-only: the sandbox cannot start here ({why}), and commands run only inside it"
        ))),
        Err(_) => Gate::Ask(Ask::Command(command)),
    }
}

/// Whether the call `name(input)` will put a question to the user before it runs (`Prepared::will_ask`).
pub fn will_ask<H: Host + ?Sized>(name: &str, input: &Value, cx: &ToolContext<'_, H>) -> bool {
    prepare(name, input, cx).will_ask(cx)
}

/// Passes a call's gate: asks where it asks (unless the session already allowed it; "for the session"
/// is remembered). `Err` is what the model reads when the user said no.
pub(super) async fn clear<H: Host + ?Sized>(cx: &ToolContext<'_, H>, gate: &Gate<'_>) -> Result<(), String> {
    let Gate::Ask(ask) = gate else { return Ok(()) };
    match approve(cx, ask).await {
        true => Ok(()),
        false => Err(match ask {
            Ask::Command(_) | Ask::Unsandboxed { .. } => "Command denied by the user".to_string(),
            Ask::Write { path, why } => format!("Write to {path} denied by the user ({why})"),
            Ask::Tool { server, tool } => format!("MCP tool {tool} of {server} denied by the user"),
        }),
    }
}

/// Asks the user unless this session already allowed this kind of thing; remembers "for the session".
pub(super) async fn approve<H: Host + ?Sized>(cx: &ToolContext<'_, H>, ask: &Ask<'_>) -> bool {
    if cx.approvals.covers(ask) {
        return true;
    }
    let answer = cx.host.approve(ask, cx.call_id).await;
    cx.approvals.record(ask, answer);
    answer.allowed()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::host::{Approval, Approvals, DiskHost};
    use crate::plan::{Mode, PlanBoard, PlanningStyle};
    use crate::sandbox::{Sandbox, SandboxSettings};

    struct Fixture {
        host: DiskHost,
        plan: PlanBoard,
        approvals: Approvals,
        sandbox: Sandbox,
        background: crate::background::Background,
    }

    fn fixture() -> Fixture {
        let root = std::env::temp_dir().canonicalize().unwrap();
        Fixture {
            host: DiskHost::new(&root, None).unwrap(),
            plan: PlanBoard::new(Default::default(), 0),
            approvals: Approvals::default(),
            sandbox: Sandbox::default(),
            background: Default::default(),
        }
    }

    fn cx(f: &Fixture, mode: Mode) -> ToolContext<'_, DiskHost> {
        ToolContext {
            host: &f.host,
            plan: &f.plan,
            approvals: &f.approvals,
            style: PlanningStyle::Todo,
            bash_timeout: Duration::from_secs(1),
            sandbox: &f.sandbox,
            // Off: a command asks (whether a sandbox can start on this machine is not the question here).
            sandbox_settings: SandboxSettings::OFF,
            call_id: "c1",
            mcp: None,
            mode,
            background: &f.background,
            intel: None,
            skills: None,
        }
    }

    #[test]
    fn commands_and_protected_writes_ask_until_allowed_for_the_session() {
        let f = fixture();
        let cx = cx(&f, Mode::Default);
        let git = f.host.root().join(".git/config").display().to_string();
        assert!(will_ask("bash", &json!({"command": "ls"}), &cx));
        assert!(!will_ask("bash", &json!({"command": "sudo ls"}), &cx), "blocked, never asked");
        assert!(!will_ask("bash", &json!({}), &cx), "no command: an error, never asked");
        assert!(will_ask("write_file", &json!({"path": ".env"}), &cx));
        assert!(will_ask("edit_file", &json!({"path": git}), &cx));
        assert!(!will_ask("write_file", &json!({"path": "src/a.rs"}), &cx));
        assert!(!will_ask("write_file", &json!({"path": "../.env"}), &cx), "outside: refused, never asked");
        assert!(!will_ask("read_file", &json!({"path": ".env"}), &cx));
        assert!(!will_ask("mcp__fs__write", &json!({}), &cx), "no such MCP tool started: unknown, never asked");
        assert!(!will_ask("no_such_tool", &json!({}), &cx));

        // "Allow for this session" covers the agent's own tools: nothing is asked again.
        f.approvals.record(&Ask::Command("ls"), Approval::AllowForSession);
        assert!(!will_ask("bash", &json!({"command": "make"}), &cx));
        assert!(!will_ask("write_file", &json!({"path": ".env"}), &cx));
    }

    #[test]
    fn plan_mode_refuses_before_any_question() {
        let f = fixture();
        let cx = cx(&f, Mode::Plan);
        assert!(!will_ask("write_file", &json!({"path": ".env"}), &cx));
        match gate(&catalog::WRITE_FILE, "write_file", &json!({"path": ".env"}), &cx) {
            Gate::Refused(out) => assert!(out.text.starts_with("Error: plan mode: "), "{}", out.text),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_command_the_sandbox_holds_runs_unasked_and_read_only_without_one_is_refused() {
        let f = fixture();
        let mut cx = cx(&f, Mode::Default);
        cx.sandbox_settings = SandboxSettings::of(SandboxMode::WorkspaceWrite, false);
        let read_only = SandboxSettings::of(SandboxMode::ReadOnly, false);
        let input = json!({"command": "ls"});
        match crate::sandbox::availability(false) {
            Ok(_) => {
                assert!(matches!(gate(&catalog::BASH, "bash", &input, &cx), Gate::Confined(p) if p.write));
                cx.sandbox_settings = read_only;
                assert!(matches!(gate(&catalog::BASH, "bash", &input, &cx), Gate::Confined(p) if !p.write));
            }
            Err(_) => {
                // Wanted but unable to start: each command asks; read-only runs none.
                assert!(matches!(gate(&catalog::BASH, "bash", &input, &cx), Gate::Ask(Ask::Command("ls"))));
                cx.sandbox_settings = read_only;
                assert!(matches!(gate(&catalog::BASH, "bash", &input, &cx), Gate::Refused(_)));
            }
        }
        assert!(!will_ask("bash", &input, &cx));
    }
}
