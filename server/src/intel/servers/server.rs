//! One language server stepwise started: its process, the documents it was fed (with their versions),
//! what it published, and knowing when it is done with a version (the version in `publishDiagnostics`,
//! the end of its `$/progress` work, or pull diagnostics where it offers them).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, watch};
use tower_lsp_server::ls_types::{Diagnostic, Uri};

use super::rpc::{Conn, Incoming};
use super::said::NotStarted;
use super::spec::Spec;
use crate::locks::lock;
use crate::mcp::process::Stderr;

pub use crate::intel::source::KEEP_PER_FILE;
/// The most files whose diagnostics are kept (besides those open): a server publishing for a huge tree
/// costs bounded memory.
const KEEP_FILES: usize = 2000;

/// What one file's diagnostics were, as published.
#[derive(Default)]
struct Published {
    version: Option<i32>,
    diagnostics: Vec<Diagnostic>,
    /// The event count when they came.
    seq: u64,
    /// The file's first published diagnostics (the text it had before the agent wrote to it).
    first: Option<Vec<Diagnostic>>,
    /// The ones before the latest (`None`: the latest are its first).
    prev: Option<Vec<Diagnostic>>,
    /// The event count of its first publish.
    first_seq: u64,
    /// How many the latest publish held beyond those kept.
    dropped: usize,
}

#[derive(Default)]
struct State {
    /// Open documents: version and text.
    docs: HashMap<PathBuf, (i32, Arc<str>)>,
    published: HashMap<PathBuf, Published>,
    /// The event count when each document's latest version was sent.
    sent: HashMap<PathBuf, u64>,
    /// `$/progress` tokens begun and not ended.
    working: HashSet<String>,
    /// The event count of the latest end of progress work.
    work_ended: u64,
    /// It says the version its diagnostics are for: then only that version counts (its progress may
    /// end for an older version after a newer one was sent).
    versioned: bool,
    seq: u64,
}

/// A started server. Dropping it kills its process group.
pub struct Running {
    pub spec: Arc<Spec>,
    conn: Arc<Conn>,
    state: Arc<Mutex<State>>,
    events: watch::Receiver<u64>,
    /// Whether it answers `textDocument/diagnostic`.
    pull: bool,
    _reaper: crate::mcp::process::Reaper,
    exited: watch::Receiver<bool>,
    /// What it wrote to stderr, for the line when it stops.
    pub stderr: Arc<Mutex<Stderr>>,
}

