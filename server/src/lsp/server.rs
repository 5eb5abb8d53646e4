//! Protocol glue: LSP methods map onto folders, documents and runs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use dashmap::DashMap;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::documents::{normalize, Documents, Encoding};
use super::events::EditorEvents;
use super::folder::{lens_title, Folder, RunHandle};
use super::host::EditorHost;
use super::notify::{Notifier, Outgoing};
use super::state;
use crate::agent::{self, FinishReason, Session};
use crate::config::{self, ApprovalMode, Env, Overrides};
use crate::llm::Llm;

pub const COMMANDS: [&str; 5] =
    ["stepwise.run", "stepwise.cancel", "stepwise.reset", "stepwise.plan", "stepwise.compact"];

/// What a run does: a prompt for the agent, or compacting the conversation on demand.
pub enum Job {
    Prompt(String),
    Compact,
}

/// What the client said it can do, reduced to what the server asks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caps {
    pub apply_edit: bool,
    pub document_changes: bool,
    pub create_files: bool,
    pub work_done_progress: bool,
    pub configuration: bool,
    pub save_documents: bool,
}

pub struct Shared {
    pub client: Client,
    pub notifier: Notifier,
    pub docs: Documents,
    pub folders: DashMap<String, Arc<Folder>>,
    /// Folder URIs in the order the client gave them ("the first folder").
    order: RwLock<Vec<String>>,
    caps: RwLock<Caps>,
    init_settings: RwLock<Overrides>,
    refresh_lenses: Arc<AtomicBool>,
    /// Where sessions are saved: `initializationOptions.stateDir`, else the environment (state.rs).
    state_dir: RwLock<Option<PathBuf>>,
    runs: AtomicU64,
    /// What the server had to say before `initialized`: tower-lsp drops notifications sent before the
    /// `initialize` answer, so they wait here. `None` once initialized.
    early: std::sync::Mutex<Option<Vec<Outgoing>>>,
    /// Held (written) while a `workspace/configuration` request is out; a run reads it before taking its
    /// settings, so a run started right after `initialized` uses the folder's settings.
    config_pending: Arc<tokio::sync::RwLock<()>>,
}

impl Shared {
    pub fn caps(&self) -> Caps {
        self.caps.read().map(|c| *c).unwrap_or_default()
    }

    fn settings_for(&self, folder: &Folder) -> Overrides {
        let init = self.init_settings.read().map(|s| s.clone()).unwrap_or_default();
        let ws = folder.settings.read().map(|s| s.clone()).unwrap_or_default();
        init.merged(&ws)
    }

    /// The folder a command names, or the only / first one.
    fn folder(&self, uri: Option<&str>) -> Result<Arc<Folder>> {
        match uri {
            Some(u) => self
                .folders
                .get(u)
                .map(|f| f.clone())
                .or_else(|| {
                    // Clients differ in URI spelling (escaping, a trailing slash): compare paths too.
                    let path = u.parse::<Uri>().ok()?.to_file_path().map(|p| normalize(&p))?;
                    self.folders.iter().find(|f| f.root == path).map(|f| f.clone())
                })
                .ok_or_else(|| Error::invalid_params(format!("unknown workspace folder: {u}"))),
            None => {
                let first = self.order.read().ok().and_then(|o| o.first().cloned());
                first
                    .and_then(|u| self.folders.get(&u).map(|f| f.clone()))
                    .ok_or_else(|| Error::invalid_params("no workspace folder is open"))
            }
        }
    }

    /// The folder that holds a file: the deepest root containing it.
    fn folder_of(&self, path: &std::path::Path) -> Option<Arc<Folder>> {
        self.folders
            .iter()
            .filter(|f| path.starts_with(&f.root))
            .max_by_key(|f| f.root.as_os_str().len())
            .map(|f| f.clone())
    }

