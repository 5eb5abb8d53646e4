//! `stepwise doctor [--workspace DIR] [--settings JSON] [--json] [--no-language-servers]`: the configuration
//! stepwise sees, read by the same code as `run` and the sidecar (environment, `.env`, editor settings), and
//! what is missing. Editors show this report instead of reading `.env` files themselves. The API key is never
//! printed: only whether it is set and where it came from. The language servers a session would start in
//! the workspace are started, as a session would start them, to say whether they start, and if not why
//! (`intel/servers/check.rs`), unless `--no-language-servers` (an editor whose own servers answer).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::config::{self, Env, Overrides, ProviderVars};
use crate::intel::servers::check::{self, Start};
use crate::llm::ProviderKind;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    Settings,
    Environment,
    File(PathBuf),
    Default,
    Unset,
}

impl Source {
    fn of(env: &Env, var: &str) -> Source {
        match (env.get(var), env.file_of(var)) {
            (None, _) => Source::Unset,
            (Some(_), Some(f)) => Source::File(f.to_path_buf()),
            (Some(_), None) => Source::Environment,
        }
    }

    fn json(&self) -> Value {
        match self {
            Source::Settings => json!({"source": "settings"}),
            Source::Environment => json!({"source": "environment"}),
            Source::File(f) => json!({"source": "file", "file": f}),
            Source::Default => json!({"source": "default"}),
            Source::Unset => json!({"source": "unset"}),
        }
    }

    fn text(&self) -> String {
        match self {
            Source::Settings => "editor settings".into(),
            Source::Environment => "environment".into(),
            Source::File(f) => f.display().to_string(),
            Source::Default => "default".into(),
            Source::Unset => "not set".into(),
        }
    }
}

struct Item {
    value: Option<String>,
    var: String,
    source: Source,
}

impl Item {
    fn json(&self) -> Value {
        let mut v = self.source.json();
        v["value"] = json!(self.value);
        v["variable"] = json!(self.var);
        v
    }
}

/// The report on one workspace.
pub struct Report {
    workspace: PathBuf,
    env_files: Vec<PathBuf>,
    provider: Item,
    model: Item,
    base_url: Item,
    key: Item,
    /// `model` and/or `apiKey`: what must be set before a run can reach a model.
    missing: Vec<&'static str>,
    problems: Vec<String>,
    state_dir: Option<PathBuf>,
    session: Option<PathBuf>,
    instructions: crate::instructions::Instructions,
    mcp: crate::mcp::report::McpReport,
    /// The skills a run would find: valid ones, those another of their name hides, and those skipped.
    skills: crate::skills::Skills,
    /// The agents a `task` call may name, and the files that are no agent.
    agents: crate::subagents::agents::Agents,
    sandbox: crate::sandbox::SandboxSettings,
    /// The language servers stepwise would start where no editor answers `stepwise/query`, and what is
    /// wrong in the user's `language-servers.json`.
    language_servers: (Vec<std::sync::Arc<crate::intel::servers::spec::Spec>>, Vec<String>),
    /// How the start of each server the workspace uses went (by name); `None`: none was started.
    started: Option<Vec<(String, Start)>>,
}

fn pick(setting: &Option<String>, env: &Env, var: &str) -> Item {
    if let Some(v) = setting.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        return Item { value: Some(v.to_string()), var: var.to_string(), source: Source::Settings };
    }
    Item { value: env.get(var).map(str::to_string), var: var.to_string(), source: Source::of(env, var) }
}

