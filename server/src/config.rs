//! Configuration from the environment and `.env` files (docs/configuration.md, docs/protocol.md "Configuration"), with overrides from editors.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::AgentConfig;
use crate::llm::{ProviderConfig, ProviderKind};
use crate::plan::PlanningStyle;

/// Environment variables, with `.env` values filling in what the real environment lacks; remembers
/// which `.env` file each of those came from.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: HashMap<String, String>,
    files: HashMap<String, PathBuf>,
}

/// The most of a `.env` file read (a FIFO or device in its place is not read at all: `text_file`).
const MAX_DOTENV: u64 = 1 << 20;

impl Env {
    /// The process environment plus `.env` from `dirs` (earlier directories win).
    pub fn load(dirs: &[&Path]) -> Env {
        let mut env = Env { vars: std::env::vars().collect(), files: HashMap::new() };
        for dir in dirs {
            let path = dir.join(".env");
            if let Ok(text) = crate::text_file::read_string(&path, MAX_DOTENV) {
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                env.add_file(&path, &text);
            }
        }
        env
    }

    /// The process environment plus `.env` from the workspace, then from the current directory: what
    /// `run`, `chat`, the sidecar and the ACP agent read.
    pub fn for_workspace(workspace: &Path) -> Env {
        let [ws, cwd] = dotenv_dirs(workspace);
        Env::load(&[&ws, &cwd])
    }

    /// Adds a `.env` file's values that are not set yet.
    pub fn add_file(&mut self, path: &Path, text: &str) {
        for (k, v) in parse_dotenv(text) {
            if !self.vars.contains_key(&k) {
                self.files.insert(k.clone(), path.to_path_buf());
                self.vars.insert(k, v);
            }
        }
    }

    pub fn from_map(vars: HashMap<String, String>) -> Env {
        Env { vars, files: HashMap::new() }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str).filter(|v| !v.trim().is_empty())
    }

    /// The `.env` file a value came from; `None` for the process environment.
    pub fn file_of(&self, key: &str) -> Option<&Path> {
        self.files.get(key).map(PathBuf::as_path)
    }
}

/// A base URL from a `.env` file that would receive an API key from elsewhere: the key is not sent there
/// until the user approves the endpoint (see `trust`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignEndpoint {
    pub var: &'static str,
    pub url: String,
    pub file: PathBuf,
    pub key_var: String,
}

impl ForeignEndpoint {
    pub fn message(&self) -> String {
        format!(
            "{} in {} points the API key ({}, set elsewhere) at {}; stepwise only uses a base URL from a .env file with a key from the same file. Put the key in that file, set {} yourself, or approve the endpoint once with `stepwise run` on a terminal.",
            self.var,
            self.file.display(),
            self.key_var,
            self.url,
            self.var
        )
    }
}

/// `KEY=value` lines; `export` prefixes, comments and quotes as shells and dotenv tools write them.
pub fn parse_dotenv(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else { continue };
        let key = k.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let v = v.trim();
        let value = if v.len() >= 2
            && ((v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')))
        {
            v[1..v.len() - 1].to_string()
        } else {
            // Unquoted values end at an inline comment.
            v.split(" #").next().unwrap_or("").trim().to_string()
        };
        out.push((key.to_string(), value));
    }
    out
}

/// Settings an editor may send (LSP initializationOptions / workspace configuration).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Overrides {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub approval: Option<crate::host::ApprovalMode>,
    pub reminder_rounds: Option<u32>,
    pub max_rounds: Option<u32>,
    pub planning_style: Option<String>,
    pub bash_timeout_secs: Option<u64>,
    pub request_timeout_secs: Option<u64>,
    pub approval_timeout_secs: Option<u64>,
    pub max_tokens: Option<u32>,
    pub model_timeout_secs: Option<u64>,
    pub context_window: Option<u64>,
    pub compact_threshold: Option<u32>,
    pub prompt_cache: Option<bool>,
    pub mcp_servers: Option<crate::mcp::config::Setting>,
    pub sandbox: Option<crate::sandbox::SandboxMode>,
    pub sandbox_network: Option<crate::sandbox::NetworkSetting>,
    /// Folders sandboxed commands may write (`STEPWISE_SANDBOX_WRITABLE`, `:`-separated).
    pub sandbox_writable: Option<Vec<std::path::PathBuf>>,
    /// Every run plans first (`STEPWISE_PLAN_FIRST`).
    pub plan_first: Option<bool>,
    /// Code intelligence: `auto`, `tool` or `off` (`STEPWISE_DIAGNOSTICS`).
    pub diagnostics: Option<crate::intel::DiagnosticsMode>,
}

