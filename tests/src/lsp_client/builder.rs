//! Configures and starts a [`TestEditor`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::binary::*;
use super::editor::*;
use super::framing::*;
use super::policy::*;
use super::positions::*;
use super::state::*;
use super::{ensure_test_key, DEFAULT_TIMEOUT, TEST_KEY, TEST_KEY_ENV};
use crate::mock::MockModel;

pub(crate) enum Transport {
    InMemory,
    Binary { path: PathBuf, args: Vec<String> },
}

/// Configures and starts a [`TestEditor`].
pub struct EditorBuilder {
    preset: ClientPreset,
    capabilities: Value,
    folders: Vec<PathBuf>,
    root_uri_only: bool,
    init_options: Map<String, Value>,
    settings: Value,
    policies: HashMap<String, Policy>,
    ignored: HashSet<String>,
    transport: Transport,
    state_dir: Option<PathBuf>,
    env: Vec<(String, String)>,
    mock_env: bool,
    open_on_edit: bool,
    change_before_reply: bool,
    report_edits: Report,
    timeout: Duration,
}

impl EditorBuilder {
    pub fn new(preset: ClientPreset) -> EditorBuilder {
        EditorBuilder {
            preset,
            capabilities: preset.capabilities(),
            folders: Vec::new(),
            root_uri_only: false,
            // The sandbox is on by default in stepwise; the tests written for commands that ask (and
            // for their output unchanged) run without it, those of the sandbox turn it on. Code
            // intelligence is off likewise: without the sandbox, a language server on the machine's
            // PATH serving a test's file (rustup's rust-analyzer proxy for a `.rs`) would ask whether
            // to trust the folder, and hold the round for the answer; the tests of code intelligence
            // turn it on (`diagnostics`).
            init_options: [("sandbox".to_string(), json!("off")), ("diagnostics".to_string(), json!("off"))]
                .into_iter()
                .collect(),
            settings: Value::Null,
            policies: preset.default_policies(),
            // Plan changes and reminders are mirrored as log lines for plain clients (lsp_plain_clients.rs
            // reads them from the transcript); an editor keeps them in its log, unread.
            ignored: HashSet::from(["window/logMessage".to_string()]),
            transport: Transport::InMemory,
            state_dir: None,
            env: Vec::new(),
            mock_env: false,
            open_on_edit: true,
            change_before_reply: true,
            report_edits: Report::AtOnce,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// A workspace folder (several make a multi-root workspace; the first is "the first folder").
    pub fn folder(mut self, path: impl AsRef<Path>) -> Self {
        let p = path.as_ref();
        self.folders.push(std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()));
        self
    }

    /// Send the (single) folder as `rootUri` only, without `workspaceFolders`.
    pub fn root_uri_only(mut self) -> Self {
        self.root_uri_only = true;
        self
    }

    /// Point the server at a mock model through initializationOptions (and the environment, for the binary).
    pub fn mock(mut self, mock: &MockModel) -> Self {
        ensure_test_key();
        self.init_options.insert("provider".into(), json!("anthropic"));
        self.init_options.insert("model".into(), json!("mock-model"));
        self.init_options.insert("baseUrl".into(), json!(mock.url()));
        self.init_options.insert("apiKeyEnv".into(), json!(TEST_KEY_ENV));
        // Tests compare conversations exactly; the cache breakpoints have their own tests (`.option` turns them on).
        self.init_options.insert("promptCache".into(), json!(false));
        self.env.push((TEST_KEY_ENV.into(), TEST_KEY.into()));
        self.env.push(("ANTHROPIC_BASE_URL".into(), mock.url()));
        self.env.push(("ANTHROPIC_API_KEY".into(), TEST_KEY.into()));
        self.env.push(("MODEL_ID".into(), "mock-model".into()));
        self
    }

    /// Point the binary at a mock model through its environment only (no initializationOptions).
    pub fn mock_env_only(mut self, mock: &MockModel) -> Self {
        self.env.push(("ANTHROPIC_BASE_URL".into(), mock.url()));
        self.env.push(("ANTHROPIC_API_KEY".into(), TEST_KEY.into()));
        self.env.push(("MODEL_ID".into(), "mock-model".into()));
        self.mock_env = true;
        self
    }

    /// One initializationOptions key.
    pub fn option(mut self, key: &str, value: Value) -> Self {
        self.init_options.insert(key.into(), value);
        self
    }

    /// Removes an initializationOptions key (e.g. `model`, to test a missing model).
    pub fn without_option(mut self, key: &str) -> Self {
        self.init_options.remove(key);
        self
    }

    /// What the editor answers to `workspace/configuration` (per item).
    pub fn settings(mut self, settings: Value) -> Self {
        self.settings = settings;
        self
    }

    /// Where the server saves sessions (`initializationOptions.stateDir`; `STEPWISE_STATE_DIR` for the binary).
    pub fn state_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.state_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Changes the declared capabilities.
    pub fn capabilities(mut self, f: impl FnOnce(&mut Value)) -> Self {
        f(&mut self.capabilities);
        self
    }

    pub fn policy(mut self, method: &str, policy: Policy) -> Self {
        self.policies.insert(method.into(), policy);
        self
    }

    /// Methods whose notifications (or queued requests) may go unread.
    pub fn ignore(mut self, methods: &[&str]) -> Self {
        self.ignored.extend(methods.iter().map(|m| m.to_string()));
        self
    }

    /// Serve over the real binary's stdio instead of in memory.
    pub fn binary(mut self) -> Self {
        self.transport = Transport::Binary { path: stepwise_binary(false), args: vec!["lsp".into()] };
        self
    }

    /// Serve over a given binary with given arguments.
    pub fn binary_at(mut self, path: impl AsRef<Path>, args: &[&str]) -> Self {
        self.transport =
            Transport::Binary { path: path.as_ref().to_path_buf(), args: args.iter().map(|a| a.to_string()).collect() };
        self
    }

    /// An extra environment variable for the binary.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn open_on_edit(mut self, yes: bool) -> Self {
        self.open_on_edit = yes;
        self
    }

