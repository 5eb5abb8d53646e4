//! A fake editor that drives the real `stepwise lsp` server, for end-to-end tests and benchmarks.
//!
//! Modelled on the test servers of ruff/ty (`tests/e2e`) and typos-lsp: the [`TestEditor`] speaks LSP over
//! an in-memory duplex pipe to [`stepwise::lsp::serve`] running in a task, or over the stdio of the real
//! binary. A background reader parses every frame the server writes and sorts it into queues:
//! responses (by id), notifications, and server→client requests. Server requests are either answered
//! at once by a per-method [`Policy`] (applying edits to the editor's own document model like a real
//! editor, then reporting them with `didChange`) or queued for the test to answer.
//!
//! Every notification and queued request must be read by the test: [`TestEditor::finish`] (and drop)
//! fails listing whatever went unread, except methods declared ignorable with [`TestEditor::ignore`].

pub use crate::temp::TempDir;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::mock::MockModel;

/// How long waits last unless a test says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The environment variable that holds the (fake) API key; named by `apiKeyEnv` in initializationOptions.
pub const TEST_KEY_ENV: &str = "STEPWISE_TEST_KEY";
pub const TEST_KEY: &str = "sk-stepwise-test";

/// Sets [`TEST_KEY_ENV`] once per process. Every caller wants the same value, so a race is harmless;
/// it happens before any server of this process starts reading the environment.
pub fn ensure_test_key() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| std::env::set_var(TEST_KEY_ENV, TEST_KEY));
}

/// JSON-RPC error codes.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const REQUEST_CANCELLED: i64 = -32800;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorObj {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl ErrorObj {
    pub fn new(code: i64, message: impl Into<String>) -> ErrorObj {
        ErrorObj { code, message: message.into(), data: None }
    }

    fn from_json(v: &Value) -> ErrorObj {
        ErrorObj {
            code: v.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: v.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
            data: v.get("data").cloned(),
        }
    }

    fn to_json(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            v["data"] = d.clone();
        }
        v
    }
}

impl std::fmt::Display for ErrorObj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error {}: {}", self.code, self.message)
    }
}

// ------------------------------------------------------------------------------------------------
// Positions
// ------------------------------------------------------------------------------------------------

/// The position encoding negotiated in `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PosEncoding {
    Utf8,
    Utf16,
    Utf32,
}

impl PosEncoding {
    pub fn parse(s: &str) -> Option<PosEncoding> {
        match s {
            "utf-8" => Some(PosEncoding::Utf8),
            "utf-16" => Some(PosEncoding::Utf16),
            "utf-32" => Some(PosEncoding::Utf32),
            _ => None,
        }
    }

    fn units(self, c: char) -> usize {
        match self {
            PosEncoding::Utf8 => c.len_utf8(),
            PosEncoding::Utf16 => c.len_utf16(),
            PosEncoding::Utf32 => 1,
        }
    }
}

/// Byte offset of an LSP position in `text` (the editor's own arithmetic, independent of the server's).
/// A character past the end of its line clamps to the line end; a line past the end clamps to the text end.
pub fn offset_at(text: &str, line: u32, character: u32, enc: PosEncoding) -> usize {
    let mut start = 0usize;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let content_end = if end > start && text.as_bytes()[end - 1] == b'\r' { end - 1 } else { end };
    let mut units = 0usize;
    for (i, c) in text[start..content_end].char_indices() {
        if units >= character as usize {
            return start + i;
        }
        units += enc.units(c);
    }
    content_end
}

/// LSP position `(line, character)` of a byte offset.
pub fn position_at(text: &str, offset: usize, enc: PosEncoding) -> (u32, u32) {
    let before = &text[..offset];
    let line = before.bytes().filter(|b| *b == b'\n').count() as u32;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let character: usize = before[line_start..].chars().map(|c| enc.units(c)).sum();
    (line, character as u32)
}

/// An LSP range value.
pub fn range(start: (u32, u32), end: (u32, u32)) -> Value {
    json!({"start": {"line": start.0, "character": start.1}, "end": {"line": end.0, "character": end.1}})
}

fn pos_of(v: &Value) -> (u32, u32) {
    (
        v.get("line").and_then(Value::as_u64).unwrap_or(0) as u32,
        v.get("character").and_then(Value::as_u64).unwrap_or(0) as u32,
    )
}

// ------------------------------------------------------------------------------------------------
// URIs
// ------------------------------------------------------------------------------------------------

/// `file://` URI of an absolute path, percent-encoding what URIs do not allow.
pub fn file_uri(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of a `file://` URI.
pub fn uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}

// ------------------------------------------------------------------------------------------------
// Client presets and policies
// ------------------------------------------------------------------------------------------------

/// Which editor the fake one imitates: its capabilities and its default answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientPreset {
    /// utf-16 only; applyEdit with documentChanges and `create`; work-done progress; code lens
    /// refresh; configuration; `experimental.stepwise.saveDocuments`.
    VsCode,
    /// utf-8/utf-16/utf-32; applyEdit with documentChanges (no resource operations); work-done
    /// progress; no code lens refresh; configuration.
    Neovim,
    /// Declares nothing at all (no applyEdit, no progress, no configuration).
    Bare,
}

impl ClientPreset {
    pub fn capabilities(self) -> Value {
        match self {
            ClientPreset::VsCode => json!({
                "general": {"positionEncodings": ["utf-16"]},
                "workspace": {
                    "applyEdit": true,
                    "workspaceEdit": {
                        "documentChanges": true,
                        "resourceOperations": ["create", "rename", "delete"],
                        "failureHandling": "textOnlyTransactional",
                    },
                    "configuration": true,
                    "workspaceFolders": true,
                    "didChangeConfiguration": {"dynamicRegistration": true},
                    "executeCommand": {"dynamicRegistration": true},
                    "codeLens": {"refreshSupport": true},
                },
                "textDocument": {
                    "synchronization": {"dynamicRegistration": true, "didSave": true, "willSave": true},
                    "codeLens": {"dynamicRegistration": true},
                },
                "window": {
                    "workDoneProgress": true,
                    "showMessage": {"messageActionItem": {"additionalPropertiesSupport": true}},
                },
                "experimental": {"stepwise": {"saveDocuments": true}},
            }),
            ClientPreset::Neovim => json!({
                "general": {"positionEncodings": ["utf-8", "utf-16", "utf-32"]},
                "workspace": {
                    "applyEdit": true,
                    "workspaceEdit": {"documentChanges": true},
                    "configuration": true,
                    "workspaceFolders": true,
                    "didChangeConfiguration": {"dynamicRegistration": false},
                    "codeLens": {"refreshSupport": false},
                },
                "textDocument": {
                    "synchronization": {"didSave": true, "willSave": true, "dynamicRegistration": false},
                    "codeLens": {"dynamicRegistration": false},
                },
                "window": {"workDoneProgress": true, "showMessage": {"messageActionItem": {"additionalPropertiesSupport": true}}},
            }),
            ClientPreset::Bare => json!({}),
        }
    }