impl Overrides {
    /// `other`'s keys win over ours.
    pub fn merged(&self, other: &Overrides) -> Overrides {
        macro_rules! pick {
            ($($f:ident),*) => { Overrides { $($f: other.$f.clone().or_else(|| self.$f.clone()),)* } };
        }
        pick!(
            provider,
            model,
            base_url,
            api_key_env,
            approval,
            reminder_rounds,
            max_rounds,
            planning_style,
            bash_timeout_secs,
            request_timeout_secs,
            approval_timeout_secs,
            max_tokens,
            model_timeout_secs,
            context_window,
            compact_threshold,
            prompt_cache,
            mcp_servers,
            sandbox,
            sandbox_network,
            sandbox_writable,
            plan_first,
            diagnostics
        )
    }
}

/// A provider's variables: its API key, its base URL, and the base URL used when none is set.
pub struct ProviderVars {
    pub key_var: &'static str,
    pub base_var: &'static str,
    pub default_base: &'static str,
}

impl ProviderVars {
    pub fn of(kind: ProviderKind) -> ProviderVars {
        match kind {
            ProviderKind::Anthropic => ProviderVars {
                key_var: "ANTHROPIC_API_KEY",
                base_var: "ANTHROPIC_BASE_URL",
                default_base: "https://api.anthropic.com",
            },
            ProviderKind::Openai => ProviderVars {
                key_var: "OPENAI_API_KEY",
                base_var: "OPENAI_BASE_URL",
                default_base: "https://api.openai.com/v1",
            },
        }
    }
}

/// Where `.env` files are read, first wins: the workspace, then the current directory.
pub fn dotenv_dirs(workspace: &Path) -> [PathBuf; 2] {
    let cwd = std::env::current_dir().unwrap_or_else(|_| workspace.to_path_buf());
    [workspace.to_path_buf(), cwd]
}

/// The model endpoint, or the reason it cannot be used (reported before any request is made; a run
/// gets its model through `Workspace::prepare_run`).
pub fn provider(env: &Env, o: &Overrides) -> Result<ProviderConfig, String> {
    let kind_name = o.provider.clone().or_else(|| env.get("STEPWISE_PROVIDER").map(str::to_string));
    let kind = match kind_name {
        None => ProviderKind::Anthropic,
        Some(k) => ProviderKind::parse(&k)
            .ok_or_else(|| format!("unknown provider '{k}': STEPWISE_PROVIDER must be 'anthropic' or 'openai'"))?,
    };
    let model = o
        .model
        .clone()
        .filter(|m| !m.trim().is_empty())
        .or_else(|| env.get("MODEL_ID").map(str::to_string))
        .ok_or("no model configured: set MODEL_ID (in the environment or a .env file)")?;
    let ProviderVars { key_var, base_var, default_base } = ProviderVars::of(kind);
    let key_var = o.api_key_env.clone().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| key_var.to_string());
    let base_url = o
        .base_url
        .clone()
        .filter(|b| !b.trim().is_empty())
        .or_else(|| env.get(base_var).map(str::to_string))
        .unwrap_or_else(|| default_base.to_string());
    let base_is_local =
        base_url.contains("://127.") || base_url.contains("://localhost") || base_url.contains("://[::1]");
    let api_key = match env.get(&key_var) {
        Some(k) => k.to_string(),
        // Local OpenAI-compatible servers (Ollama, llama.cpp) need no key.
        None if kind == ProviderKind::Openai && base_is_local => String::new(),
        None => return Err(format!("no API key: set {key_var} (in the environment or a .env file)")),
    };
    if let Some(foreign) = foreign_endpoint(env, o) {
        if !crate::trust::is_trusted(&foreign.file, &foreign.url) {
            return Err(foreign.message());
        }
    }
    // How long the model may stay silent; editor request timeouts are a separate setting.
    let timeout = match o.model_timeout_secs {
        Some(s) => s,
        None => number(env, "STEPWISE_MODEL_TIMEOUT", 300u64)?,
    };
    let max_tokens = match o.max_tokens {
        Some(n) => n,
        None => number(env, "STEPWISE_MAX_TOKENS", 8000u32)?,
    };
    // 0: not configured (the server is asked, else the provider's default; see `Llm::new`).
    let context_window = match o.context_window {
        Some(n) => n.max(1),
        None => number(env, "STEPWISE_CONTEXT_WINDOW", 0u64)?,
    };
    let prompt_cache = match o.prompt_cache {
        Some(on) => on,
        None => match env.get("STEPWISE_PROMPT_CACHE").map(|v| v.trim().to_ascii_lowercase()) {
            None => true,
            Some(v) if v == "on" || v == "true" || v == "1" => true,
            Some(v) if v == "off" || v == "false" || v == "0" => false,
            Some(v) => return Err(format!("STEPWISE_PROMPT_CACHE must be 'on' or 'off', not '{v}'")),
        },
    };
    Ok(ProviderConfig {
        context_window,
        prompt_cache,
        kind,
        model,
        base_url,
        api_key,
        max_tokens: max_tokens.max(1),
        timeout: Duration::from_secs(timeout.max(1)),
        max_retries: number(env, "STEPWISE_MAX_RETRIES", 4u32)?,
        backoff: Duration::from_millis(number(env, "STEPWISE_RETRY_BASE_MS", 1000u64)?),
    })
}