    /// Whether `didChange` goes out before the applyEdit answer (default) or after it.
    /// When the editor reports the edits it applies (`didChange`).
    pub fn report_edits(mut self, report: Report) -> Self {
        self.report_edits = report;
        self
    }

    pub fn change_before_reply(mut self, yes: bool) -> Self {
        self.change_before_reply = yes;
        self
    }

    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Connects, then `initialize` and `initialized`.
    pub async fn start(self) -> TestEditor {
        let mut editor = self.connect().await;
        editor.initialize().await.unwrap_or_else(|e| panic!("initialize failed: {e}"));
        editor
    }

    /// Connects without initializing.
    pub async fn connect(self) -> TestEditor {
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            out: out_tx,
            state: Mutex::new(State::default()),
            changed: watch::Sender::new(0),
            docs: Mutex::new(BTreeMap::new()),
            policies: Mutex::new(self.policies),
            ignored: Mutex::new(self.ignored),
            encoding: Mutex::new(PosEncoding::Utf16),
            settings: Mutex::new(self.settings),
            next_id: AtomicI64::new(1),
            open_on_edit: AtomicBool::new(self.open_on_edit),
            change_before_reply: AtomicBool::new(self.change_before_reply),
            report_edits: Mutex::new(self.report_edits),
            late_reports: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        });
        let mut init_options = self.init_options;
        let (server, pid) = match &self.transport {
            Transport::InMemory => {
                if let Some(d) = &self.state_dir {
                    init_options.insert("stateDir".into(), json!(d));
                }
                let (client_io, server_io) = tokio::io::duplex(1 << 16);
                let (server_r, server_w) = tokio::io::split(server_io);
                let task = tokio::spawn(stepwise::lsp::serve(server_r, server_w));
                let (client_r, client_w) = tokio::io::split(client_io);
                tokio::spawn(read_loop(inner.clone(), client_r));
                tokio::spawn(write_loop(client_w, out_rx));
                (ServerProc::Task(Some(task)), None)
            }
            Transport::Binary { path, args } => {
                let mut cmd = tokio::process::Command::new(path);
                cmd.args(args);
                for (k, _) in std::env::vars_os() {
                    let k = k.to_string_lossy().into_owned();
                    if k.starts_with("STEPWISE_")
                        || k.starts_with("ANTHROPIC_")
                        || k.starts_with("OPENAI_")
                        || k == "MODEL_ID"
                    {
                        cmd.env_remove(&k);
                    }
                }
                if self.mock_env {
                    for k in ["provider", "model", "baseUrl", "apiKeyEnv"] {
                        init_options.remove(k);
                    }
                }
                for (k, v) in &self.env {
                    cmd.env(k, v);
                }
                if let Some(d) = &self.state_dir {
                    cmd.env("STEPWISE_STATE_DIR", d);
                    cmd.current_dir(d);
                } else if let Some(f) = self.folders.first() {
                    cmd.current_dir(f);
                }
                cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
                let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
                let pid = child.id();
                let stdin = child.stdin.take().unwrap();
                let stdout = child.stdout.take().unwrap();
                let mut stderr = child.stderr.take().unwrap();
                let log = Arc::new(Mutex::new(Vec::new()));
                let sink = log.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 8192];
                    while let Ok(n) = stderr.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        lock(&sink).extend_from_slice(&buf[..n]);
                    }
                });
                tokio::spawn(read_loop(inner.clone(), stdout));
                tokio::spawn(write_loop(stdin, out_rx));
                (ServerProc::Child { child, stderr: log }, pid)
            }
        };
        let folders = self.folders.iter().map(|p| (p.clone(), file_uri(p))).collect();
        TestEditor {
            inner,
            server,
            pid,
            folders,
            capabilities: self.capabilities,
            root_uri_only: self.root_uri_only,
            init_options: Value::Object(init_options),
            init_result: Value::Null,
            timeout: self.timeout,
            finished: false,
            _preset: self.preset,
        }
    }
}

pub(crate) enum ServerProc {
    Task(Option<JoinHandle<()>>),
    Child { child: tokio::process::Child, stderr: Arc<Mutex<Vec<u8>>> },
}