    fn default_policies(self) -> HashMap<String, Policy> {
        let mut p = HashMap::new();
        p.insert("workspace/applyEdit".into(), Policy::ApplyEdits);
        p.insert("workspace/codeLens/refresh".into(), Policy::Respond(Value::Null));
        p.insert("window/workDoneProgress/create".into(), Policy::Respond(Value::Null));
        p.insert("workspace/configuration".into(), Policy::Configuration);
        p.insert("stepwise/saveDocuments".into(), Policy::SaveDocuments);
        p.insert("client/registerCapability".into(), Policy::Respond(Value::Null));
        p
    }
}

/// How the editor answers one kind of server→client request.
#[derive(Clone)]
pub enum Policy {
    /// Keep it for the test: [`TestEditor::await_request`], then [`TestEditor::respond`].
    Queue,
    /// Answer with this result.
    Respond(Value),
    /// Answer with this error.
    RespondError(ErrorObj),
    /// `workspace/applyEdit`: apply the edit to the editor's documents (a real editor's behaviour),
    /// report it with `didChange`, answer `{"applied": true}` (or `false` with a reason when it
    /// cannot be applied, e.g. a version mismatch).
    ApplyEdits,
    /// `workspace/applyEdit`: answer `{"applied": false, "failureReason": <reason>}`.
    RejectEdits(String),
    /// Never answer.
    NeverAnswer,
    /// `stepwise/saveDocuments`: write the documents to disk, send `didSave`, answer `{"saved": uris}`.
    SaveDocuments,
    /// `workspace/configuration`: one copy of the editor's settings per item.
    Configuration,
    /// Any answer computed from the params.
    With(Answer),
}

/// A computed answer to a server request.
pub type Answer = Arc<dyn Fn(&Value) -> Result<Value, ErrorObj> + Send + Sync>;

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            Policy::Queue => "Queue",
            Policy::Respond(_) => "Respond",
            Policy::RespondError(_) => "RespondError",
            Policy::ApplyEdits => "ApplyEdits",
            Policy::RejectEdits(_) => "RejectEdits",
            Policy::NeverAnswer => "NeverAnswer",
            Policy::SaveDocuments => "SaveDocuments",
            Policy::Configuration => "Configuration",
            Policy::With(_) => "With",
        };
        f.write_str(s)
    }
}

// ------------------------------------------------------------------------------------------------
// Messages and state
// ------------------------------------------------------------------------------------------------

/// One message from the server, as the editor received it.
#[derive(Debug, Clone)]
pub enum Incoming {
    Response { id: Value, result: Result<Value, ErrorObj> },
    Notification { method: String, params: Value },
    Request { id: Value, method: String, params: Value },
}

impl Incoming {
    pub fn method(&self) -> Option<&str> {
        match self {
            Incoming::Response { .. } => None,
            Incoming::Notification { method, .. } | Incoming::Request { method, .. } => Some(method),
        }
    }
}

/// A server request the editor answered by policy.
#[derive(Debug, Clone)]
pub struct Handled {
    pub id: Value,
    pub method: String,
    pub params: Value,
    /// `None` when the policy never answers.
    pub answer: Option<Result<Value, ErrorObj>>,
}

/// A document as the editor holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub uri: String,
    pub text: String,
    pub version: i32,
    pub language_id: String,
    /// Changed since last saved.
    pub dirty: bool,
}

#[derive(Default)]
struct State {
    transcript: Vec<Incoming>,
    responses: HashMap<String, Result<Value, ErrorObj>>,
    notifications: VecDeque<(String, Value)>,
    requests: VecDeque<(Value, String, Value)>,
    handled: Vec<Handled>,
    /// Index into `handled` per method, for `await_handled`.
    handled_cursor: HashMap<String, usize>,
    framing_errors: Vec<String>,
    bytes: usize,
    frames: usize,
    closed: bool,
}

struct Inner {
    out: mpsc::UnboundedSender<Vec<u8>>,
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    docs: Mutex<BTreeMap<String, Doc>>,
    policies: Mutex<HashMap<String, Policy>>,
    ignored: Mutex<HashSet<String>>,
    encoding: Mutex<PosEncoding>,
    settings: Mutex<Value>,
    next_id: AtomicI64,
    /// Applying a text edit to a document that is not open opens it (with `didOpen`), as VS Code does.
    open_on_edit: AtomicBool,
    /// Send `didChange` before answering applyEdit (else after).
    change_before_reply: AtomicBool,
    /// When the `didChange` of an applied edit is sent.
    report_edits: Mutex<Report>,
    /// Late reports sent so far.
    late_reports: Arc<std::sync::atomic::AtomicUsize>,
}

/// When an editor reports an edit it applied (`workspace/applyEdit`) with `didChange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// At once (VS Code, Neovim).
    AtOnce,
    /// This long after answering (eglot reports after 0.5 s of idle, later while the user types).
    After(Duration),
    /// Never.
    Never,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

impl Inner {
    fn send(&self, msg: Value) {
        let body = serde_json::to_vec(&msg).expect("serialize message");
        let _ = self.out.send(frame(&body));
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn reply(&self, id: &Value, answer: &Result<Value, ErrorObj>) {
        match answer {
            Ok(result) => self.send(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err(e) => self.send(json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()})),
        }
    }

    fn framing_error(&self, what: String) {
        lock(&self.state).framing_errors.push(what);
        self.bump();
    }

