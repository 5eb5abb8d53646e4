//! The editor as the source of code intelligence (issue 36). When the client declared
//! `experimental.stepwise.query` in `initialize`, every question of the engine's seam (`intel::Intelligence`)
//! becomes a `stepwise/query` request, answered from the editor's own language servers: the editor sees their
//! events, so it does the waiting for diagnostics, told which document versions the agent wrote. Then
//! stepwise starts no language server of its own for the session.

mod recode;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tower_lsp_server::ls_types::{Diagnostic, GotoDefinitionResponse, Location, Uri};

use super::ext::{self, QueryDocument, QueryKind, QueryParams, QueryPosition};
use super::shared::Shared;
use crate::intel::source::KEEP_PER_FILE;
use crate::intel::{Answer, Checked, DiagnosticsRequest, FileDiagnostics, Intelligence, Query, Written};
use crate::locks::lock;
use recode::Recode;

/// How long a navigation or rename question may take the editor.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest the agent's edits of one file may take to be reported (`didChange`) before its version is
/// named: the edit's own request already waited for this, so it is rarely needed.
const SETTLE: Duration = Duration::from_secs(2);
/// Who answers, in the lines the model reads.
const WHO: &str = "the editor";

pub struct EditorIntel {
    shared: Arc<Shared>,
    /// A hash of the text each file was last written with (a file tool's or a command's) and the version
    /// the editor's document had then. A document still at that version with another text has not caught up
    /// yet: the editor reloads a file a command changed on disk a moment later, and its diagnostics until then
    /// are the old text's.
    written: Mutex<HashMap<PathBuf, (u64, Option<i32>)>>,
    /// How long opening a document to learn its errors from before has taken.
    opening: Mutex<Opening>,
}

/// Why an answer did not come.
enum Unanswered {
    Late(Duration),
    Failed(String),
}

impl EditorIntel {
    pub fn new(shared: Arc<Shared>) -> EditorIntel {
        EditorIntel { shared, written: Mutex::default(), opening: Mutex::default() }
    }

    fn uri(&self, path: &Path) -> Option<Uri> {
        self.shared.texts.uri_of(path).or_else(|| Uri::from_file_path(path))
    }

    /// Sends one `stepwise/query`, answered within `timeout` or not at all.
    async fn ask(&self, params: QueryParams, timeout: Duration) -> Result<Option<Value>, Unanswered> {
        self.shared.notifier.flush().await;
        let request = self.shared.client.send_request::<ext::Query>(params);
        match tokio::time::timeout(timeout, request).await {
            Err(_) => Err(Unanswered::Late(timeout)),
            Ok(Err(e)) => Err(Unanswered::Failed(format!("the editor could not answer: {}", e.message))),
            Ok(Ok(v)) => Ok(v.filter(|v| !v.is_null())),
        }
    }

    /// The documents asked about, each with the version of the text the agent wrote (an open document's,
    /// once the editor reported the agent's edits, or the next one while the editor has not yet taken a
    /// command's change from the disk; `None` for a file the editor has not opened).
    async fn documents(&self, paths: &[PathBuf]) -> Vec<(PathBuf, QueryDocument)> {
        let mut out = Vec::new();
        for p in paths {
            let Some(uri) = self.uri(p) else { continue };
            self.shared.texts.wait_settled(p, SETTLE).await;
            let now = self.shared.texts.read(p).and_then(|t| Some((t.open?.version?, t.text)));
            let mut written = lock(&self.written);
            let version = match (now, written.get(p)) {
                // Kept until the editor caught up, for a later question of the same round.
                (Some((v, text)), Some(&(wrote, Some(then)))) if v == then && hash(&text) != wrote => Some(v + 1),
                (now, _) => {
                    written.remove(p);
                    now.map(|(v, _)| v)
                }
            };
            drop(written);
            out.push((p.clone(), QueryDocument { uri: uri.as_str().to_string(), version }));
        }
        out
    }