    fn add_folder(&self, uri: &Uri) -> Option<Arc<Folder>> {
        let key = uri.as_str().to_string();
        if let Some(f) = self.folders.get(&key) {
            return Some(f.clone());
        }
        let Some(path) = uri.to_file_path() else {
            tracing::warn!("ignoring workspace folder that is not a file URI: {key}");
            return None;
        };
        let root = match std::fs::canonicalize(&path) {
            Ok(r) => r,
            Err(e) => {
                self.tell(Outgoing::Message(
                    MessageType::WARNING,
                    format!("stepwise: cannot use workspace folder {}: {e}", path.display()),
                ));
                return None;
            }
        };
        let dir = self.state_dir.read().ok().and_then(|d| d.clone());
        let file = dir.as_ref().map(|d| state::file_for(d, &root));
        let session = match file.as_deref().map(state::load) {
            Some(state::Loaded::Restored(s)) => s,
            Some(state::Loaded::Corrupt { moved_to, error }) => {
                let where_ = moved_to
                    .map(|p| format!("it was moved to {}", p.display()))
                    .unwrap_or_else(|| "it could not be moved aside".into());
                self.tell(Outgoing::Message(
                    MessageType::WARNING,
                    format!("stepwise: the saved session for {} could not be read ({error}); {where_}. A new session was started.", root.display()),
                ));
                Session::default()
            }
            _ => Session::default(),
        };
        let folder = Arc::new(Folder::new(key.clone(), root, session, file));
        self.folders.insert(key.clone(), folder.clone());
        if let Ok(mut o) = self.order.write() {
            if !o.contains(&key) {
                o.push(key);
            }
        }
        Some(folder)
    }

    /// Restored plans show at once, lenses included (the editor may have asked for them already).
    fn announce_restored(&self, folders: &[Arc<Folder>]) {
        let mut any = false;
        for f in folders.iter().filter(|f| !f.plan().is_empty()) {
            self.notifier.send(Outgoing::Plan(f.plan_json()));
            any = true;
        }
        if any {
            self.notifier.send(Outgoing::RefreshLenses);
        }
    }

    fn remove_folder(&self, uri: &Uri) {
        if let Some((_, f)) = self.folders.remove(uri.as_str()) {
            f.cancel_run();
            f.flush();
        }
        if let Ok(mut o) = self.order.write() {
            o.retain(|u| u != uri.as_str());
        }
    }

    /// Cancels every run and writes every folder's state now.
    pub fn wrap_up(&self) {
        for f in self.folders.iter() {
            f.cancel_run();
            f.flush();
        }
    }

    /// Sends a notification now, or at `initialized` if that has not come yet.
    fn tell(&self, out: Outgoing) {
        let mut early = self.early.lock().unwrap_or_else(|e| e.into_inner());
        match early.as_mut() {
            Some(queue) => queue.push(out),
            None => self.notifier.send(out),
        }
    }

    /// Asks for the configuration in the background: a notification handler that waited for the
    /// client's answer would hold up `exit` (tower-lsp finishes every handler in flight, and reads no
    /// more answers once `exit` has arrived) for as long as the request's timeout.
    fn fetch_configuration_later(self: Arc<Self>) {
        if !self.caps().configuration {
            return;
        }
        // Taken now, before the handler returns, so a run that comes next waits for the answer (at
        // most the request's timeout).
        let pending = self.config_pending.clone();
        match pending.clone().try_write_owned() {
            Ok(guard) => tokio::spawn(async move {
                self.fetch_configuration().await;
                drop(guard);
            }),
            Err(_) => tokio::spawn(async move {
                let _guard = pending.write_owned().await;
                self.fetch_configuration().await;
            }),
        };
    }

    async fn fetch_configuration(&self) {
        if !self.caps().configuration {
            return;
        }
        let folders: Vec<Arc<Folder>> = self.folders.iter().map(|f| f.clone()).collect();
        if folders.is_empty() {
            return;
        }
        let items = folders
            .iter()
            .map(|f| ConfigurationItem { scope_uri: f.uri.parse().ok(), section: Some("stepwise".into()) })
            .collect();
        match tokio::time::timeout(Duration::from_secs(10), self.client.configuration(items)).await {
            Ok(Ok(values)) => {
                for (f, v) in folders.iter().zip(values) {
                    let o = self.settings_from(&v);
                    if let Ok(mut s) = f.settings.write() {
                        *s = o;
                    }
                }
            }
            Ok(Err(e)) => tracing::warn!("workspace/configuration failed: {}", e.message),
            Err(_) => tracing::warn!("workspace/configuration not answered in time"),
        }
    }
}