    /// Sorts one parsed message from the server.
    fn dispatch(&self, msg: Value) {
        let method = msg.get("method").and_then(Value::as_str).map(str::to_string);
        let id = msg.get("id").cloned();
        if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            self.framing_error(format!("message without \"jsonrpc\": \"2.0\": {msg}"));
            return;
        }
        match (method, id) {
            (None, Some(id)) if msg.get("result").is_some() || msg.get("error").is_some() => {
                let result = match msg.get("error") {
                    Some(e) => Err(ErrorObj::from_json(e)),
                    None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                };
                let mut st = lock(&self.state);
                st.transcript.push(Incoming::Response { id: id.clone(), result: result.clone() });
                st.responses.insert(id_key(&id), result);
            }
            (Some(method), None) => {
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                let mut st = lock(&self.state);
                st.transcript.push(Incoming::Notification { method: method.clone(), params: params.clone() });
                st.notifications.push_back((method, params));
            }
            (Some(method), Some(id)) => {
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                lock(&self.state).transcript.push(Incoming::Request {
                    id: id.clone(),
                    method: method.clone(),
                    params: params.clone(),
                });
                let policy = lock(&self.policies).get(&method).cloned().unwrap_or(Policy::Queue);
                match policy {
                    Policy::Queue => lock(&self.state).requests.push_back((id, method, params)),
                    policy => {
                        let answer = self.answer(&id, &method, &params, &policy);
                        lock(&self.state).handled.push(Handled { id, method, params, answer });
                    }
                }
            }
            _ => {
                self.framing_error(format!("not a JSON-RPC request, response or notification: {msg}"));
                return;
            }
        }
        self.bump();
    }

    /// Answers a request by policy (and sends the answer); returns what was answered.
    fn answer(&self, id: &Value, method: &str, params: &Value, policy: &Policy) -> Option<Result<Value, ErrorObj>> {
        let answer = match policy {
            Policy::Queue | Policy::NeverAnswer => return None,
            Policy::Respond(v) => Ok(v.clone()),
            Policy::RespondError(e) => Err(e.clone()),
            Policy::RejectEdits(reason) => Ok(json!({"applied": false, "failureReason": reason})),
            Policy::With(f) => f(params),
            Policy::Configuration => {
                let n = params.get("items").and_then(Value::as_array).map_or(0, Vec::len);
                let s = lock(&self.settings).clone();
                Ok(Value::Array(vec![s; n]))
            }
            Policy::SaveDocuments => Ok(self.save_documents(params)),
            Policy::ApplyEdits => {
                let _ = method;
                return Some(self.apply_and_reply(id, params));
            }
        };
        self.reply(id, &answer);
        Some(answer)
    }

    fn save_documents(&self, params: &Value) -> Value {
        let uris: Vec<String> = params
            .get("uris")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|u| u.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let mut saved = Vec::new();
        for uri in uris {
            if self.save(&uri) {
                saved.push(Value::String(uri));
            }
        }
        json!({ "saved": saved })
    }

    /// Writes an open document to disk and sends `didSave`.
    fn save(&self, uri: &str) -> bool {
        let text = {
            let mut docs = lock(&self.docs);
            let Some(doc) = docs.get_mut(uri) else { return false };
            doc.dirty = false;
            doc.text.clone()
        };
        let Some(path) = uri_path(uri) else { return false };
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if std::fs::write(&path, &text).is_err() {
            return false;
        }
        self.notify("textDocument/didSave", json!({"textDocument": {"uri": uri}, "text": text}));
        true
    }

    /// Applies a `workspace/applyEdit` like an editor and answers it.
    fn apply_and_reply(&self, id: &Value, params: &Value) -> Result<Value, ErrorObj> {
        let edit = params.get("edit").cloned().unwrap_or(Value::Null);
        let change_first = self.change_before_reply.load(Ordering::Relaxed);
        let answer = match self.apply_workspace_edit(&edit) {
            Ok(changes) => {
                let ok = Ok(json!({"applied": true}));
                let report = *lock(&self.report_edits);
                if !change_first || report != Report::AtOnce {
                    self.reply(id, &ok);
                }
                for (uri, version, content_changes) in changes {
                    let msg = json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
                        "params": {"textDocument": {"uri": uri, "version": version}, "contentChanges": content_changes}});
                    match report {
                        Report::AtOnce => self.send(msg),
                        Report::Never => {}
                        Report::After(delay) => {
                            // The editor's own idle timer, not a wait of the test's.
                            let (out, sent) = (self.out.clone(), self.late_reports.clone());
                            let body = serde_json::to_vec(&msg).expect("serialize message");
                            tokio::spawn(async move {
                                tokio::time::sleep(delay).await;
                                let _ = out.send(frame(&body));
                                sent.fetch_add(1, Ordering::SeqCst);
                            });
                        }
                    }
                }
                if report != Report::AtOnce {
                    return ok;
                }
                if change_first {
                    self.reply(id, &ok);
                }
                return ok;
            }
            Err(reason) => Ok(json!({"applied": false, "failureReason": reason})),
        };
        self.reply(id, &answer);
        answer
    }

    /// Applies a workspace edit to the documents (all or nothing). Returns, per changed document, its
    /// new version and the `contentChanges` a `didChange` reports.
    fn apply_workspace_edit(&self, edit: &Value) -> Result<Vec<(String, i32, Vec<Value>)>, String> {
        let enc = *lock(&self.encoding);
        // (uri, expected version, edits) in order; resource operations first-class.
        enum Op {
            Create { uri: String, overwrite: bool, ignore_if_exists: bool },
            Text { uri: String, version: Option<i64>, edits: Vec<Value> },
        }
        let mut ops = Vec::new();
        if let Some(dc) = edit.get("documentChanges").and_then(Value::as_array) {
            for c in dc {
                match c.get("kind").and_then(Value::as_str) {
                    Some("create") => ops.push(Op::Create {
                        uri: c["uri"].as_str().unwrap_or_default().to_string(),
                        overwrite: c.pointer("/options/overwrite").and_then(Value::as_bool).unwrap_or(false),
                        ignore_if_exists: c
                            .pointer("/options/ignoreIfExists")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    }),
                    Some(other) => return Err(format!("unsupported resource operation {other}")),
                    None => ops.push(Op::Text {
                        uri: c.pointer("/textDocument/uri").and_then(Value::as_str).unwrap_or_default().to_string(),
                        version: c.pointer("/textDocument/version").and_then(Value::as_i64),
                        edits: c.get("edits").and_then(Value::as_array).cloned().unwrap_or_default(),
                    }),
                }
            }
        } else if let Some(changes) = edit.get("changes").and_then(Value::as_object) {
            for (uri, edits) in changes {
                ops.push(Op::Text {
                    uri: uri.clone(),
                    version: None,
                    edits: edits.as_array().cloned().unwrap_or_default(),
                });
            }
        } else {
            return Err("empty workspace edit".into());
        }

        // Work on a copy; commit only when everything applies.
        let mut docs = lock(&self.docs).clone();
        let mut opened: Vec<String> = Vec::new();
        let mut created: Vec<PathBuf> = Vec::new();
        let mut changed: Vec<(String, Vec<Value>)> = Vec::new();
        for op in ops {
            match op {
                Op::Create { uri, overwrite, ignore_if_exists } => {
                    let path = uri_path(&uri).ok_or_else(|| format!("not a file URI: {uri}"))?;
                    if path.exists() && !overwrite {
                        if ignore_if_exists {
                            continue;
                        }
                        return Err(format!("file already exists: {}", path.display()));
                    }
                    created.push(path);
                    // The new file is empty; an open document for it starts empty too.
                    docs.entry(uri.clone()).or_insert_with(|| {
                        opened.push(uri.clone());
                        Doc {
                            uri: uri.clone(),
                            text: String::new(),
                            version: 1,
                            language_id: language_of(&uri),
                            dirty: false,
                        }
                    });
                }
                Op::Text { uri, version, edits } => {
                    if !docs.contains_key(&uri) {
                        if !self.open_on_edit.load(Ordering::Relaxed) {
                            return Err(format!("document is not open: {uri}"));
                        }
                        let path = uri_path(&uri).ok_or_else(|| format!("not a file URI: {uri}"))?;
                        let text = match std::fs::read_to_string(&path) {
                            Ok(t) => t,
                            Err(_) if created.contains(&path) => String::new(),
                            Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
                        };
                        opened.push(uri.clone());
                        docs.insert(
                            uri.clone(),
                            Doc { uri: uri.clone(), text, version: 1, language_id: language_of(&uri), dirty: false },
                        );
                    }
                    let doc = docs.get_mut(&uri).unwrap();
                    if let Some(v) = version {
                        if v != doc.version as i64 {
                            return Err(format!(
                                "the document {uri} changed: the edit is for version {v}, the editor has version {}",
                                doc.version
                            ));
                        }
                    }
                    // Edits of one document never overlap and are relative to the text before the edit:
                    // apply from the end so earlier ranges stay valid, and report them in that order.
                    let mut spans = Vec::new();
                    for e in &edits {
                        let r = &e["range"];
                        let (sl, sc) = pos_of(&r["start"]);
                        let (el, ec) = pos_of(&r["end"]);
                        let start = offset_at(&doc.text, sl, sc, enc);
                        let end = offset_at(&doc.text, el, ec, enc);
                        if end < start {
                            return Err(format!("bad range {r}"));
                        }
                        let new_text = e["newText"].as_str().ok_or("edit without newText")?.to_string();
                        spans.push((start, end, r.clone(), new_text));
                    }
                    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
                    for w in spans.windows(2) {
                        if w[1].1 > w[0].0 {
                            return Err("overlapping edits".into());
                        }
                    }
                    let mut reported = Vec::new();
                    for (start, end, r, new_text) in spans {
                        doc.text.replace_range(start..end, &new_text);
                        reported.push(json!({"range": r, "text": new_text}));
                    }
                    doc.dirty = true;
                    match changed.iter_mut().find(|(u, _)| *u == uri) {
                        Some((_, list)) => list.extend(reported),
                        None => changed.push((uri.clone(), reported)),
                    }
                }
            }
        }
        // Commit: files created on disk, documents opened, versions bumped.
        for path in &created {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::write(path, "").map_err(|e| e.to_string())?;
        }
        let mut out = Vec::new();
        {
            let mut live = lock(&self.docs);
            for uri in &opened {
                let d = &docs[uri];
                // Opened with the text it had before this edit.
                let before = if created.iter().any(|p| Some(p.clone()) == uri_path(uri)) {
                    String::new()
                } else {
                    uri_path(uri).and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default()
                };
                self.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": d.language_id, "version": 1, "text": before}}),
                );
            }
            for (uri, content_changes) in changed {
                let doc = docs.get_mut(&uri).unwrap();
                doc.version += 1;
                out.push((uri.clone(), doc.version, content_changes));
            }
            *live = docs;
        }
        Ok(out)
    }
}