    /// `before`: the question asked before the agent's first change of a file (`learn_before`), logged apart.
    async fn diagnostics_of(&self, req: DiagnosticsRequest, before: bool) -> Vec<FileDiagnostics> {
        let started = Instant::now();
        let asked = self.documents(&req.paths).await;
        // The editor waits a little less than the caller, so its answer arrives within the caller's wait.
        let budget = req.max_wait.saturating_sub(started.elapsed());
        let margin = (budget / 4).min(Duration::from_millis(500));
        let wait = if req.settle { budget - margin } else { Duration::ZERO };
        let params = QueryParams {
            kind: QueryKind::Diagnostics,
            documents: (!asked.is_empty()).then(|| asked.iter().map(|(_, d)| d.clone()).collect()),
            wait_ms: Some(wait.as_millis() as u64),
            ..empty(QueryKind::Diagnostics)
        };
        let not_all = |checked: Checked| -> Vec<FileDiagnostics> {
            asked
                .iter()
                .map(|(p, _)| FileDiagnostics {
                    path: p.clone(),
                    diagnostics: Vec::new(),
                    before: None,
                    checked: checked.clone(),
                    dropped: 0,
                })
                .collect()
        };
        let answer = self.ask(params, wait + margin).await;
        // What the model reads as waited is the time this question really took, not the wait it allowed: an
        // editor may give up on a document long before (a file no server of it checks).
        let waited = started.elapsed();
        let value = match answer {
            Ok(Some(v)) => v,
            Ok(None) => return not_all(Checked::Failed(format!("{WHO} has no diagnostics to give"))),
            Err(Unanswered::Late(_)) => return not_all(Checked::No { who: WHO.into(), waited }),
            Err(Unanswered::Failed(why)) => return not_all(Checked::Failed(why)),
        };
        let answer: ext::DiagnosticsAnswer = match serde_json::from_value(value) {
            Ok(a) => a,
            Err(e) => return not_all(Checked::Failed(format!("{WHO} answered what stepwise cannot read: {e}"))),
        };
        tracing::info!(
            "the editor answered {} for {} document(s) in {} ms of the {} ms it was allowed ({} settled)",
            if before { "the diagnostics from before a change" } else { "diagnostics" },
            asked.len(),
            waited.as_millis(),
            wait.as_millis(),
            answer.items.iter().filter(|i| i.settled).count()
        );
        let mut recode = Recode::new(&self.shared);
        let mut out = Vec::new();
        for item in answer.items {
            let Ok(uri) = item.uri.parse::<Uri>() else { continue };
            let Some(path) = self.shared.texts.path_of(&uri) else { continue };
            let mut diagnostics = item.diagnostics;
            let dropped = diagnostics.len().saturating_sub(KEEP_PER_FILE);
            diagnostics.truncate(KEEP_PER_FILE);
            for d in &mut diagnostics {
                recode.range(&uri, &mut d.range).await;
            }
            let checked = if item.settled { Checked::Yes } else { Checked::No { who: WHO.into(), waited } };
            out.push(FileDiagnostics { path, diagnostics, before: None, checked, dropped });
        }
        // A document asked about that the answer leaves out was not checked.
        for (p, _) in &asked {
            if !out.iter().any(|f| &f.path == p) {
                let checked = Checked::No { who: WHO.into(), waited };
                out.push(FileDiagnostics {
                    path: p.clone(),
                    diagnostics: Vec::new(),
                    before: None,
                    checked,
                    dropped: 0,
                });
            }
        }
        out
    }

    async fn query_of(&self, q: Query) -> Result<Answer, String> {
        let mut recode = Recode::new(&self.shared);
        let (kind, at, query, new_name) = match q {
            Query::Definition { path, position } => (QueryKind::Definition, Some((path, Some(position))), None, None),
            Query::References { path, position } => (QueryKind::References, Some((path, Some(position))), None, None),
            Query::Implementation { path, position } => {
                (QueryKind::Implementation, Some((path, Some(position))), None, None)
            }
            Query::Hover { path, position } => (QueryKind::Hover, Some((path, Some(position))), None, None),
            Query::DocumentSymbols { path } => (QueryKind::DocumentSymbol, Some((path, None)), None, None),
            Query::WorkspaceSymbols { query } => (QueryKind::WorkspaceSymbol, None, Some(query), None),
            Query::Rename { path, position, new_name } => {
                (QueryKind::Rename, Some((path, Some(position))), None, Some(new_name))
            }
        };
        let mut params = QueryParams { query, new_name, ..empty(kind) };
        let mut uri = None;
        if let Some((path, position)) = at {
            let u = self.uri(&path).ok_or_else(|| format!("cannot name {} as a URI", path.display()))?;
            if let Some(pos) = position {
                let pos = recode.editor_position(&u, pos).await;
                params.position = Some(QueryPosition { line: pos.line, character: pos.character });
            }
            params.uri = Some(u.as_str().to_string());
            uri = Some(u);
        }
        let value = match self.ask(params, QUERY_TIMEOUT).await {
            Ok(v) => v,
            Err(Unanswered::Late(t)) => return Err(format!("{WHO} did not answer in {} ms", t.as_millis())),
            Err(Unanswered::Failed(why)) => return Err(why),
        };
        let unreadable = |e: serde_json::Error| format!("{WHO} answered what stepwise cannot read: {e}");
        let Some(value) = value else {
            return Ok(match kind {
                QueryKind::Hover => Answer::Hover(None),
                QueryKind::DocumentSymbol => Answer::DocumentSymbols(None),
                QueryKind::WorkspaceSymbol => Answer::WorkspaceSymbols(None),
                QueryKind::Rename => Answer::Edit(None),
                _ => Answer::Locations(Vec::new()),
            });
        };
        Ok(match kind {
            QueryKind::Hover => {
                let mut hover: tower_lsp_server::ls_types::Hover = serde_json::from_value(value).map_err(unreadable)?;
                if let (Some(u), Some(r)) = (&uri, hover.range.as_mut()) {
                    recode.range(u, r).await;
                }
                Answer::Hover(Some(hover))
            }
            QueryKind::DocumentSymbol => {
                let mut symbols = serde_json::from_value(value).map_err(unreadable)?;
                if let Some(u) = &uri {
                    recode.symbols(u, &mut symbols).await;
                }
                Answer::DocumentSymbols(Some(symbols))
            }
            QueryKind::WorkspaceSymbol => {
                let mut symbols = serde_json::from_value(value).map_err(unreadable)?;
                recode.workspace_symbols(&mut symbols).await;
                Answer::WorkspaceSymbols(Some(symbols))
            }
            QueryKind::Rename => {
                let mut edit = serde_json::from_value(value).map_err(unreadable)?;
                recode.edit(&mut edit).await;
                Answer::Edit(Some(edit))
            }
            _ => {
                let mut locations = locations(serde_json::from_value(value).map_err(unreadable)?);
                recode.locations(&mut locations).await;
                Answer::Locations(locations)
            }
        })
    }
}

