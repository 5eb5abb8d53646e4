//! What the editor received and holds: message queues, documents, and the answers to server requests.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use super::policy::*;
use super::positions::*;
use super::ErrorObj;

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
pub(crate) struct State {
    pub(crate) transcript: Vec<Incoming>,
    pub(crate) responses: HashMap<String, Result<Value, ErrorObj>>,
    pub(crate) notifications: VecDeque<(String, Value)>,
    pub(crate) requests: VecDeque<(Value, String, Value)>,
    pub(crate) handled: Vec<Handled>,
    /// Index into `handled` per method, for `await_handled`.
    pub(crate) handled_cursor: HashMap<String, usize>,
    pub(crate) framing_errors: Vec<String>,
    pub(crate) bytes: usize,
    pub(crate) frames: usize,
    pub(crate) closed: bool,
}

pub(crate) struct Inner {
    pub(crate) out: mpsc::UnboundedSender<Vec<u8>>,
    pub(crate) state: Mutex<State>,
    pub(crate) changed: watch::Sender<u64>,
    pub(crate) docs: Mutex<BTreeMap<String, Doc>>,
    pub(crate) policies: Mutex<HashMap<String, Policy>>,
    pub(crate) ignored: Mutex<HashSet<String>>,
    pub(crate) encoding: Mutex<PosEncoding>,
    pub(crate) settings: Mutex<Value>,
    pub(crate) next_id: AtomicI64,
    /// Applying a text edit to a document that is not open opens it (with `didOpen`), as VS Code does.
    pub(crate) open_on_edit: AtomicBool,
    /// Send `didChange` before answering applyEdit (else after).
    pub(crate) change_before_reply: AtomicBool,
    /// When the `didChange` of an applied edit is sent.
    pub(crate) report_edits: Mutex<Report>,
    /// Late reports sent so far.
    pub(crate) late_reports: Arc<std::sync::atomic::AtomicUsize>,
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn id_key(id: &Value) -> String {
    id.to_string()
}

pub(crate) fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

impl Inner {
    pub(crate) fn send(&self, msg: Value) {
        let body = serde_json::to_vec(&msg).expect("serialize message");
        let _ = self.out.send(frame(&body));
    }

    pub(crate) fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    pub(crate) fn reply(&self, id: &Value, answer: &Result<Value, ErrorObj>) {
        match answer {
            Ok(result) => self.send(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err(e) => self.send(json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()})),
        }
    }

    pub(crate) fn framing_error(&self, what: String) {
        lock(&self.state).framing_errors.push(what);
        self.bump();
    }

    /// Sorts one parsed message from the server.
    pub(crate) fn dispatch(&self, msg: Value) {
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
    pub(crate) fn save(&self, uri: &str) -> bool {
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
    pub(crate) fn apply_and_reply(&self, id: &Value, params: &Value) -> Result<Value, ErrorObj> {
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

pub(crate) fn language_of(uri: &str) -> String {
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