impl Shared {
    /// Settings from the editor; each bad key is reported to the user by name and the others kept.
    fn settings_from(&self, v: &Value) -> Overrides {
        let (o, bad) = parse_settings(v);
        for problem in bad {
            self.tell(Outgoing::Message(MessageType::WARNING, format!("stepwise: ignoring the setting {problem}")));
        }
        o
    }
}

/// Settings as an object, possibly nested under `stepwise`, read key by key: one wrongly typed value
/// (`"maxRounds": "10"`) loses only itself. Returns the settings and a line per bad key.
fn parse_settings(v: &Value) -> (Overrides, Vec<String>) {
    let v = v.get("stepwise").unwrap_or(v);
    let map = match v {
        Value::Null => return (Overrides::default(), Vec::new()),
        Value::Object(map) => map,
        other => return (Overrides::default(), vec![format!("section: expected an object, got {other}")]),
    };
    let mut good = serde_json::Map::new();
    let mut bad = Vec::new();
    for (k, val) in map {
        let one = Value::Object([(k.clone(), val.clone())].into_iter().collect());
        match serde_json::from_value::<Overrides>(one) {
            Ok(_) => {
                good.insert(k.clone(), val.clone());
            }
            Err(e) => bad.push(format!("{k}: {e}")),
        }
    }
    (serde_json::from_value(Value::Object(good)).unwrap_or_default(), bad)
}

/// `stateDir` of `initializationOptions` (optionally under `stepwise`): a per-server state directory.
fn init_state_dir(v: &Value) -> Option<PathBuf> {
    let v = v.get("stepwise").unwrap_or(v);
    v.get("stateDir").and_then(Value::as_str).filter(|s| !s.trim().is_empty()).map(PathBuf::from)
}

pub struct Backend {
    shared: Arc<Shared>,
}

impl Backend {
    pub fn new(client: Client) -> Backend {
        let refresh_lenses = Arc::new(AtomicBool::new(false));
        let notifier = Notifier::spawn(client.clone(), refresh_lenses.clone(), Duration::from_secs(10));
        Backend {
            shared: Arc::new(Shared {
                client,
                notifier,
                docs: Documents::default(),
                folders: DashMap::new(),
                order: RwLock::new(Vec::new()),
                caps: RwLock::new(Caps::default()),
                init_settings: RwLock::new(Overrides::default()),
                refresh_lenses,
                state_dir: RwLock::new(state::state_dir()),
                runs: AtomicU64::new(0),
                early: std::sync::Mutex::new(Some(Vec::new())),
                config_pending: Arc::new(tokio::sync::RwLock::new(())),
            }),
        }
    }

    fn start_run(&self, folder: Arc<Folder>, job: Job) -> Result<String> {
        let n = self.shared.runs.fetch_add(1, Ordering::Relaxed) + 1;
        let millis =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        let id = format!("run-{millis:x}-{n}");
        let cancel = CancellationToken::new();
        {
            let mut slot = folder.run.lock().map_err(|_| Error::internal_error())?;
            if slot.is_some() {
                return Err(invalid_request(format!("a run is already in progress in {}", folder.root.display())));
            }
            *slot = Some(RunHandle { id: id.clone(), cancel: cancel.clone() });
        }
        let (shared, run_id) = (self.shared.clone(), id.clone());
        let run = tokio::spawn(run_task(shared.clone(), folder.clone(), run_id.clone(), job, cancel));
        tokio::spawn(guard_run(run, shared, folder, run_id));
        Ok(id)
    }
}

/// Whatever happens inside a run, even a panic, its folder is free again afterwards and the editor hears
/// that the run ended.
async fn guard_run(run: tokio::task::JoinHandle<()>, shared: Arc<Shared>, folder: Arc<Folder>, run_id: String) {
    let Err(e) = run.await else { return };
    let why = if e.is_panic() {
        let p = e.into_panic();
        let text = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        format!("internal error: the run panicked: {text}")
    } else {
        "internal error: the run was aborted".into()
    };
    tracing::error!("{why}");
    if let Ok(mut slot) = folder.run.lock() {
        if slot.as_ref().is_some_and(|h| h.id == run_id) {
            *slot = None;
        }
    }
    let n = &shared.notifier;
    n.send(Outgoing::Message(MessageType::ERROR, format!("stepwise: {why}")));
    n.send(Outgoing::Status(
        json!({"workspace": folder.uri, "state": "idle", "runId": run_id, "reason": "error", "message": why}),
    ));
}