fn language_of(uri: &str) -> String {
    match uri.rsplit('.').next() {
        Some("rs") => "rust",
        Some("py") => "python",
        Some("md") => "markdown",
        Some("js") => "javascript",
        Some("ts") => "typescript",
        _ => "plaintext",
    }
    .to_string()
}

// ------------------------------------------------------------------------------------------------
// Framing
// ------------------------------------------------------------------------------------------------

/// Reads LSP frames until the stream ends, checking each one strictly.
async fn read_loop<R: AsyncRead + Unpin>(inner: Arc<Inner>, reader: R) {
    let mut r = BufReader::new(reader);
    loop {
        let mut length: Option<usize> = None;
        let mut header_bytes = 0usize;
        let mut first = true;
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line).await {
                Ok(0) => {
                    if !first || header_bytes > 0 {
                        inner.framing_error("stream ended inside a header".into());
                    }
                    finish_reading(&inner);
                    return;
                }
                Ok(n) => header_bytes += n,
                Err(e) => {
                    inner.framing_error(format!("read error: {e}"));
                    finish_reading(&inner);
                    return;
                }
            }
            first = false;
            if !line.ends_with(b"\r\n") {
                inner.framing_error(format!("header line not ended by CRLF: {:?}", String::from_utf8_lossy(&line)));
                continue;
            }
            let text = String::from_utf8_lossy(&line[..line.len() - 2]).into_owned();
            if text.is_empty() {
                break;
            }
            match text.split_once(':') {
                Some((name, value)) if name.eq_ignore_ascii_case("Content-Length") => match value.trim().parse() {
                    Ok(n) => length = Some(n),
                    Err(_) => inner.framing_error(format!("bad Content-Length: {text:?}")),
                },
                Some((name, value)) if name.eq_ignore_ascii_case("Content-Type") => {
                    if !value.contains("utf-8") && !value.contains("utf8") {
                        inner.framing_error(format!("unexpected Content-Type: {text:?}"));
                    }
                }
                _ => inner.framing_error(format!("unexpected header line: {text:?}")),
            }
        }
        let Some(n) = length else {
            inner.framing_error("frame without Content-Length".into());
            continue;
        };
        let mut body = vec![0u8; n];
        if let Err(e) = r.read_exact(&mut body).await {
            inner.framing_error(format!("stream ended inside a {n}-byte body: {e}"));
            finish_reading(&inner);
            return;
        }
        {
            let mut st = lock(&inner.state);
            st.bytes += header_bytes + n;
            st.frames += 1;
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(v) => inner.dispatch(v),
            Err(e) => inner.framing_error(format!("body is not JSON ({e}): {:?}", String::from_utf8_lossy(&body))),
        }
    }
}

fn finish_reading(inner: &Inner) {
    lock(&inner.state).closed = true;
    inner.bump();
}