/// What stepwise would use in `workspace`, with `.env` files from `dirs` (as `run` and the sidecar read them);
/// with `start_servers`, the language servers it would start there are started.
pub fn report(workspace: &Path, dirs: &[&Path], o: &Overrides, start_servers: bool) -> Report {
    let env = Env::load(dirs);
    let mut env_files: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        let f = dir.join(".env");
        if f.is_file() {
            let f = std::fs::canonicalize(&f).unwrap_or(f);
            if !env_files.contains(&f) {
                env_files.push(f);
            }
        }
    }
    let mut provider = pick(&o.provider, &env, "STEPWISE_PROVIDER");
    let kind = provider.value.as_deref().and_then(ProviderKind::parse).unwrap_or(ProviderKind::Anthropic);
    if provider.value.is_none() {
        provider.value = Some("anthropic".into());
        provider.source = Source::Default;
    }
    let model = pick(&o.model, &env, "MODEL_ID");
    let ProviderVars { key_var, base_var, default_base } = ProviderVars::of(kind);
    let mut base_url = pick(&o.base_url, &env, base_var);
    if base_url.value.is_none() {
        base_url.value = Some(default_base.into());
        base_url.source = Source::Default;
    }
    let key_var = o.api_key_env.clone().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| key_var.to_string());
    // Never the key itself: only whether it is set and where from.
    let key = Item { value: None, source: Source::of(&env, &key_var), var: key_var };

    // The problems are the ones a run reports, by the same code; a missing model hides what comes after
    // it there, so it is looked past once to find the rest.
    let mut problems = Vec::new();
    let mut missing = Vec::new();
    let mut probe = o.clone();
    if model.value.is_none() {
        missing.push("model");
        probe.model = Some("-".into());
        if let Err(e) = config::provider(&env, o) {
            problems.push(e);
        }
    }
    if let Err(e) = config::provider(&env, &probe) {
        if key.source == Source::Unset && e.contains(&key.var) {
            missing.push("apiKey");
        }
        if !problems.contains(&e) {
            problems.push(e);
        }
    }
    let diagnostics = match config::agent(&env, o) {
        Ok(cfg) => cfg.intel.mode,
        Err(e) => {
            problems.push(e);
            crate::intel::DiagnosticsMode::default()
        }
    };
    // An invalid setting is among the problems above; the report shows the default then.
    let sandbox = config::sandbox(&env, o)
        .unwrap_or(crate::sandbox::SandboxSettings::of(crate::sandbox::SandboxMode::WorkspaceWrite, false));
    let state_dir = crate::trust::state_dir();
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let session = state_dir.as_ref().map(|d| crate::store::file_for(d, &root)).filter(|f| f.is_file());
    let instructions = crate::instructions::load(&root);
    let mcp = crate::mcp::report::report(&root, o.mcp_servers.as_ref().map(|s| &s.0));
    let started = start_servers.then(|| started(&root, sandbox, diagnostics));
    let skills = crate::skills::find(&root);
    let agents = crate::subagents::agents::find(&root);
    Report {
        workspace: root,
        env_files,
        provider,
        model,
        base_url,
        key,
        missing,
        problems,
        state_dir,
        session,
        instructions,
        mcp,
        started,
        skills,
        agents,
        sandbox,
        language_servers: crate::intel::servers::spec::discover(),
    }
}

