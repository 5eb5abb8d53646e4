//! The language servers stepwise starts itself (the CLI, ACP, an LSP client that does not answer
//! `stepwise/query`): one per language per workspace, started on first need, fed the text the agent
//! wrote, confined like the agent's commands, stopped with the session (their process groups die with it,
//! even when stepwise is killed). A server that crashes is restarted once, and that is said; one that
//! cannot start, or stops again, is given up on for the session (`down.rs`), and why is said in its words
//! (`said.rs`).

mod answer;
pub mod check;
mod down;
mod look;
mod rights;
pub mod rpc;
pub mod said;
pub mod server;
pub mod spec;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::source::{Answer, Checked, DiagnosticsRequest, FileDiagnostics, Intelligence, Query, Written};
use crate::intel::session::MAX_TEXT;
use crate::intel::walk;
use crate::locks::lock;
use down::{Down, Failure};
pub use look::{look, used, Serving};
pub use rights::{trust_question, Confined, Deferred, Rights};
use server::Running;
use spec::{Spec, Specs};

/// The first wait on a server, its start included.
pub const FIRST_WAIT: Duration = Duration::from_secs(10);
/// The shortest a learned wait gets: a warm server that answered in 50 ms may need more on a big change.
const MIN_WAIT: Duration = Duration::from_secs(2);

struct Slot {
    running: Option<Arc<Running>>,
    restarted: bool,
    /// Given up on: it could not start, or stopped again after its restart.
    failed: Option<Failure>,
    /// The longest a settle took once warm.
    learned: Option<Duration>,
    /// Its event count when the agent first wrote since the last report.
    since: Option<u64>,
}

/// A file's text before the agent first wrote it, and its latest.
type Wrote = (Option<Arc<str>>, Arc<str>);

struct Inner {
    root: PathBuf,
    /// The servers known, and the well-known ones not looked up on `PATH` yet.
    specs: Mutex<Specs>,
    /// Set again when the user answers a question asked `Later`.
    rights: tokio::sync::watch::Sender<Rights>,
    /// The rights to settle at the first server start (`settle_later`).
    deferred: Mutex<Option<Deferred>>,
    max_wait: Duration,
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    /// The agent's latest text of each file it wrote, with the text before its first write.
    written: Mutex<HashMap<PathBuf, Wrote>>,
    /// Files a server opened without knowing their diagnostics from before the agent's write (no text
    /// from before, or its check of that text did not come in time): nothing to compare with.
    uncompared: Mutex<std::collections::HashSet<PathBuf>>,
    notices: Mutex<Vec<String>>,
    /// Counts the questions asked (a round's diagnostics, a tool's): a failure is told in full to the first.
    asks: AtomicU64,
    /// The servers given up on.
    down: Down,
}

/// The session's servers: the `Intelligence` of every host that has no editor answering for it.
#[derive(Clone)]
pub struct Servers(Arc<Inner>);

impl Servers {
    /// The servers for `root` (none started yet); `max_wait` caps every wait (`FIRST_WAIT` at most).
    pub fn new(root: PathBuf, specs: impl Into<Specs>, rights: Rights, max_wait: Duration) -> Servers {
        Servers(Arc::new(Inner {
            root,
            specs: Mutex::new(specs.into()),
            rights: tokio::sync::watch::Sender::new(rights),
            deferred: Mutex::new(None),
            max_wait: max_wait.min(FIRST_WAIT),
            slots: Mutex::default(),
            written: Mutex::default(),
            uncompared: Mutex::default(),
            notices: Mutex::default(),
            asks: AtomicU64::new(1),
            down: Down::default(),
        }))
    }

    /// How long a round waits on the server of `slot`: the first wait (its start included) the longest,
    /// later ones learned from how long it took.
    fn wait(&self, slot: &Slot) -> Duration {
        match (slot.learned, &slot.running) {
            (Some(l), Some(_)) => (l * 4).max(MIN_WAIT).min(self.0.max_wait),
            _ => self.0.max_wait,
        }
    }

    /// The server for `path` (the well-known ones for its extension looked up on `PATH` at first need).
    fn spec_for(&self, path: &Path) -> Option<Arc<Spec>> {
        lock(&self.0.specs).for_file(path)
    }

    fn slot(&self, name: &str) -> Arc<tokio::sync::Mutex<Slot>> {
        lock(&self.0.slots)
            .entry(name.to_string())
            .or_insert_with(|| {
                Arc::new(tokio::sync::Mutex::new(Slot {
                    running: None,
                    restarted: false,
                    failed: None,
                    learned: None,
                    since: None,
                }))
            })
            .clone()
    }

