//! The fake editor: requests, waits on what the server sent, documents, and the unread check.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::builder::*;
use super::policy::*;
use super::positions::*;
use super::state::*;
use super::ErrorObj;

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
    pub(crate) inner: Arc<Inner>,
    pub(crate) server: ServerProc,
    pub(crate) pid: Option<u32>,
    pub(crate) folders: Vec<(PathBuf, String)>,
    pub(crate) capabilities: Value,
    pub(crate) root_uri_only: bool,
    pub(crate) init_options: Value,
    pub(crate) init_result: Value,
    pub(crate) timeout: Duration,
    pub(crate) finished: bool,
    pub(crate) _preset: ClientPreset,
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
        self.start_run_in(ws, "main", prompt).await
    }

    /// [`Self::start_run`] in one of the folder's sessions (`main`: the folder's own).
    pub async fn start_run_in(&self, ws: &str, session: &str, prompt: &str) -> String {
        let r = self.execute("stepwise.run", json!({"prompt": prompt, "workspace": ws, "session": session})).await;
        let r = r.unwrap_or_else(|e| panic!("stepwise.run failed: {e}"));
        r["runId"].as_str().unwrap_or_else(|| panic!("stepwise.run answered {r}")).to_string()
    }

    /// Waits for run `run_id` in `ws` to end; takes every notification it sent (status, plan, tool
    /// calls, text, usage, reminders, its `$/progress`) up to and including its `idle` status.
    /// `stepwise/background` stays unread: the folder's tasks outlive the run that started them, and a
    /// test waiting for a task's state must still find the notification that came before the run ended.
    pub async fn await_run(&self, ws: &str, run_id: &str, timeout: Duration) -> RunLog {
        let token = format!("stepwise/{run_id}");
        let belongs = |m: &str, p: &Value| -> bool {
            if m == "$/progress" {
                return p["token"] == token.as_str();
            }
            m.starts_with("stepwise/")
                && m != "stepwise/background"
                && p["workspace"] == ws
                && (p.get("runId").is_none() || p["runId"] == run_id)
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

pub(crate) fn short(v: &Value) -> String {
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