/// The start of each language server a session would start in `root`, with the rights its servers would
/// have (`sandbox`, else the trust given before), at once, within `check::WAIT`.
fn started(
    root: &Path,
    sandbox: crate::sandbox::SandboxSettings,
    mode: crate::intel::DiagnosticsMode,
) -> Vec<(String, Start)> {
    let (used, _) = crate::intel::servers::used(root);
    let names = used.iter().map(|s| s.name.clone());
    if used.is_empty() {
        return Vec::new();
    }
    if mode == crate::intel::DiagnosticsMode::Off {
        return names.map(|n| (n, Start::NotTried("not started: the diagnostics setting is off".into()))).collect();
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let starts = match runtime {
        Ok(rt) => {
            let rights = crate::workspace::intel::unasked_rights(root, sandbox, Default::default());
            rt.block_on(check::starts(root, &used, &rights, check::WAIT))
        }
        Err(e) => used.iter().map(|_| Start::NotTried(format!("not started: no runtime: {e}"))).collect(),
    };
    names.zip(starts).collect()
}

impl Report {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    pub fn json(&self) -> Value {
        let mut key = self.key.json();
        key["set"] = json!(self.key.source != Source::Unset);
        if let Some(o) = key.as_object_mut() {
            o.remove("value");
        }
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "workspace": self.workspace,
            "envFiles": self.env_files,
            "provider": self.provider.json(),
            "model": self.model.json(),
            "baseUrl": self.base_url.json(),
            "apiKey": key,
            "stateDir": self.state_dir,
            "session": self.session,
            "missing": self.missing,
            "problems": self.problems,
            "instructions": self.instructions.files.iter().map(|f| json!({
                "path": f.path, "scope": f.scope, "bytes": f.bytes, "used": f.used,
                "cut": (f.used as u64) < f.bytes && f.error.is_none(), "error": f.error,
            })).collect::<Vec<_>>(),
            "mcpServers": self.mcp.servers,
            "mcpProblems": self.mcp.problems,
            "skills": super::doctor_loads::skills_json(&self.skills),
            "skillsHidden": super::doctor_loads::hidden_json(&self.skills),
            "skillProblems": super::doctor_loads::skill_problems_json(&self.skills),
            "agents": super::doctor_loads::agents_json(&self.agents),
            "sandbox": self.sandbox_json(),
            "languageServers": self.language_servers.0.iter().map(|s| self.server_json(s)).collect::<Vec<_>>(),
            "languageServerProblems": self.language_servers.1,
            "ok": self.ok(),
        })
    }

    /// `{"name", "command", "extensions", "from"}`; where the servers were started, `"used"` (a file of the
    /// workspace is its) and for one used `"starts"` (`true`, `false`, or `null` when it was not started),
    /// `"reason"` (why not: how it ended and its own words) and `"fix"` (what usually fixes it, where known).
    fn server_json(&self, s: &crate::intel::servers::spec::Spec) -> Value {
        let mut v =
            json!({"name": s.name, "command": s.command, "extensions": s.extensions, "from": s.origin.describe()});
        let Some(started) = &self.started else { return v };
        let start = started.iter().find(|(n, _)| *n == s.name).map(|(_, start)| start);
        v["used"] = json!(start.is_some());
        match start {
            Some(Start::Starts) => v["starts"] = json!(true),
            Some(Start::Fails(not)) => {
                v["starts"] = json!(false);
                v["reason"] = json!(not.said());
                v["fix"] = json!(not.fix);
            }
            Some(Start::NotTried(why)) => {
                v["starts"] = Value::Null;
                v["reason"] = json!(why);
            }
            None => {}
        }
        v
    }

    /// The lines under a server's in the text: how its start went.
    fn server_lines(&self, name: &str) -> Vec<String> {
        let Some(started) = &self.started else { return Vec::new() };
        match started.iter().find(|(n, _)| n == name).map(|(_, start)| start) {
            None => vec!["  not used: no file of this workspace is its".into()],
            Some(Start::Starts) => vec!["  starts (it answered initialize)".into()],
            Some(Start::Fails(not)) => {
                let mut lines = vec![format!("  does not start: {}", not.said())];
                lines.extend(not.fix.as_ref().map(|f| format!("  usually fixed by: {f}")));
                lines
            }
            Some(Start::NotTried(why)) => vec![format!("  {why}")],
        }
    }

    /// `{"mode", "network", "available", "by"}`, or with `"reason"` in place of `"by"` where it cannot start;
    /// with the network off, `"networkFence"` (a private network namespace, or Landlock's TCP rules and why);
    /// `"writable"`: the `sandboxWritable` folders, when there are any.
    fn sandbox_json(&self) -> Value {
        let s = &self.sandbox;
        let mut v = json!({"mode": s.mode.name(), "network": if s.network { "on" } else { "off" }});
        if !s.writable.0.is_empty() {
            v["writable"] = json!(s.writable.0);
        }
        if s.mode != crate::sandbox::SandboxMode::Off {
            match crate::sandbox::availability(s.network) {
                Ok(by) => {
                    v["available"] = json!(true);
                    v["by"] = json!(by);
                    if !s.network {
                        v["networkFence"] = json!(crate::sandbox::network_isolation());
                    }
                }
                Err(why) => {
                    v["available"] = json!(false);
                    v["reason"] = json!(why);
                }
            }
        }
        v
    }

    pub fn text(&self) -> String {
        let mut out = format!("stepwise {}\n", env!("CARGO_PKG_VERSION"));
        let mut line = |name: &str, value: String| out.push_str(&format!("{name:<11} {value}\n"));
        line("workspace", self.workspace.display().to_string());
        let files: Vec<String> = self.env_files.iter().map(|f| f.display().to_string()).collect();
        line(".env files", if files.is_empty() { "none".into() } else { files.join(", ") });
        for (name, item) in [("provider", &self.provider), ("model", &self.model), ("base URL", &self.base_url)] {
            let value = match &item.value {
                Some(v) => format!("{v} ({})", item.source.text()),
                None => format!("missing: set {}", item.var),
            };
            line(name, value);
        }
        let key = match &self.key.source {
            Source::Unset => format!("{} is not set", self.key.var),
            s => format!("{} is set ({})", self.key.var, s.text()),
        };
        line("API key", key);
        line(
            "state dir",
            self.state_dir.as_ref().map_or("none (set STEPWISE_STATE_DIR or HOME)".into(), |d| d.display().to_string()),
        );
        line("session", self.session.as_ref().map_or("none saved".into(), |f| f.display().to_string()));
        let files: Vec<String> = self
            .instructions
            .files
            .iter()
            .map(|f| match &f.error {
                Some(e) => format!("{} (unreadable: {e})", f.path.display()),
                None if (f.used as u64) < f.bytes => {
                    format!("{} ({} of {} bytes: cut at 32 KiB)", f.path.display(), f.used, f.bytes)
                }
                None => format!("{} ({} bytes)", f.path.display(), f.bytes),
            })
            .collect();
        line("instructions", if files.is_empty() { "none (AGENTS.md or CLAUDE.md)".into() } else { files.join(", ") });
        if self.mcp.servers.is_empty() {
            line("MCP servers", "none".into());
        }
        for (i, s) in self.mcp.servers.iter().enumerate() {
            line(if i == 0 { "MCP servers" } else { "" }, crate::mcp::report::line(s));
        }
        for p in &self.mcp.problems {
            line("MCP problem", p.clone());
        }
        super::doctor_loads::skills_text(&self.skills, &mut line);
        super::doctor_loads::agents_text(&self.agents, &mut line);
        let (servers, problems) = &self.language_servers;
        if servers.is_empty() {
            line(
                "language servers",
                "none found (on PATH, or in language-servers.json): no code-intelligence tools".into(),
            );
        }
        for (i, s) in servers.iter().enumerate() {
            let value = format!(
                "{} (.{}): {} [{}]",
                s.name,
                s.extensions.join(", ."),
                s.command.join(" "),
                s.origin.describe()
            );
            line(if i == 0 { "language servers" } else { "" }, value);
            for l in self.server_lines(&s.name) {
                line("", l);
            }
        }
        for p in problems {
            line("language server problem", p.clone());
        }
        line("sandbox", self.sandbox.describe());
        let s = &self.sandbox;
        if s.mode != crate::sandbox::SandboxMode::Off && !s.network && crate::sandbox::availability(false).is_ok() {
            line("network", crate::sandbox::network_isolation());
        }
        if !s.writable.0.is_empty() {
            let dirs: Vec<String> = s.writable.0.iter().map(|p| p.display().to_string()).collect();
            line("writable", dirs.join(":"));
        }
        if self.ok() {
            out.push_str("\nready: a run can reach the model\n");
        } else {
            out.push_str("\nproblems:\n");
            for p in &self.problems {
                out.push_str(&format!("  - {p}\n"));
            }
        }
        out
    }
}

/// `stepwise doctor`: the report on `workspace` (text, or JSON for editors) with the editor's `settings`
/// (the JSON of initializationOptions), its language servers started unless `no_servers`. Exit 0 when a run
/// could start (a language server that does not start does not keep a run from starting), 1 when something is
/// missing, 2 on bad input.
pub fn run(workspace: &Path, settings: Option<&str>, as_json: bool, no_servers: bool) -> i32 {
    let overrides: Overrides = match settings.map(serde_json::from_str).transpose() {
        Ok(o) => o.unwrap_or_default(),
        Err(e) => {
            eprintln!("stepwise doctor: --settings is not a settings object: {e}");
            return 2;
        }
    };
    if !workspace.is_dir() {
        eprintln!("stepwise doctor: workspace {} is not a folder", workspace.display());
        return 2;
    }
    let [ws, cwd] = config::dotenv_dirs(workspace);
    let r = report(workspace, &[&ws, &cwd], &overrides, !no_servers);
    if as_json {
        println!("{}", r.json());
    } else {
        print!("{}", r.text());
    }
    if r.ok() {
        0
    } else {
        1
    }
}