    /// The running server for `spec`: started on first need (its start bounded by `deadline`), restarted
    /// once after a crash. `Err`: why not, in full (`told` shortens it for the model).
    async fn running(&self, spec: &Arc<Spec>, slot: &mut Slot, deadline: Instant) -> Result<Arc<Running>, String> {
        if let Some(f) = &slot.failed {
            return Err(f.full().to_string());
        }
        if let Some(r) = &slot.running {
            if r.alive() {
                return Ok(r.clone());
            }
            let said = said::words(&lock(&r.stderr)).map(|w| format!(": {w}")).unwrap_or_default();
            slot.running = None;
            if slot.restarted {
                let full = format!("{} stopped again{said}; it is not restarted in this session", spec.name);
                let short = format!("{} stopped again; it is not restarted in this session", spec.name);
                return Err(self.give_up(spec, slot, full, short).await);
            }
            slot.restarted = true;
            lock(&self.0.notices).push(format!("{} stopped unexpectedly{said}; restarted", spec.name));
        }
        let policy = match self.rights(deadline).await {
            Rights::Sandbox(c) => Some(c.policy().map_err(|why| format!("{}: {why}", spec.name))?),
            Rights::Trusted => None,
            Rights::Refused(why) | Rights::Asking(why) | Rights::Unsettled(why) => return Err(why),
        };
        let budget = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        match Running::start(spec.clone(), &self.0.root, policy.as_ref(), budget).await {
            Ok(r) => {
                let r = Arc::new(r);
                slot.running = Some(r.clone());
                Ok(r)
            }
            Err(not) => {
                tracing::debug!("{not}");
                Err(self.give_up(spec, slot, not.to_string(), not.short()).await)
            }
        }
    }

    /// `spec`'s server is given up on for the session: `full` says why (returned), `short` once told.
    async fn give_up(&self, spec: &Spec, slot: &mut Slot, full: String, short: String) -> String {
        slot.failed = Some(Failure::new(full.clone(), short));
        self.0.down.add(&spec.name, &self.0.root).await;
        full
    }

    /// A new question (a round's diagnostics, a tool's call): the failures it meets first are told in full.
    fn ask(&self) -> u64 {
        self.0.asks.fetch_add(1, Ordering::Relaxed)
    }

    /// Feeds `path` to `r`: the text the agent wrote (opened first with the text before, waited for, so
    /// the diagnostics from before are known), else what the disk holds. The wait for the text before
    /// takes at most half the time left to `deadline`: the other half is for the agent's text.
    async fn feed(&self, r: &Running, path: &Path, deadline: Instant) -> Result<(), String> {
        let wrote = lock(&self.0.written).get(path).cloned();
        match wrote {
            Some((before, text)) => {
                if !r.has(path) {
                    let known = match before {
                        Some(before) => {
                            r.sync(path, before);
                            let now = Instant::now();
                            r.settle(path, now + deadline.saturating_duration_since(now) / 2).await
                        }
                        None => false,
                    };
                    let mut uncompared = lock(&self.0.uncompared);
                    match known {
                        true => uncompared.remove(path),
                        false => uncompared.insert(path.to_path_buf()),
                    };
                }
                r.sync(path, text);
            }
            None if r.has(path) => {}
            None => r.sync(path, read_text(path)?),
        }
        Ok(())
    }

    /// One file: its server started and fed, settled if asked (question `ask`).
    async fn file(&self, path: &Path, settle: bool, ask: u64) -> FileDiagnostics {
        let report = |checked| FileDiagnostics {
            path: path.to_path_buf(),
            diagnostics: Vec::new(),
            before: None,
            checked,
            dropped: 0,
        };
        let Some(spec) = self.spec_for(path) else {
            return report(Checked::Failed("no language server for this kind of file".into()));
        };
        // The wait starts now: time spent behind the server's start or feed (begun when the agent wrote)
        // counts, so what the model is told it waited is what the round waited.
        let started = Instant::now();
        let slot = self.slot(&spec.name);
        let mut slot = slot.lock().await;
        let cold = slot.running.is_none() || slot.learned.is_none();
        let deadline = started + self.wait(&slot);
        let r = match self.running(&spec, &mut slot, deadline).await {
            Ok(r) => r,
            Err(why) => return report(Checked::Failed(told(&mut slot, why, ask))),
        };
        // The wait may feed the server before the task `wrote` spawned does: files it reports from here on
        // are the ones the change affected.
        if settle && slot.since.is_none() {
            slot.since = Some(r.seq());
        }
        if let Err(why) = self.feed(&r, path, deadline).await {
            return report(Checked::Failed(why));
        }
        let checked = if !settle || r.settle(path, deadline).await {
            if settle && !cold {
                let took = started.elapsed();
                slot.learned = Some(slot.learned.map_or(took, |l| (l * 3 + took) / 4));
            } else if settle {
                slot.learned = Some(Duration::from_millis(1));
            }
            Checked::Yes
        } else if !r.alive() {
            let said = said::words(&lock(&r.stderr)).map(|w| format!(": {w}")).unwrap_or_default();
            Checked::Failed(format!("{} stopped while checking it{said}", spec.name))
        } else {
            Checked::No { who: spec.name.clone(), waited: started.elapsed() }
        };
        let (diagnostics, before, dropped) = r.diagnostics(path);
        let before = before.filter(|_| !lock(&self.0.uncompared).contains(path));
        FileDiagnostics { path: path.to_path_buf(), diagnostics, before, checked, dropped }
    }
}