async fn write_loop<W: AsyncWrite + Unpin>(mut w: W, mut rx: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(bytes) = rx.recv().await {
        // The empty message is `vanish`: the editor is gone, its end of the pipe closes.
        if bytes.is_empty() {
            break;
        }
        if w.write_all(&bytes).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
    let _ = w.shutdown().await;
}

// ------------------------------------------------------------------------------------------------
// The real binary
// ------------------------------------------------------------------------------------------------

/// The path of the `stepwise` binary, built once per process with `cargo build -p stepwise`
/// (`--release` when asked). `STEPWISE_BIN` names a prebuilt binary instead.
pub fn stepwise_binary(release: bool) -> PathBuf {
    static DEBUG: OnceLock<PathBuf> = OnceLock::new();
    static RELEASE: OnceLock<PathBuf> = OnceLock::new();
    if let Some(p) = std::env::var_os("STEPWISE_BIN") {
        return PathBuf::from(p);
    }
    let cell = if release { &RELEASE } else { &DEBUG };
    cell.get_or_init(|| build_binary(release)).clone()
}

fn build_binary(release: bool) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/Cargo.toml");
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--quiet", "--message-format=json", "--bin", "stepwise", "--manifest-path"]).arg(&manifest);
    if release {
        cmd.arg("--release");
    }
    let out = cmd.stderr(Stdio::inherit()).output().expect("cannot run cargo to build the stepwise binary");
    assert!(out.status.success(), "cargo build of the stepwise binary failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v["reason"] == "compiler-artifact" && v["target"]["name"] == "stepwise" {
            if let Some(exe) = v["executable"].as_str() {
                return PathBuf::from(exe);
            }
        }
    }
    panic!("cargo build did not report the stepwise executable");
}

// ------------------------------------------------------------------------------------------------
// Builder
// ------------------------------------------------------------------------------------------------

enum Transport {
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
            init_options: Map::new(),
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

enum ServerProc {
    Task(Option<JoinHandle<()>>),
    Child { child: tokio::process::Child, stderr: Arc<Mutex<Vec<u8>>> },
}

// ------------------------------------------------------------------------------------------------
// The editor
// ------------------------------------------------------------------------------------------------

/// Everything one run sent, in arrival order, up to and including its `idle` status.
#[derive(Debug, Clone, Default)]
pub struct RunLog {
    pub run_id: String,
    pub workspace: String,
    /// Every notification of the run, in order: `(method, params)`.
    pub all: Vec<(String, Value)>,
}

impl RunLog {
    pub fn of(&self, method: &str) -> Vec<Value> {
        self.all.iter().filter(|(m, _)| m == method).map(|(_, p)| p.clone()).collect()
    }
    pub fn statuses(&self) -> Vec<Value> {
        self.of("stepwise/status")
    }
    pub fn plans(&self) -> Vec<Value> {
        self.of("stepwise/plan")
    }
    pub fn tool_calls(&self) -> Vec<Value> {
        self.of("stepwise/toolCall")
    }
    pub fn usage(&self) -> Vec<Value> {
        self.of("stepwise/usage")
    }
    pub fn progress(&self) -> Vec<Value> {
        self.of("$/progress")
    }
    /// All assistant text, joined.
    pub fn text(&self) -> String {
        self.of("stepwise/assistantText").iter().filter_map(|p| p["text"].as_str()).collect()
    }
    /// The final `idle` status.
    pub fn idle(&self) -> Value {
        self.statuses().last().cloned().unwrap_or(Value::Null)
    }
    pub fn reason(&self) -> String {
        self.idle()["reason"].as_str().unwrap_or("").to_string()
    }
    /// The tool outputs of finished calls, in order: `(name, output, isError)`.
    pub fn results(&self) -> Vec<(String, String, bool)> {
        self.tool_calls()
            .iter()
            .filter(|c| c["phase"] == "finished")
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["output"].as_str().unwrap_or("").to_string(),
                    c["isError"].as_bool().unwrap_or(false),
                )
            })
            .collect()
    }
}

/// The fake editor. See the module docs.
pub struct TestEditor {
    inner: Arc<Inner>,
    server: ServerProc,
    pid: Option<u32>,
    folders: Vec<(PathBuf, String)>,
    capabilities: Value,
    root_uri_only: bool,
    init_options: Value,
    init_result: Value,
    timeout: Duration,
    finished: bool,
    _preset: ClientPreset,
}

impl TestEditor {
    pub fn builder(preset: ClientPreset) -> EditorBuilder {
        EditorBuilder::new(preset)
    }

    // ---- connection ---------------------------------------------------------------------------