fn uri_of(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

impl Running {
    /// Starts the server in `root` and initializes it, within `budget`. `Err`: why (it could not start,
    /// it exited, or it did not answer), with what it said (`said.rs`).
    pub async fn start(
        spec: Arc<Spec>,
        root: &Path,
        policy: Option<&crate::sandbox::Policy>,
        budget: Duration,
    ) -> Result<Running, NotStarted> {
        let Some((prog, args)) = spec.command.split_first() else {
            return Err(NotStarted::new(&spec.name, "no command".into(), None));
        };
        // In the sandbox only the workspace and the session's temporary folder are writable: caches go there.
        let mut env = std::collections::BTreeMap::new();
        if let Some(p) = policy {
            env.insert("XDG_CACHE_HOME".to_string(), p.tmp.join("cache").to_string_lossy().into_owned());
        }
        let child = crate::mcp::process::spawn_confined(root, prog, args, &env, policy)
            .map_err(|e| NotStarted::new(&spec.name, e, None))?;
        let crate::mcp::process::Child { stdout, stdin, mut reaper, stderr } = child;
        let (inc_tx, inc_rx) = mpsc::unbounded_channel();
        let (closed_tx, closed_rx) = oneshot::channel();
        let conn = Conn::start(stdout, stdin, inc_tx, closed_tx);
        let state = Arc::new(Mutex::new(State::default()));
        let (ev_tx, events) = watch::channel(0u64);
        let (exit_tx, exited) = watch::channel(false);
        tokio::spawn(listen(inc_rx, state.clone(), ev_tx.clone()));
        tokio::spawn(async move {
            let _ = closed_rx.await;
            let _ = exit_tx.send(true);
            ev_tx.send_modify(|n| *n += 1);
        });
        let root_uri = uri_of(root).map(|u| u.to_string()).unwrap_or_default();
        let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let init = json!({
            "processId": std::process::id(),
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": name}],
            "clientInfo": {"name": "stepwise"},
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "window": {"workDoneProgress": true},
                "workspace": {"configuration": true, "workspaceFolders": true, "symbol": {}},
                "textDocument": {
                    "synchronization": {"didSave": false},
                    "publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
                    "diagnostic": {"dynamicRegistration": false},
                    "definition": {"linkSupport": true},
                    "implementation": {"linkSupport": true},
                    "references": {},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                    "rename": {"prepareSupport": false}
                }
            }
        });
        let answer = conn.request("initialize", init, budget).await;
        let caps = match answer {
            Ok(v) => v.get("capabilities").cloned().unwrap_or(Value::Null),
            // Still running and silent: said at once (asking why waits for an exit that is not coming).
            Err(e) if e.starts_with("no answer in") && !*exited.borrow() => {
                return Err(NotStarted::new(&spec.name, e, Some(&lock(&stderr))));
            }
            Err(e) => {
                let how = reaper.ended(e).await;
                return Err(NotStarted::new(&spec.name, how, Some(&lock(&stderr))));
            }
        };
        conn.notify("initialized", json!({}));
        let pull = caps.get("diagnosticProvider").is_some_and(|d| !d.is_null());
        Ok(Running { spec, conn, state, events, pull, _reaper: reaper, exited, stderr })
    }

    pub fn alive(&self) -> bool {
        !*self.exited.borrow()
    }

    /// Whether it has this document open.
    pub fn has(&self, path: &Path) -> bool {
        lock(&self.state).docs.contains_key(path)
    }

    /// Feeds the server a file's text: opened (version 1) the first time, a full change after.
    pub fn sync(&self, path: &Path, text: Arc<str>) {
        let Some(uri) = uri_of(path) else { return };
        let mut s = lock(&self.state);
        let seq = s.seq;
        match s.docs.get_mut(path) {
            Some((v, t)) if **t == *text => {
                let _ = v;
            }
            Some((v, t)) => {
                *v += 1;
                *t = text.clone();
                let version = *v;
                s.sent.insert(path.to_path_buf(), seq);
                self.conn.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": &*text}]}),
                );
            }
            None => {
                s.docs.insert(path.to_path_buf(), (1, text.clone()));
                s.sent.insert(path.to_path_buf(), seq);
                self.conn.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": self.spec.language_id(path), "version": 1, "text": &*text}}),
                );
            }
        }
    }

    /// The text the server has for a file.
    pub fn text(&self, path: &Path) -> Option<Arc<str>> {
        lock(&self.state).docs.get(path).map(|(_, t)| t.clone())
    }

    /// A request, answered within `timeout`.
    pub async fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, String> {
        self.conn.request(method, params, timeout).await
    }

    /// Waits until the server is done with the latest version of `path`, at most until `deadline`.
    /// `true`: done (its diagnostics are those of that version).
    pub async fn settle(&self, path: &Path, deadline: Instant) -> bool {
        if self.pull {
            return self.pull_diagnostics(path, deadline).await;
        }
        let mut events = self.events.clone();
        loop {
            if self.settled(path) {
                return true;
            }
            if !self.alive() {
                return false;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || tokio::time::timeout(left, events.changed()).await.is_err() {
                tracing::debug!("{}: {} not settled by the deadline", self.spec.name, path.display());
                return self.settled(path);
            }
        }
    }

    fn settled(&self, path: &Path) -> bool {
        let s = lock(&self.state);
        let Some(&(version, _)) = s.docs.get(path) else { return true };
        let sent = s.sent.get(path).copied().unwrap_or(0);
        let idle = s.working.is_empty();
        match s.published.get(path) {
            Some(p) if p.version == Some(version) => true,
            // A server that does not say the version: what it published after the change, once idle.
            Some(p) if p.version.is_none() && p.seq > sent && idle => true,
            // Work ran and ended after the change and nothing changed for this file.
            _ => !s.versioned && idle && s.work_ended > sent && s.published.contains_key(path),
        }
    }

    async fn pull_diagnostics(&self, path: &Path, deadline: Instant) -> bool {
        let Some(uri) = uri_of(path) else { return false };
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(answer) = self.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}}), left).await
        else {
            return false;
        };
        let items: Option<Vec<Diagnostic>> = answer.get("items").and_then(|i| serde_json::from_value(i.clone()).ok());
        let Some(items) = items else {
            // "unchanged": what was known stands.
            return answer.get("kind").and_then(Value::as_str) == Some("unchanged");
        };
        let version = lock(&self.state).docs.get(path).map(|(v, _)| *v);
        let total = items.len();
        record(&self.state, path.to_path_buf(), version, items, total);
        true
    }

    /// A file's diagnostics now, its first ones (before the agent wrote), and how many of the latest
    /// publish were not kept.
    pub fn diagnostics(&self, path: &Path) -> (Vec<Diagnostic>, Option<Vec<Diagnostic>>, usize) {
        let s = lock(&self.state);
        match s.published.get(path) {
            Some(p) => (p.diagnostics.clone(), p.first.clone(), p.dropped),
            None => (Vec::new(), None, 0),
        }
    }

    /// Files it published for after event `since` that it was not fed (the servers found them affected),
    /// with their diagnostics before: `None` when it first reported the file after `since` (a first check
    /// of an unopened file may report errors older than the change; there is nothing to compare with).
    pub fn affected_since(&self, since: u64) -> Vec<(PathBuf, Vec<Diagnostic>, Option<Vec<Diagnostic>>)> {
        let s = lock(&self.state);
        s.published
            .iter()
            .filter(|(p, pb)| pb.seq > since && !s.docs.contains_key(*p))
            .map(|(p, pb)| {
                let before = if pb.first_seq > since { None } else { pb.prev.clone() };
                (p.clone(), pb.diagnostics.clone(), before)
            })
            .collect()
    }

    /// Every file it has diagnostics for.
    pub fn all(&self) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        lock(&self.state).published.iter().map(|(p, pb)| (p.clone(), pb.diagnostics.clone())).collect()
    }

    pub fn seq(&self) -> u64 {
        lock(&self.state).seq
    }
}