/// A `LocationLink` answer is turned into its target.
fn locations(response: GotoDefinitionResponse) -> Vec<Location> {
    match response {
        GotoDefinitionResponse::Scalar(l) => vec![l],
        GotoDefinitionResponse::Array(list) => list,
        GotoDefinitionResponse::Link(links) => {
            links.into_iter().map(|l| Location { uri: l.target_uri, range: l.target_selection_range }).collect()
        }
    }
}

fn hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

fn empty(kind: QueryKind) -> QueryParams {
    QueryParams { kind, uri: None, position: None, query: None, new_name: None, documents: None, wait_ms: None }
}

impl Intelligence for EditorIntel {
    fn who(&self) -> String {
        WHO.into()
    }

    fn covers(&self, _path: &Path) -> bool {
        // The editor has whatever language servers the user installed; it says what it knows.
        true
    }

    fn wrote(&self, written: Written) {
        // The agent's edits reach the editor's buffers through `workspace/applyEdit`, where its servers see them;
        // a command's reach them when the editor reloads the file: kept to know whether it did.
        let then = self.shared.texts.read(&written.path).and_then(|t| t.open?.version);
        lock(&self.written).insert(written.path, (hash(&written.text), then));
    }

    fn diagnostics(&self, req: DiagnosticsRequest) -> BoxFuture<'_, Vec<FileDiagnostics>> {
        Box::pin(self.diagnostics_of(req, false))
    }

    fn query(&self, q: Query) -> BoxFuture<'_, Result<Answer, String>> {
        Box::pin(self.query_of(q))
    }

    /// The document's diagnostics at its current version, when the editor says they are settled in time.
    /// A document the editor has open is answered at once or soon (at most 2 s). One it has not is asked
    /// about only before a write (`may_open`): the editor opens it unshown and waits for its servers, the
    /// first time at most the whole wait (their start may be in it), later four times the longest such
    /// answer so far (2 to 10 s). The agent's write then reaches that document, and the editor saves a
    /// document it shows nowhere once the agent's edit is applied (docs/protocol.md, `stepwise/query`).
    fn learn_before(&self, path: &Path, wait: Duration, may_open: bool) -> BoxFuture<'_, Option<Vec<Diagnostic>>> {
        let path = path.to_path_buf();
        Box::pin(async move {
            let open = self.shared.texts.read(&path).and_then(|t| t.open?.version).is_some();
            if !open && !may_open {
                return None;
            }
            let wait = if open { wait.min(OPEN_BEFORE) } else { lock(&self.opening).wait(wait) };
            let started = Instant::now();
            let req = DiagnosticsRequest { paths: vec![path.clone()], settle: true, max_wait: wait };
            let files = self.diagnostics_of(req, true).await;
            let found = files.into_iter().find(|f| f.path == path && f.checked == Checked::Yes).map(|f| f.diagnostics);
            if !open {
                lock(&self.opening).asked(started.elapsed(), wait, found.is_some());
            }
            found
        })
    }
}

/// How long the errors from before of a document the editor has open may take.
const OPEN_BEFORE: Duration = Duration::from_secs(2);

/// How long the editor takes to open a document it did not have open and have its servers check it: the
/// first question may wait as long as the caller allows (at most 10 s), later ones four times the longest
/// answer so far (at least 2 s, at most 10 s), as the round's waits on the servers stepwise starts learn. An
/// editor that let a question run out unanswered is given 2 s from then on, until one answer comes: the first
/// edit of every closed file does not wait 10 s for an editor whose servers never say.
#[derive(Default)]
struct Opening {
    longest: Option<Duration>,
    ran_out: bool,
}

impl Opening {
    fn wait(&self, cap: Duration) -> Duration {
        let (floor, most) = (Duration::from_secs(2), Duration::from_secs(10));
        match self.longest {
            Some(t) => (t * 4).clamp(floor, most).min(cap),
            None if self.ran_out => floor.min(cap),
            None => most.min(cap),
        }
    }

    /// A question took `t` of the `wait` it was allowed; `settled`: its answer told the errors.
    fn asked(&mut self, t: Duration, wait: Duration, settled: bool) {
        if settled || t < wait {
            self.longest = Some(self.longest.map_or(t, |l| l.max(t)));
        } else {
            self.ran_out = true;
        }
    }
}

#[cfg(test)]
mod tests;