/// Why a server is not there, for question `ask`: a failure told once in full, then shortly (`Failure::tell`);
/// any other reason (its rights) as it is.
fn told(slot: &mut Slot, why: String, ask: u64) -> String {
    match slot.failed.as_mut() {
        Some(f) => f.tell(ask),
        None => why,
    }
}

/// A file's text from disk, for a server: not too large, not binary.
fn read_text(path: &Path) -> Result<Arc<str>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    if meta.len() > MAX_TEXT {
        return Err(format!("too large to check ({} bytes)", meta.len()));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.contains(&0) {
        return Err("it is a binary file".into());
    }
    String::from_utf8(bytes).map(Arc::from).map_err(|_| "it is not UTF-8 text".into())
}

impl Intelligence for Servers {
    fn who(&self) -> String {
        "language servers".into()
    }

    fn covers(&self, path: &Path) -> bool {
        self.spec_for(path).is_some()
    }

    fn wrote(&self, w: Written) {
        if self.spec_for(&w.path).is_none() {
            return;
        }
        {
            let mut written = lock(&self.0.written);
            let before = written.get(&w.path).and_then(|(b, _)| b.clone()).or(w.before);
            written.insert(w.path.clone(), (before, w.text));
        }
        // Started and fed now, so the server works while the round's other calls run.
        let this = self.clone();
        tokio::spawn(async move {
            let Some(spec) = this.spec_for(&w.path) else { return };
            let slot = this.slot(&spec.name);
            let mut slot = slot.lock().await;
            // The round's wait is bounded by this same deadline: its check of the text from before too.
            let deadline = Instant::now() + this.wait(&slot);
            if let Ok(r) = this.running(&spec, &mut slot, deadline).await {
                if slot.since.is_none() {
                    slot.since = Some(r.seq());
                }
                let _ = this.feed(&r, &w.path, deadline).await;
            }
        });
    }

    fn diagnostics(&self, req: DiagnosticsRequest) -> BoxFuture<'_, Vec<FileDiagnostics>> {
        async move {
            let mut out = Vec::new();
            let ask = self.ask();
            if req.paths.is_empty() {
                let slots: Vec<_> = lock(&self.0.slots).values().cloned().collect();
                for slot in slots {
                    let mut slot = slot.lock().await;
                    if let Some(r) = slot.running.clone() {
                        out.extend(r.all().into_iter().map(|(path, diagnostics)| FileDiagnostics {
                            path,
                            diagnostics,
                            before: None,
                            checked: Checked::Yes,
                            dropped: 0,
                        }));
                    }
                    // Not silence, which reads as no errors.
                    if let Some(f) = slot.failed.as_mut() {
                        lock(&self.0.notices).push(format!("{}; its files are not checked", f.tell(ask)));
                    }
                }
                return out;
            }
            let files = futures_util::future::join_all(req.paths.iter().map(|p| self.file(p, req.settle, ask))).await;
            out.extend(files);
            if req.settle {
                // Files the servers found affected by the writes, besides those asked.
                let slots: Vec<_> = lock(&self.0.slots).values().cloned().collect();
                for slot in slots {
                    let mut slot = slot.lock().await;
                    let (Some(since), Some(r)) = (slot.since.take(), slot.running.clone()) else { continue };
                    for (path, diagnostics, before) in r.affected_since(since) {
                        if !req.paths.contains(&path) {
                            let f = FileDiagnostics { path, diagnostics, before, checked: Checked::Yes, dropped: 0 };
                            out.push(f);
                        }
                    }
                }
            }
            out
        }
        .boxed()
    }

    fn query(&self, q: Query) -> BoxFuture<'_, Result<Answer, String>> {
        async move {
            let path = match &q {
                Query::WorkspaceSymbols { .. } => self.any_running_path().await,
                Query::Definition { path, .. }
                | Query::References { path, .. }
                | Query::Implementation { path, .. }
                | Query::Hover { path, .. }
                | Query::DocumentSymbols { path }
                | Query::Rename { path, .. } => Some(path.clone()),
            };
            let Some(path) = path else { return Err("no language server has started in this session yet".into()) };
            let spec = self.spec_for(&path).ok_or("no language server for this kind of file")?;
            let slot = self.slot(&spec.name);
            let r = {
                let deadline = Instant::now() + self.0.max_wait;
                let mut slot = slot.lock().await;
                let ask = self.ask();
                let r = self.running(&spec, &mut slot, deadline).await.map_err(|why| told(&mut slot, why, ask))?;
                self.feed(&r, &path, deadline).await?;
                r
            };
            answer::ask(&r, &q, self.0.max_wait).await.map_err(|e| format!("{}: {e}", spec.name))
        }
        .boxed()
    }

    fn knows_before(&self) -> bool {
        true
    }

    fn notices(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.0.notices))
    }

    fn can_answer(&self) -> bool {
        !self.0.down.all()
    }
}

impl Servers {
    /// A file some running server has open, for a workspace-wide question.
    async fn any_running_path(&self) -> Option<PathBuf> {
        let written = lock(&self.0.written).keys().next().cloned();
        written.or_else(|| walk::files(&self.0.root, walk::LOOK).find(|p| p.is_file() && self.spec_for(p).is_some()))
    }
}