impl Backend {
    pub(super) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// `window/workDoneProgress/cancel`: the user cancelled a run from the editor's progress UI.
    pub async fn progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        let ProgressToken::String(token) = params.token else { return };
        let Some(run_id) = token.strip_prefix("stepwise/") else { return };
        for f in self.shared.folders.iter() {
            if f.running_id().as_deref() == Some(run_id) {
                f.cancel_run();
            }
        }
    }
}

/// `InvalidRequest` with a message that says what was wrong.
fn invalid_request(message: String) -> Error {
    Error { message: message.into(), ..Error::invalid_request() }
}

async fn run_task(shared: Arc<Shared>, folder: Arc<Folder>, run_id: String, job: Job, cancel: CancellationToken) {
    let prompt = match &job {
        Job::Prompt(p) => p.clone(),
        Job::Compact => "Compacting the conversation".to_string(),
    };
    // Debug builds only: lets the tests prove that a panicking run is cleaned up (`guard_run`).
    #[cfg(debug_assertions)]
    if prompt == "__stepwise_test_panic__" {
        panic!("test panic requested");
    }
    let n = &shared.notifier;
    let status = |state: &str, reason: Option<&str>, message: Option<&str>| {
        let mut v = json!({"workspace": folder.uri, "state": state, "runId": run_id});
        if let Some(r) = reason {
            v["reason"] = json!(r);
        }
        if let Some(m) = message {
            v["message"] = json!(m);
        }
        n.send(Outgoing::Status(v));
    };
    status("running", None, None);

    let progress = if shared.caps().work_done_progress {
        let token = ProgressToken::String(format!("stepwise/{run_id}"));
        let created =
            tokio::time::timeout(Duration::from_secs(10), shared.client.create_work_done_progress(token.clone())).await;
        matches!(created, Ok(Ok(()))).then_some(token)
    } else {
        None
    };
    if let Some(token) = &progress {
        let title: String = prompt.chars().take(80).collect();
        n.send(Outgoing::Progress(
            token.clone(),
            WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title: "Stepwise".into(),
                cancellable: Some(true),
                message: Some(title),
                percentage: Some(0),
            }),
        ));
    }

    let cwd = std::env::current_dir().unwrap_or_else(|_| folder.root.clone());
    let env = Env::load(&[folder.root.as_path(), cwd.as_path()]);
    drop(shared.config_pending.read().await);
    let settings = shared.settings_for(&folder);
    let configured = config::agent(&env, &settings)
        .and_then(|a| Ok((a, config::provider(&env, &settings)?)))
        .and_then(|(a, p)| Ok((a, Llm::new(p)?)));
    let (reason, error) = match configured {
        Err(msg) => (FinishReason::Error, Some(msg)),
        Ok((cfg, llm)) => {
            let llm = llm.learn_window().await;
            let timeout = Duration::from_secs(settings.request_timeout_secs.unwrap_or(30).max(1));
            let approval_timeout = Duration::from_secs(settings.approval_timeout_secs.unwrap_or(300).max(1));
            let approval = settings.approval.as_deref().and_then(ApprovalMode::parse).unwrap_or(ApprovalMode::Ask);
            let host = EditorHost {
                shared: shared.clone(),
                folder: folder.clone(),
                run_id: run_id.clone(),
                approval,
                request_timeout: timeout,
                approval_timeout,
            };
            let events = EditorEvents {
                notifier: n.clone(),
                folder: folder.clone(),
                run_id: run_id.clone(),
                progress: progress.clone(),
            };
            let mut session = folder.session.lock().await;
            if let Ok(mut v) = folder.view.write() {
                v.marks.clear();
            }
            let outcome = match job {
                Job::Prompt(_) => agent::run(&mut session, &prompt, &llm, &host, &events, &cfg, &cancel).await,
                Job::Compact => agent::compact(&mut session, &llm, &events).await,
            };
            folder.save(&session);
            (outcome.reason, outcome.error)
        }
    };
    if let Some(msg) = &error {
        n.send(Outgoing::Message(MessageType::ERROR, format!("stepwise: {msg}")));
    }
    if let Some(token) = progress {
        n.send(Outgoing::Progress(
            token,
            WorkDoneProgress::End(WorkDoneProgressEnd { message: Some(reason.as_str().to_string()) }),
        ));
    }
    if let Ok(mut slot) = folder.run.lock() {
        if slot.as_ref().is_some_and(|h| h.id == run_id) {
            *slot = None;
        }
    }
    status("idle", Some(reason.as_str()), error.as_deref());
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CommandArgs {
    prompt: Option<String>,
    workspace: Option<String>,
}