/// The endpoint a `.env` file sets when the key it would receive comes from elsewhere (the process
/// environment or another file). Editor settings and the environment are the user's own: never foreign.
pub fn foreign_endpoint(env: &Env, o: &Overrides) -> Option<ForeignEndpoint> {
    if o.base_url.as_deref().is_some_and(|b| !b.trim().is_empty()) {
        return None;
    }
    let kind = o
        .provider
        .as_deref()
        .or_else(|| env.get("STEPWISE_PROVIDER"))
        .and_then(ProviderKind::parse)
        .unwrap_or(ProviderKind::Anthropic);
    let ProviderVars { key_var, base_var: var, .. } = ProviderVars::of(kind);
    let key_var = o.api_key_env.clone().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| key_var.to_string());
    let url = env.get(var)?.to_string();
    let file = env.file_of(var)?;
    // No key, nothing to steal; a key from the same file was put there together with its URL.
    if env.get(&key_var).is_none() || env.file_of(&key_var) == Some(file) {
        return None;
    }
    Some(ForeignEndpoint { var, url, file: file.to_path_buf(), key_var })
}

/// A whole-number variable, its default when unset; a value that is not a number is an error naming it.
fn number<T: std::str::FromStr>(env: &Env, var: &str, default: T) -> Result<T, String> {
    match env.get(var) {
        None => Ok(default),
        Some(s) => s.trim().parse().map_err(|_| format!("{var} must be a whole number, got '{s}'")),
    }
}