    /// `initialize` (negotiating the position encoding) and `initialized`.
    pub async fn initialize(&mut self) -> Result<Value, ErrorObj> {
        let folders: Vec<Value> = self
            .folders
            .iter()
            .map(|(p, uri)| json!({"uri": uri, "name": p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()}))
            .collect();
        let mut params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "stepwise-test-editor", "version": "0"},
            "rootUri": self.folders.first().map(|(_, u)| Value::String(u.clone())).unwrap_or(Value::Null),
            "capabilities": self.capabilities,
            "initializationOptions": self.init_options,
            "trace": "off",
        });
        if !self.root_uri_only {
            params["workspaceFolders"] = if folders.is_empty() { Value::Null } else { Value::Array(folders) };
        }
        let result = self.request("initialize", params).await?;
        if let Some(enc) =
            result.pointer("/capabilities/positionEncoding").and_then(Value::as_str).and_then(PosEncoding::parse)
        {
            *lock(&self.inner.encoding) = enc;
        }
        self.init_result = result.clone();
        self.notify("initialized", json!({}));
        Ok(result)
    }

    pub fn initialize_result(&self) -> &Value {
        &self.init_result
    }

    pub fn encoding(&self) -> PosEncoding {
        *lock(&self.inner.encoding)
    }

    /// The server process id (binary transport).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// What the binary wrote to stderr so far.
    pub fn stderr(&self) -> String {
        match &self.server {
            ServerProc::Child { stderr, .. } => String::from_utf8_lossy(&lock(stderr)).into_owned(),
            ServerProc::Task(_) => String::new(),
        }
    }

    /// Problems found in the server's output stream (bad headers, bodies that are not JSON-RPC).
    pub fn framing_errors(&self) -> Vec<String> {
        lock(&self.inner.state).framing_errors.clone()
    }

    /// Bytes and frames read from the server so far.
    pub fn bytes_read(&self) -> (usize, usize) {
        let st = lock(&self.inner.state);
        (st.bytes, st.frames)
    }

    /// Every message received so far, in order.
    pub fn transcript(&self) -> Vec<Incoming> {
        lock(&self.inner.state).transcript.clone()
    }

    /// `shutdown` then `exit`; waits for the server to stop.
    pub async fn shutdown(&mut self) {
        let r = self.request("shutdown", Value::Null).await;
        assert_eq!(r, Ok(Value::Null), "shutdown");
        self.notify("exit", Value::Null);
        if !self.wait_server_exit(Duration::from_secs(5)).await {
            panic!("the server did not stop after exit; stderr:\n{}", self.stderr());
        }
    }

    /// Waits until the server task ends / the process exits.
    pub async fn wait_server_exit(&mut self, timeout: Duration) -> bool {
        match &mut self.server {
            ServerProc::Task(task) => match task.as_mut() {
                None => true,
                Some(t) => {
                    let done = tokio::time::timeout(timeout, t).await.is_ok();
                    if done {
                        *task = None;
                    }
                    done
                }
            },
            ServerProc::Child { child, .. } => tokio::time::timeout(timeout, child.wait()).await.is_ok(),
        }
    }

    /// The process exit status (binary transport), once it has exited.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        match &mut self.server {
            ServerProc::Child { child, .. } => child.try_wait().ok().flatten(),
            ServerProc::Task(_) => None,
        }
    }

    /// Shuts the server down and checks that nothing went unread.
    pub async fn finish(mut self) {
        self.shutdown().await;
        // Late messages (e.g. a code lens refresh) have had their chance to arrive.
        self.check_unread();
        self.finished = true;
    }

    /// The editor disappears (crash, kill): the server's stdin closes with no `shutdown` or `exit`.
    /// Returns the binary's exit status once it has ended.
    pub async fn vanish(mut self) -> std::process::ExitStatus {
        self.finished = true;
        let _ = self.inner.out.send(Vec::new());
        let ServerProc::Child { child, .. } = &mut self.server else { panic!("vanish needs the real binary") };
        tokio::time::timeout(self.timeout, child.wait())
            .await
            .expect("the server did not exit after its editor vanished")
            .expect("cannot wait for the server")
    }

    /// Checks that nothing went unread, without shutting down.
    pub fn finish_without_shutdown(mut self) {
        self.check_unread();
        self.finished = true;
    }

    fn unread(&self) -> Vec<String> {
        let st = lock(&self.inner.state);
        let ignored = lock(&self.inner.ignored);
        let mut out = Vec::new();
        for (m, p) in &st.notifications {
            if !ignored.contains(m) {
                out.push(format!("notification {m} {p}"));
            }
        }
        for (id, m, p) in &st.requests {
            if !ignored.contains(m) {
                out.push(format!("request #{id} {m} {p}"));
            }
        }
        for e in &st.framing_errors {
            out.push(format!("framing error: {e}"));
        }
        out
    }

    fn check_unread(&self) {
        let unread = self.unread();
        if !unread.is_empty() {
            panic!("the test left {} message(s) from the server unread:\n  {}", unread.len(), unread.join("\n  "));
        }
    }

    /// A one-line-per-message summary of what is waiting, for failure messages.
    pub fn pending_summary(&self) -> String {
        let st = lock(&self.inner.state);
        let mut s = String::new();
        for (m, p) in &st.notifications {
            s.push_str(&format!("\n  notification {m} {}", short(p)));
        }
        for (id, m, p) in &st.requests {
            s.push_str(&format!("\n  request #{id} {m} {}", short(p)));
        }
        if s.is_empty() {
            s.push_str(" (nothing)");
        }
        if st.closed {
            s.push_str("\n  (the server closed its output)");
        }
        s
    }

    // ---- configuration ------------------------------------------------------------------------

    pub fn set_policy(&self, method: &str, policy: Policy) {
        lock(&self.inner.policies).insert(method.into(), policy);
    }

    /// Notifications (and queued requests) of these methods may go unread.
    pub fn ignore(&self, methods: &[&str]) {
        lock(&self.inner.ignored).extend(methods.iter().map(|m| m.to_string()));
    }

    /// Changes what `workspace/configuration` answers.
    pub fn set_settings(&self, settings: Value) {
        *lock(&self.inner.settings) = settings;
    }

    // ---- folders and URIs ---------------------------------------------------------------------

    /// The URI of workspace folder `i`, as sent in `initialize`.
    pub fn folder_uri(&self, i: usize) -> String {
        self.folders[i].1.clone()
    }

    pub fn folder_path(&self, i: usize) -> PathBuf {
        self.folders[i].0.clone()
    }

    /// The URI of a file: relative paths are taken in the first folder.
    pub fn uri(&self, path: impl AsRef<Path>) -> String {
        let p = path.as_ref();
        if p.is_absolute() {
            file_uri(p)
        } else {
            file_uri(&self.folders[0].0.join(p))
        }
    }

    // ---- sending ------------------------------------------------------------------------------

    pub fn notify(&self, method: &str, params: Value) {
        self.inner.notify(method, params);
    }

    /// Sends a request and returns its id without waiting.
    pub fn send_request(&self, method: &str, params: Value) -> Value {
        let id = json!(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        self.inner.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends raw bytes as they are (no framing).
    pub fn send_raw(&self, bytes: &[u8]) {
        let _ = self.inner.out.send(bytes.to_vec());
    }

    /// Sends `body` in a correct frame (whatever it contains).
    pub fn send_frame(&self, body: &[u8]) {
        let _ = self.inner.out.send(frame(body));
    }

    /// A request, answered within the editor's timeout (panics otherwise).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObj> {
        let id = self.send_request(method, params);
        self.await_response(&id, self.timeout).await
    }

    /// Waits for the response to request `id`.
    pub async fn await_response(&self, id: &Value, timeout: Duration) -> Result<Value, ErrorObj> {
        let key = id_key(id);
        match self.wait(timeout, |st| st.responses.remove(&key)).await {
            Some(r) => r,
            None => panic!("no response to request {id} within {timeout:?}; waiting:{}", self.pending_summary()),
        }
    }

    /// `Some(response)` if the response to `id` arrives within `timeout`.
    pub async fn try_response(&self, id: &Value, timeout: Duration) -> Option<Result<Value, ErrorObj>> {
        let key = id_key(id);
        self.wait(timeout, |st| st.responses.remove(&key)).await
    }

    /// Waits until `f` finds what it looks for in everything received so far.
    pub async fn await_transcript<T>(
        &self,
        timeout: Duration,
        mut f: impl FnMut(&[Incoming]) -> Option<T>,
    ) -> Option<T> {
        self.wait(timeout, |st| f(&st.transcript)).await
    }

    // ---- receiving ----------------------------------------------------------------------------

    async fn wait<T>(&self, timeout: Duration, mut f: impl FnMut(&mut State) -> Option<T>) -> Option<T> {
        let mut rx = self.inner.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            {
                let mut st = lock(&self.inner.state);
                if let Some(t) = f(&mut st) {
                    return Some(t);
                }
                if st.closed {
                    return None;
                }
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    // One last look.
                    let mut st = lock(&self.inner.state);
                    return f(&mut st);
                }
            }
        }
    }

    /// The next unread notification of `method` (panics after the default timeout).
    pub async fn await_notification(&self, method: &str) -> Value {
        self.await_notification_timeout(method, self.timeout).await
    }

    pub async fn await_notification_timeout(&self, method: &str, timeout: Duration) -> Value {
        self.await_notification_matching(method, |_| true, timeout).await
    }

    /// The first unread notification of `method` for which `pred` holds; others stay unread.
    pub async fn await_notification_matching(
        &self,
        method: &str,
        pred: impl Fn(&Value) -> bool,
        timeout: Duration,
    ) -> Value {
        match self.try_notification_matching(method, pred, timeout).await {
            Some(v) => v,
            None => panic!("no matching {method} notification within {timeout:?}; waiting:{}", self.pending_summary()),
        }
    }

    pub async fn try_notification_matching(
        &self,
        method: &str,
        pred: impl Fn(&Value) -> bool,
        timeout: Duration,
    ) -> Option<Value> {
        self.wait(timeout, |st| {
            let i = st.notifications.iter().position(|(m, p)| m == method && pred(p))?;
            st.notifications.remove(i).map(|(_, p)| p)
        })
        .await
    }

    /// Takes every unread notification of `method` received so far.
    pub fn drain(&self, method: &str) -> Vec<Value> {
        let mut st = lock(&self.inner.state);
        let mut out = Vec::new();
        st.notifications.retain(|(m, p)| {
            if m == method {
                out.push(p.clone());
                false
            } else {
                true
            }
        });
        out
    }

    /// The params of every notification of `method` received so far (read or not), in arrival order.
    pub fn received(&self, method: &str) -> Vec<Value> {
        lock(&self.inner.state)
            .transcript
            .iter()
            .filter_map(|m| match m {
                Incoming::Notification { method: m2, params } if m2 == method => Some(params.clone()),
                _ => None,
            })
            .collect()
    }

    /// Whether a notification of `method` matching `pred` was received at any time (read or not).
    pub fn has_received(&self, method: &str, pred: impl Fn(&Value) -> bool) -> bool {
        lock(&self.inner.state)
            .transcript
            .iter()
            .any(|m| matches!(m, Incoming::Notification { method: m2, params } if m2 == method && pred(params)))
    }

    /// Takes every unread notification received so far.
    pub fn drain_all(&self) -> Vec<(String, Value)> {
        lock(&self.inner.state).notifications.drain(..).collect()
    }

    /// The next queued server request of `method`: `(id, params)`.
    pub async fn await_request(&self, method: &str, timeout: Duration) -> (Value, Value) {
        match self.try_request(method, timeout).await {
            Some(r) => r,
            None => panic!("no {method} request within {timeout:?}; waiting:{}", self.pending_summary()),
        }
    }

    pub async fn try_request(&self, method: &str, timeout: Duration) -> Option<(Value, Value)> {
        self.wait(timeout, |st| {
            let i = st.requests.iter().position(|(_, m, _)| m == method)?;
            st.requests.remove(i).map(|(id, _, p)| (id, p))
        })
        .await
    }

    pub fn respond(&self, id: &Value, result: Value) {
        self.inner.reply(id, &Ok(result));
    }

    pub fn respond_error(&self, id: &Value, code: i64, message: &str) {
        self.inner.reply(id, &Err(ErrorObj::new(code, message)));
    }

    /// How many late `didChange` reports ([`Report::After`]) the editor has sent.
    pub fn late_reports_sent(&self) -> usize {
        self.inner.late_reports.load(Ordering::SeqCst)
    }

    /// Answers a queued `workspace/applyEdit` as [`Policy::ApplyEdits`] would.
    pub fn accept_edit(&self, id: &Value, params: &Value) -> Value {
        self.inner.apply_and_reply(id, params).unwrap_or(Value::Null)
    }

    /// Requests the editor answered by policy, of `method`, so far.
    pub fn handled(&self, method: &str) -> Vec<Handled> {
        lock(&self.inner.state).handled.iter().filter(|h| h.method == method).cloned().collect()
    }

    /// The next request of `method` answered by policy (each is returned once).
    pub async fn await_handled(&self, method: &str, timeout: Duration) -> Handled {
        let m = method.to_string();
        let got = self
            .wait(timeout, |st| {
                let from = st.handled_cursor.get(&m).copied().unwrap_or(0);
                let i = st.handled.iter().enumerate().skip(from).find(|(_, h)| h.method == m).map(|(i, _)| i)?;
                st.handled_cursor.insert(m.clone(), i + 1);
                Some(st.handled[i].clone())
            })
            .await;
        got.unwrap_or_else(|| {
            panic!("no {method} request answered within {timeout:?}; waiting:{}", self.pending_summary())
        })
    }

    // ---- documents ----------------------------------------------------------------------------

    /// `didOpen` (version 1); returns the URI.
    pub fn open(&self, path: impl AsRef<Path>, text: &str) -> String {
        let uri = self.uri(path);
        let doc = Doc { uri: uri.clone(), text: text.into(), version: 1, language_id: language_of(&uri), dirty: false };
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": doc.language_id, "version": 1, "text": text}}),
        );
        lock(&self.inner.docs).insert(uri.clone(), doc);
        uri
    }

    /// `didChange` replacing the whole text.
    pub fn change_full(&self, uri: &str, text: &str) -> i32 {
        let version = {
            let mut docs = lock(&self.inner.docs);
            let doc = docs.get_mut(uri).unwrap_or_else(|| panic!("{uri} is not open"));
            doc.text = text.into();
            doc.version += 1;
            doc.dirty = true;
            doc.version
        };
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
        version
    }

    /// `didChange` replacing `range` (positions in the negotiated encoding) with `text`.
    pub fn change_incremental(&self, uri: &str, start: (u32, u32), end: (u32, u32), text: &str) -> i32 {
        let enc = self.encoding();
        let version = {
            let mut docs = lock(&self.inner.docs);
            let doc = docs.get_mut(uri).unwrap_or_else(|| panic!("{uri} is not open"));
            let a = offset_at(&doc.text, start.0, start.1, enc);
            let b = offset_at(&doc.text, end.0, end.1, enc);
            doc.text.replace_range(a..b, text);
            doc.version += 1;
            doc.dirty = true;
            doc.version
        };
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"range": range(start, end), "text": text}]}),
        );
        version
    }

    /// Writes the document to disk and sends `didSave`.
    pub fn save(&self, uri: &str) {
        assert!(self.inner.save(uri), "cannot save {uri}");
    }

    pub fn close(&self, uri: &str) {
        lock(&self.inner.docs).remove(uri);
        self.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
    }

    /// The editor's text of a document.
    pub fn text(&self, uri: &str) -> Option<String> {
        lock(&self.inner.docs).get(uri).map(|d| d.text.clone())
    }

    pub fn doc(&self, uri: &str) -> Option<Doc> {
        lock(&self.inner.docs).get(uri).cloned()
    }

    /// Position of a byte offset of an open document, in the negotiated encoding.
    pub fn position(&self, uri: &str, offset: usize) -> (u32, u32) {
        let docs = lock(&self.inner.docs);
        position_at(&docs[uri].text, offset, self.encoding())
    }

    // ---- stepwise -----------------------------------------------------------------------------

    pub async fn execute(&self, command: &str, args: Value) -> Result<Value, ErrorObj> {
        let arguments = if args.is_null() { json!([]) } else { json!([args]) };
        self.request("workspace/executeCommand", json!({"command": command, "arguments": arguments})).await
    }

    /// `stepwise.run` in folder `ws` (its URI); returns the run id.
    pub async fn start_run(&self, ws: &str, prompt: &str) -> String {
        let r = self.execute("stepwise.run", json!({"prompt": prompt, "workspace": ws})).await;
        let r = r.unwrap_or_else(|e| panic!("stepwise.run failed: {e}"));
        r["runId"].as_str().unwrap_or_else(|| panic!("stepwise.run answered {r}")).to_string()
    }

    /// Waits for run `run_id` in `ws` to end; takes every notification it sent (status, plan, tool
    /// calls, text, usage, reminders, its `$/progress`) up to and including its `idle` status.
    pub async fn await_run(&self, ws: &str, run_id: &str, timeout: Duration) -> RunLog {
        let token = format!("stepwise/{run_id}");
        let belongs = |m: &str, p: &Value| -> bool {
            if m == "$/progress" {
                return p["token"] == token.as_str();
            }
            m.starts_with("stepwise/") && p["workspace"] == ws && (p.get("runId").is_none() || p["runId"] == run_id)
        };
        let is_end = |m: &str, p: &Value| m == "stepwise/status" && p["state"] == "idle" && p["runId"] == run_id;
        let done = self
            .wait(timeout, |st| {
                let end = st.notifications.iter().position(|(m, p)| is_end(m, p))?;
                let mut all = Vec::new();
                let mut idx = 0;
                st.notifications.retain(|(m, p)| {
                    let keep = if idx <= end && belongs(m, p) {
                        all.push((m.clone(), p.clone()));
                        false
                    } else {
                        true
                    };
                    idx += 1;
                    keep
                });
                Some(all)
            })
            .await;
        match done {
            Some(all) => RunLog { run_id: run_id.into(), workspace: ws.into(), all },
            None => panic!("run {run_id} did not end within {timeout:?}; waiting:{}", self.pending_summary()),
        }
    }

    /// Starts a run in the first folder and waits for its end.
    pub async fn run(&self, prompt: &str) -> RunLog {
        let ws = self.folder_uri(0);
        let id = self.start_run(&ws, prompt).await;
        self.await_run(&ws, &id, self.timeout).await
    }

    /// `textDocument/codeLens` for a document.
    pub async fn code_lens(&self, uri: &str) -> Vec<Value> {
        let r = self.request("textDocument/codeLens", json!({"textDocument": {"uri": uri}})).await;
        match r {
            Ok(Value::Array(a)) => a,
            Ok(Value::Null) => Vec::new(),
            other => panic!("codeLens answered {other:?}"),
        }
    }

    /// The titles of a document's code lenses with their lines: `(line, title)`.
    pub async fn lens_titles(&self, uri: &str) -> Vec<(u32, String)> {
        self.code_lens(uri)
            .await
            .iter()
            .map(|l| {
                (
                    l.pointer("/range/start/line").and_then(Value::as_u64).unwrap_or(u64::MAX) as u32,
                    l.pointer("/command/title").and_then(Value::as_str).unwrap_or("").to_string(),
                )
            })
            .collect()
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 300 {
        format!("{}…", s.chars().take(300).collect::<String>())
    } else {
        s
    }
}