fn command_args(args: &[Value]) -> Result<CommandArgs> {
    match args.first() {
        None | Some(Value::Null) => Ok(CommandArgs::default()),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| Error::invalid_params(format!("expected {{\"prompt\"?: string, \"workspace\"?: uri}}: {e}"))),
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let c = &params.capabilities;
        let ws = c.workspace.as_ref();
        let edit = ws.and_then(|w| w.workspace_edit.as_ref());
        let caps = Caps {
            apply_edit: ws.and_then(|w| w.apply_edit).unwrap_or(false),
            document_changes: edit.and_then(|e| e.document_changes).unwrap_or(false),
            create_files: edit
                .and_then(|e| e.resource_operations.as_ref())
                .is_some_and(|ops| ops.contains(&ResourceOperationKind::Create)),
            work_done_progress: c.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false),
            configuration: ws.and_then(|w| w.configuration).unwrap_or(false),
            save_documents: c
                .experimental
                .as_ref()
                .and_then(|e| e.pointer("/stepwise/saveDocuments"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        self.shared.refresh_lenses.store(
            ws.and_then(|w| w.code_lens.as_ref()).and_then(|l| l.refresh_support).unwrap_or(false),
            Ordering::Relaxed,
        );
        if let Ok(mut slot) = self.shared.caps.write() {
            *slot = caps;
        }
        let enc = Encoding::negotiate(c.general.as_ref().and_then(|g| g.position_encodings.as_deref()));
        self.shared.docs.set_encoding(enc);
        // Read before the folders are added: they load their saved sessions from it.
        if let Some(dir) = params.initialization_options.as_ref().and_then(init_state_dir) {
            if let Ok(mut d) = self.shared.state_dir.write() {
                *d = Some(dir);
            }
        }
        if let Some(v) = params.initialization_options.as_ref() {
            let o = self.shared.settings_from(v);
            if let Ok(mut s) = self.shared.init_settings.write() {
                *s = o;
            }
        }
        #[allow(deprecated)]
        let folders = match (&params.workspace_folders, &params.root_uri) {
            (Some(f), _) if !f.is_empty() => f.iter().map(|f| f.uri.clone()).collect(),
            (_, Some(root)) => vec![root.clone()],
            _ => Vec::new(),
        };
        for uri in &folders {
            self.shared.add_folder(uri);
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(enc.kind()),
                text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                    ..Default::default()
                })),
                code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: COMMANDS.iter().map(|c| c.to_string()).collect(),
                    ..Default::default()
                }),
                workspace: Some(WorkspaceServerCapabilities {
                    workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                        supported: Some(true),
                        change_notifications: Some(OneOf::Left(true)),
                    }),
                    file_operations: None,
                }),
                ..Default::default()
            },
            server_info: Some(ServerInfo { name: "stepwise".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        // Messages from `initialize` (a folder that cannot be used, a saved session that cannot be read).
        let early = self.shared.early.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default();
        for out in early {
            self.shared.notifier.send(out);
        }
        let folders: Vec<Arc<Folder>> = self.shared.folders.iter().map(|f| f.clone()).collect();
        self.shared.announce_restored(&folders);
        self.shared.clone().fetch_configuration_later();
    }

    async fn shutdown(&self) -> Result<()> {
        self.shared.wrap_up();
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let d = params.text_document;
        if let Some(path) = self.shared.docs.path_of(&d.uri) {
            // The buffer is now the truth for this file.
            if let Some(f) = self.shared.folder_of(&path) {
                f.overlay.remove(&path);
            }
        }
        self.shared.docs.open(d.uri, d.text, d.version);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        // Applied before any await, so changes keep the order in which they arrived.
        if let Err(e) =
            self.shared.docs.change(&params.text_document.uri, params.text_document.version, params.content_changes)
        {
            tracing::warn!("{e}");
        }
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        if let Some(path) = self.shared.docs.path_of(&params.text_document.uri) {
            if let Some(f) = self.shared.folder_of(&path) {
                if let Ok(mut u) = f.unsaved.lock() {
                    u.remove(&path);
                }
                f.overlay.remove(&path);
            }
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.shared.docs.close(&params.text_document.uri);
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        for f in &params.event.removed {
            self.shared.remove_folder(&f.uri);
        }
        let mut added = Vec::new();
        for f in &params.event.added {
            if let Some(folder) = self.shared.add_folder(&f.uri) {
                added.push(folder);
            }
        }
        self.shared.announce_restored(&added);
        self.shared.clone().fetch_configuration_later();
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        // Clients that push settings send them here; clients that are asked get asked again.
        if let Some(o) = Some(self.shared.settings_from(&params.settings)).filter(|o| *o != Overrides::default()) {
            if let Ok(mut s) = self.shared.init_settings.write() {
                *s = s.merged(&o);
            }
        }
        self.shared.clone().fetch_configuration_later();
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        let Some(path) = self.shared.docs.path_of(&params.text_document.uri) else { return Ok(None) };
        let Some(folder) = self.shared.folder_of(&path) else { return Ok(None) };
        let view = folder.view.read().map_err(|_| Error::internal_error())?;
        if view.plan.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let args = Some(vec![json!({"workspace": folder.uri})]);
        let lens = |line: u32, title: String| CodeLens {
            range: Range { start: Position { line, character: 0 }, end: Position { line, character: 0 } },
            command: Some(Command { title, command: "stepwise.plan".into(), arguments: args.clone() }),
            data: None,
        };
        let mut lenses = vec![lens(0, lens_title(&view.plan))];
        for m in view.marks.iter().filter(|m| m.path == path) {
            lenses.push(lens(m.line, format!("✎ stepwise: {}", m.step)));
        }
        Ok(Some(lenses))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let args = command_args(&params.arguments)?;
        match params.command.as_str() {
            "stepwise.run" => {
                let prompt = args.prompt.unwrap_or_default();
                if prompt.trim().is_empty() {
                    return Err(Error::invalid_params("stepwise.run needs a non-empty \"prompt\""));
                }
                let folder = self.shared.folder(args.workspace.as_deref())?;
                let id = self.start_run(folder, Job::Prompt(prompt))?;
                Ok(Some(json!({"runId": id})))
            }
            "stepwise.cancel" => {
                let folder = self.shared.folder(args.workspace.as_deref())?;
                folder.cancel_run();
                Ok(None)
            }
            "stepwise.reset" => {
                let folder = self.shared.folder(args.workspace.as_deref())?;
                folder.cancel_run();
                // A cancelled run lets go of the session promptly; don't hang the editor if it doesn't.
                let mut session = tokio::time::timeout(Duration::from_secs(5), folder.session.lock())
                    .await
                    .map_err(|_| invalid_request("the running task did not stop; try again".into()))?;
                *session = Session::default();
                folder.save(&session);
                drop(session);
                folder.set_plan(&Default::default());
                if let Ok(mut v) = folder.view.write() {
                    v.marks.clear();
                }
                folder.allow_all.store(false, Ordering::Relaxed);
                self.shared.notifier.send(Outgoing::Plan(folder.plan_json()));
                self.shared.notifier.send(Outgoing::RefreshLenses);
                Ok(None)
            }
            "stepwise.plan" => {
                let folder = self.shared.folder(args.workspace.as_deref())?;
                Ok(Some(folder.plan_json()))
            }
            "stepwise.compact" => {
                // In the background, as a run of its own: `stepwise/compacted` and `idle` follow.
                let folder = self.shared.folder(args.workspace.as_deref())?;
                self.start_run(folder, Job::Compact)?;
                Ok(None)
            }
            other => Err(Error::invalid_params(format!("unknown command: {other}"))),
        }
    }
}