pub fn agent(env: &Env, o: &Overrides) -> Result<AgentConfig, String> {
    let num = |ov: Option<u32>, var: &str, default: u32| -> Result<u32, String> {
        match ov {
            Some(v) => Ok(v),
            None => number(env, var, default),
        }
    };
    let planning = match o.planning_style.clone().or_else(|| env.get("STEPWISE_PLANNING").map(str::to_string)) {
        None => PlanningStyle::Todo,
        Some(s) => {
            PlanningStyle::parse(&s).ok_or_else(|| format!("unknown planning style '{s}': use 'todo' or 'tasks'"))?
        }
    };
    let bash = match o.bash_timeout_secs {
        Some(s) => s,
        None => num(None, "STEPWISE_BASH_TIMEOUT", 120)? as u64,
    };
    let compact_at_percent = num(o.compact_threshold, "STEPWISE_COMPACT_THRESHOLD", 85)?;
    if !(10..=100).contains(&compact_at_percent) {
        return Err(format!(
            "STEPWISE_COMPACT_THRESHOLD must be a percentage from 10 to 100, got {compact_at_percent}"
        ));
    }
    let plan_first = match o.plan_first {
        Some(on) => on,
        None => match env.get("STEPWISE_PLAN_FIRST").map(|s| s.trim().to_ascii_lowercase()) {
            None => false,
            Some(s) => match s.as_str() {
                "1" | "true" | "on" | "yes" => true,
                "0" | "false" | "off" | "no" | "" => false,
                _ => return Err(format!("STEPWISE_PLAN_FIRST must be 1 or 0, got '{s}'")),
            },
        },
    };
    let diagnostics = match (o.diagnostics, env.get("STEPWISE_DIAGNOSTICS")) {
        (Some(m), _) => m,
        (None, None) => crate::intel::DiagnosticsMode::Auto,
        (None, Some(v)) => crate::intel::DiagnosticsMode::parse(v)
            .ok_or_else(|| format!("STEPWISE_DIAGNOSTICS must be auto, tool or off, got '{v}'"))?,
    };
    let max_wait =
        match env.get("STEPWISE_DIAGNOSTICS_WAIT_MS") {
            None => None,
            Some(v) => Some(Duration::from_millis(v.trim().parse().map_err(|_| {
                format!("STEPWISE_DIAGNOSTICS_WAIT_MS must be a whole number of milliseconds, got '{v}'")
            })?)),
        };
    Ok(AgentConfig {
        intel: crate::intel::Setup { mode: diagnostics, servers: None, max_wait },
        mode: if plan_first { crate::plan::Mode::Plan } else { crate::plan::Mode::Default },
        compact_at_percent,
        reminder_rounds: num(o.reminder_rounds, "STEPWISE_REMINDER_ROUNDS", 3)?.max(1),
        max_rounds: num(o.max_rounds, "STEPWISE_MAX_ROUNDS", 50)?.max(1),
        planning,
        bash_timeout: Duration::from_secs(bash.max(1)),
        mcp: crate::mcp::McpConfig::read(|var, default| number(env, var, default))?,
        sandbox: sandbox(env, o)?,
        ahead: Default::default(),
    })
}