/// Stores one file's diagnostics (at most `KEEP_PER_FILE` of the `total` it published).
fn record(state: &Mutex<State>, path: PathBuf, version: Option<i32>, mut diagnostics: Vec<Diagnostic>, total: usize) {
    diagnostics.truncate(KEEP_PER_FILE);
    let dropped = total.saturating_sub(diagnostics.len());
    let mut s = lock(state);
    s.seq += 1;
    s.versioned |= version.is_some();
    let seq = s.seq;
    if s.published.len() >= KEEP_FILES && !s.published.contains_key(&path) && !s.docs.contains_key(&path) {
        tracing::debug!("diagnostics for {} not kept: {KEEP_FILES} files are", path.display());
        return;
    }
    let p = s.published.entry(path).or_default();
    let earlier = std::mem::replace(&mut p.diagnostics, diagnostics.clone());
    match p.first {
        None => {
            p.first = Some(diagnostics);
            p.first_seq = seq;
            p.prev = None;
        }
        Some(_) => p.prev = Some(earlier),
    }
    p.version = version;
    p.seq = seq;
    p.dropped = dropped;
}

/// Reads the server's notifications into the state, and counts events for the waiters.
async fn listen(mut rx: mpsc::UnboundedReceiver<Incoming>, state: Arc<Mutex<State>>, events: watch::Sender<u64>) {
    while let Some(Incoming { method, params }) = rx.recv().await {
        match method.as_str() {
            "textDocument/publishDiagnostics" => {
                let path = params.get("uri").and_then(Value::as_str).and_then(|u| u.parse::<Uri>().ok());
                let Some(path) = path.and_then(|u| u.to_file_path().map(|p| p.into_owned())) else { continue };
                let version = params.get("version").and_then(Value::as_i64).map(|v| v as i32);
                // Entries that do not parse (a server's own shapes) are left out, not the whole list.
                let all = params.get("diagnostics").and_then(Value::as_array);
                let total = all.map_or(0, Vec::len);
                let diags: Vec<Diagnostic> = all
                    .map(|a| {
                        a.iter().take(KEEP_PER_FILE).filter_map(|d| serde_json::from_value(d.clone()).ok()).collect()
                    })
                    .unwrap_or_default();
                tracing::debug!("publishDiagnostics {} v{version:?}: {total}", path.display());
                record(&state, path, version, diags, total);
            }
            "$/progress" => {
                let token = params.get("token").map(|t| t.to_string()).unwrap_or_default();
                let kind = params.pointer("/value/kind").and_then(Value::as_str);
                let mut s = lock(&state);
                s.seq += 1;
                match kind {
                    Some("begin") => {
                        s.working.insert(token);
                    }
                    Some("end") => {
                        s.working.remove(&token);
                        s.work_ended = s.seq;
                    }
                    _ => {}
                }
            }
            _ => continue,
        }
        events.send_modify(|n| *n += 1);
    }
}