impl Drop for TestEditor {
    fn drop(&mut self) {
        if let ServerProc::Task(Some(t)) = &self.server {
            t.abort();
        }
        if let ServerProc::Child { child, .. } = &mut self.server {
            let _ = child.start_kill();
        }
        if !self.finished && !std::thread::panicking() {
            let unread = self.unread();
            if !unread.is_empty() {
                panic!("the test left {} message(s) from the server unread:\n  {}", unread.len(), unread.join("\n  "));
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Helpers for tests
// ------------------------------------------------------------------------------------------------

/// The transcript notifications of a run (progress, usage, assistant text, tool calls): tests that
/// look only at a run's outcome pass them to [`EditorBuilder::ignore`].
pub const TRANSCRIPT: [&str; 4] = ["$/progress", "stepwise/usage", "stepwise/assistantText", "stepwise/toolCall"];

/// A test's workspace folder and the directory its server saves sessions in: tagged `tag` and
/// `{tag}-state`.
pub fn folder_and_state(tag: &str) -> (TempDir, TempDir) {
    (TempDir::new(tag), TempDir::new(&format!("{tag}-state")))
}

/// The usual editor of one folder: `dir` as its only folder, sessions saved in `state`, and `mock` as
/// the model. Add options, policies and ignored methods, then [`EditorBuilder::start`] it.
pub fn editor(preset: ClientPreset, dir: &TempDir, state: &TempDir, mock: &MockModel) -> EditorBuilder {
    TestEditor::builder(preset).folder(dir.path()).mock(mock).state_dir(state.path())
}

/// The tool results of the last message of a model request body: `(content, is_error)`.
pub fn tool_results(body: &Value) -> Vec<(String, bool)> {
    let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or(Value::Null);
    last["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    let content = match &b["content"] {
                        Value::String(s) => s.clone(),
                        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                        other => other.to_string(),
                    };
                    (content, b["is_error"].as_bool().unwrap_or(false))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Checks that a conversation alternates roles, starts with the user, and that every tool use is
/// answered by exactly one tool result in the next message.
pub fn assert_valid_conversation(body: &Value) {
    let msgs = body["messages"].as_array().expect("messages");
    assert!(!msgs.is_empty());
    assert_eq!(msgs[0]["role"], "user", "{body}");
    for (i, w) in msgs.windows(2).enumerate() {
        assert_ne!(w[0]["role"], w[1]["role"], "roles do not alternate at {i}: {body}");
    }
    for (i, m) in msgs.iter().enumerate() {
        if m["role"] != "assistant" {
            continue;
        }
        let uses: Vec<&str> = m["content"]
            .as_array()
            .map(|b| b.iter().filter(|b| b["type"] == "tool_use").filter_map(|b| b["id"].as_str()).collect())
            .unwrap_or_default();
        if uses.is_empty() {
            continue;
        }
        let next = msgs.get(i + 1).unwrap_or_else(|| panic!("tool use without results at {i}: {body}"));
        let results: Vec<&str> = next["content"]
            .as_array()
            .map(|b| {
                b.iter().filter(|b| b["type"] == "tool_result").filter_map(|b| b["tool_use_id"].as_str()).collect()
            })
            .unwrap_or_default();
        assert_eq!(uses, results, "tool uses and results differ at {i}: {body}");
    }
}

/// Waits (polling) until `f` holds; panics after `timeout`.
pub async fn eventually(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        if start.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