/// The `sandbox`, `sandboxNetwork` and `sandboxWritable` settings (editor settings win over
/// `STEPWISE_SANDBOX`, `STEPWISE_SANDBOX_NETWORK` and `STEPWISE_SANDBOX_WRITABLE`); an invalid one is reported by name.
pub fn sandbox(env: &Env, o: &Overrides) -> Result<crate::sandbox::SandboxSettings, String> {
    use crate::sandbox::{NetworkSetting, SandboxMode, Writable};
    let mode = match (o.sandbox, env.get("STEPWISE_SANDBOX")) {
        (Some(m), _) => m,
        (None, None) => SandboxMode::WorkspaceWrite,
        (None, Some(v)) => SandboxMode::parse(v)
            .ok_or_else(|| format!("STEPWISE_SANDBOX must be 'workspace-write', 'read-only' or 'off', got '{v}'"))?,
    };
    let network = match (o.sandbox_network, env.get("STEPWISE_SANDBOX_NETWORK")) {
        (Some(n), _) => n.0,
        (None, None) => false,
        (None, Some(v)) => NetworkSetting::parse(v)
            .ok_or_else(|| format!("STEPWISE_SANDBOX_NETWORK must be 'off' or 'on', got '{v}'"))?,
    };
    let writable = match (&o.sandbox_writable, env.get("STEPWISE_SANDBOX_WRITABLE")) {
        (Some(list), _) => Writable::check(list.clone())?,
        (None, None) => Writable::NONE,
        (None, Some(v)) => Writable::parse(v).map_err(|e| format!("STEPWISE_SANDBOX_WRITABLE: {e}"))?,
    };
    Ok(crate::sandbox::SandboxSettings { mode, network, writable })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env::from_map(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn sandbox_settings_default_on_and_bad_ones_are_named() {
        use crate::sandbox::SandboxMode;
        let s = sandbox(&env(&[]), &Overrides::default()).unwrap();
        assert_eq!((s.mode, s.network), (SandboxMode::WorkspaceWrite, false));
        let s =
            sandbox(&env(&[("STEPWISE_SANDBOX", "Off"), ("STEPWISE_SANDBOX_NETWORK", "on")]), &Overrides::default());
        assert_eq!(s.map(|s| (s.mode, s.network)), Ok((SandboxMode::Off, true)));
        let e = sandbox(&env(&[("STEPWISE_SANDBOX", "strict")]), &Overrides::default()).unwrap_err();
        assert!(e.starts_with("STEPWISE_SANDBOX must be") && e.contains("'strict'"), "{e}");
        let e = sandbox(&env(&[("STEPWISE_SANDBOX_NETWORK", "maybe")]), &Overrides::default()).unwrap_err();
        assert!(e.starts_with("STEPWISE_SANDBOX_NETWORK must be"), "{e}");
        // The editor's setting wins over the variable.
        let o: Overrides =
            serde_json::from_value(serde_json::json!({"sandbox": "read-only", "sandboxNetwork": true})).unwrap();
        let s = sandbox(&env(&[("STEPWISE_SANDBOX", "off")]), &o).unwrap();
        assert_eq!((s.mode, s.network), (SandboxMode::ReadOnly, true));
    }

    #[test]
    fn sandbox_writable_folders_from_the_variable_or_the_editor() {
        use std::path::PathBuf;
        let s = sandbox(&env(&[("STEPWISE_SANDBOX_WRITABLE", "/a/b::/c")]), &Overrides::default()).unwrap();
        assert_eq!(s.writable.0, [PathBuf::from("/a/b"), PathBuf::from("/c")]);
        let e = sandbox(&env(&[("STEPWISE_SANDBOX_WRITABLE", "rel/x")]), &Overrides::default()).unwrap_err();
        assert!(e.contains("STEPWISE_SANDBOX_WRITABLE") && e.contains("'rel/x' is not an absolute path"), "{e}");
        let o: Overrides = serde_json::from_value(serde_json::json!({"sandboxWritable": ["/x"]})).unwrap();
        let s = sandbox(&env(&[("STEPWISE_SANDBOX_WRITABLE", "/a")]), &o).unwrap();
        assert_eq!(s.writable.0, [PathBuf::from("/x")], "the editor's setting wins");
        assert_eq!(sandbox(&env(&[]), &Overrides::default()).unwrap().writable.0, [] as [PathBuf; 0]);
    }

    #[test]
    fn dotenv_parsing() {
        let v = parse_dotenv("# c\nexport A=1\nB = \"two words\"\nC='x' \nD=plain # note\nbad line\n");
        assert_eq!(
            v,
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "two words".into()),
                ("C".into(), "x".into()),
                ("D".into(), "plain".into())
            ]
        );
    }

    #[test]
    fn missing_model_and_key_are_clear() {
        let e = provider(&env(&[]), &Overrides::default()).unwrap_err();
        assert!(e.contains("MODEL_ID"), "{e}");
        let e = provider(&env(&[("MODEL_ID", "m")]), &Overrides::default()).unwrap_err();
        assert!(e.contains("ANTHROPIC_API_KEY"), "{e}");
        let p = provider(
            &env(&[("MODEL_ID", "m"), ("STEPWISE_PROVIDER", "openai"), ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(p.api_key, "");
        let o = Overrides { api_key_env: Some("MY_KEY".into()), model: Some("x".into()), ..Default::default() };
        assert_eq!(provider(&env(&[("MY_KEY", "k")]), &o).unwrap().api_key, "k");
        assert!(!format!("{:?}", provider(&env(&[("MY_KEY", "sekret")]), &o).unwrap()).contains("sekret"));
    }

    #[test]
    fn a_base_url_from_dotenv_needs_the_key_from_the_same_file() {
        let ws = std::env::temp_dir().join(format!("stepwise-trust-{}", std::process::id()));
        let state = ws.join("state");
        std::fs::create_dir_all(&state).unwrap();
        let dotenv = ws.join(".env");
        let url = "http://evil.example:8080";
        // The key comes from the environment, the URL from the workspace's .env: refused, naming the file.
        let mut env = env(&[("MODEL_ID", "m"), ("ANTHROPIC_API_KEY", "sk-user")]);
        env.add_file(&dotenv, &format!("ANTHROPIC_BASE_URL={url}\n"));
        let foreign = foreign_endpoint(&env, &Overrides::default()).expect("foreign");
        assert_eq!(
            (foreign.var, foreign.url.as_str(), foreign.file.as_path()),
            ("ANTHROPIC_BASE_URL", url, dotenv.as_path())
        );
        std::env::set_var("STEPWISE_STATE_DIR", &state);
        let e = provider(&env, &Overrides::default()).unwrap_err();
        assert!(e.contains(&dotenv.display().to_string()) && e.contains(url), "{e}");
        assert!(!e.contains("sk-user"), "the key is never shown");
        // Approved once: used from then on.
        crate::trust::remember(&dotenv, url).unwrap();
        assert_eq!(provider(&env, &Overrides::default()).unwrap().base_url, url);
        std::env::remove_var("STEPWISE_STATE_DIR");
        // Key and URL from the same file; an editor setting; no key at all: none of them is foreign.
        let mut same = Env::default();
        same.add_file(&dotenv, &format!("ANTHROPIC_BASE_URL={url}\nANTHROPIC_API_KEY=k\n"));
        assert_eq!(foreign_endpoint(&same, &Overrides::default()), None);
        let o = Overrides { base_url: Some("http://mine".into()), ..Default::default() };
        assert_eq!(foreign_endpoint(&env, &o), None);
        let mut keyless = Env::default();
        keyless.add_file(&dotenv, &format!("ANTHROPIC_BASE_URL={url}\n"));
        assert_eq!(foreign_endpoint(&keyless, &Overrides::default()), None);
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn prompt_cache_switch() {
        let base = [("MODEL_ID", "m"), ("ANTHROPIC_API_KEY", "k")];
        let with = |value: Option<&str>, o: Overrides| {
            let mut v = base.to_vec();
            v.extend(value.map(|x| ("STEPWISE_PROMPT_CACHE", x)));
            provider(&env(&v), &o)
        };
        assert!(with(None, Overrides::default()).unwrap().prompt_cache);
        assert!(!with(Some("off"), Overrides::default()).unwrap().prompt_cache);
        assert!(with(Some("on"), Overrides::default()).unwrap().prompt_cache);
        assert!(!with(Some("on"), Overrides { prompt_cache: Some(false), ..Default::default() }).unwrap().prompt_cache);
        let e = with(Some("maybe"), Overrides::default()).unwrap_err();
        assert!(e.contains("STEPWISE_PROMPT_CACHE"), "{e}");
    }

    #[test]
    fn numbers_are_read_and_bad_ones_named() {
        let base = [("MODEL_ID", "m"), ("ANTHROPIC_API_KEY", "k")];
        let with = |extra: (&str, &str)| {
            let mut v = base.to_vec();
            v.push(extra);
            provider(&env(&v), &Overrides::default())
        };
        assert_eq!(with(("STEPWISE_MAX_TOKENS", "123")).unwrap().max_tokens, 123);
        assert_eq!(with(("STEPWISE_MAX_RETRIES", "7")).unwrap().max_retries, 7);
        assert_eq!(with(("STEPWISE_RETRY_BASE_MS", "25")).unwrap().backoff, Duration::from_millis(25));
        assert_eq!(with(("STEPWISE_MODEL_TIMEOUT", "9")).unwrap().timeout, Duration::from_secs(9));
        for var in ["STEPWISE_MAX_TOKENS", "STEPWISE_MAX_RETRIES", "STEPWISE_RETRY_BASE_MS", "STEPWISE_MODEL_TIMEOUT"] {
            let e = with((var, "lots")).unwrap_err();
            assert_eq!(e, format!("{var} must be a whole number, got 'lots'"));
        }
        let o = Overrides { max_tokens: Some(5), model_timeout_secs: Some(2), ..Default::default() };
        let p = provider(&env(&base), &o).unwrap();
        assert_eq!((p.max_tokens, p.timeout), (5, Duration::from_secs(2)));
    }
}
