//! A session's code intelligence as the loop uses it: the source, what the agent wrote this round (fed
//! to the source as it is written, so the servers work while the round goes on), and the engine's view of
//! each file's diagnostics, against which the errors of the next round are new or not.

use std::collections::HashMap;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::source::{Checked, DiagnosticsRequest, FileDiagnostics, Source, Written};
use super::text::{self, Key};
use super::DiagnosticsMode;
use crate::host::{resolve, Host};
use crate::locks::lock;
use tower_lsp_server::ls_types::Diagnostic;

/// The block's first and last lines.
pub const OPEN: &str = "<diagnostics>";
pub const CLOSE: &str = "</diagnostics>";

/// What a file held before the agent's write, as far as the writer knows.
#[derive(Debug, Clone, Copy)]
pub enum Before<'a> {
    Text(&'a str),
    /// A new file.
    Absent,
    /// Not known (a shell command's change where nothing kept the text from before it).
    Unknown,
}

/// What a file held at the round's start, as the checkpoints kept it (`Checkpoints::held_at_round_start`).
pub enum Held {
    Text(String),
    /// No file was there.
    Nothing,
}

pub struct Session {
    pub source: Source,
    pub mode: DiagnosticsMode,
    root: PathBuf,
    max_wait: Duration,
    /// Files written since the last block, in order, with their latest text.
    round: Mutex<Vec<(PathBuf, Arc<str>)>>,
    /// The text each file had before the agent first wrote it (for the keys of the source's `before`).
    before: Arc<Mutex<HashMap<PathBuf, Option<Arc<str>>>>>,
    /// The engine's view: each file's diagnostics as last reported, keyed so a moved line still matches
    /// (or, from an editor, as learned before the agent's first change of the file: `learn_before`).
    seen: Arc<Mutex<HashMap<PathBuf, Vec<Key>>>>,
    /// Files whose diagnostics an editor is being asked in the background, after the agent read them.
    asking: Arc<Mutex<HashSet<PathBuf>>>,
    /// Told when one of those answers came (or did not come in time).
    answered: Arc<tokio::sync::Notify>,
    /// Counts the commands the agent started: an answer asked before one of them may be of a text it
    /// changed, so it is not kept as the file's errors from before.
    epoch: Arc<AtomicU64>,
    /// A hash of the text last fed for each file, to find what a command changed where no checkpoints
    /// follow the commands (`stepwise run`).
    fed: Mutex<HashMap<PathBuf, u64>>,
    /// Files a command made that did not exist before it: their "before" is no errors at all.
    created: Mutex<HashSet<PathBuf>>,
}

/// How long the editor may take, in the background, for the diagnostics of a file the agent read.
const AFTER_READ: Duration = Duration::from_secs(2);
/// How long the agent's first write of a file waits for the answer its read asked in the background.
const BEFORE_WRITE: Duration = Duration::from_secs(2);

impl Session {
    pub fn new(source: Source, mode: DiagnosticsMode, root: PathBuf, max_wait: Duration) -> Session {
        Session {
            source,
            mode,
            root,
            max_wait,
            round: Mutex::default(),
            before: Arc::default(),
            seen: Arc::default(),
            asking: Arc::default(),
            answered: Arc::default(),
            epoch: Arc::default(),
            fed: Mutex::default(),
            created: Mutex::default(),
        }
    }

    /// The longest a wait for the source may take.
    pub fn max_wait(&self) -> Duration {
        self.max_wait
    }

    /// Whether the file's errors from before must be asked of the source: an editor (a source that does
    /// not learn them by itself), the block on, a file neither reported nor changed yet.
    fn wants_before(&self, path: &Path) -> bool {
        self.mode == DiagnosticsMode::Auto
            && !self.source.knows_before()
            && self.source.covers(path)
            && !lock(&self.seen).contains_key(path)
            && !lock(&self.before).contains_key(path)
    }

    /// The agent read a file: an editor is asked for its diagnostics in the background (the read does
    /// not wait), kept as its errors from before when they come settled before the file is written and
    /// before a command starts (`command_starting` waits for them).
    pub fn read(&self, path: &Path) {
        if !self.wants_before(path) || !lock(&self.asking).insert(path.to_path_buf()) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            lock(&self.asking).remove(path);
            return;
        };
        let (source, seen, before, asking, answered) =
            (self.source.clone(), self.seen.clone(), self.before.clone(), self.asking.clone(), self.answered.clone());
        let (epoch, at) = (self.epoch.clone(), self.epoch.load(Ordering::SeqCst));
        let (path, wait) = (path.to_path_buf(), AFTER_READ.min(self.max_wait));
        runtime.spawn(async move {
            if let Some(diagnostics) = source.learn_before(&path, wait, false).await {
                // The text the answer is of, as the disk has it (the read's own text may be a part).
                let text = disk_text(&path);
                // The order of the locks is `new_lines`'s: the view, then the texts from before.
                let mut seen = lock(&seen);
                if epoch.load(Ordering::SeqCst) == at && !lock(&before).contains_key(&path) {
                    seen.entry(path.clone()).or_insert_with(|| keys(text.as_deref(), &diagnostics));
                }
            }
            lock(&asking).remove(&path);
            answered.notify_waiters();
        });
    }

    /// Before a file tool or a rename first changes a file whose errors from before are not known, from
    /// `text` (what the change is made from): the source is asked for them, and may open a document the
    /// editor does not have open to answer (the source bounds that wait: an open document's at 2 s, a
    /// closed one's as it learns, all within the wait cap). Not known in time: the file's errors after
    /// the round are listed as not compared, none as new.
    pub async fn before_write(&self, path: &Path, text: &str) {
        let started = tokio::time::Instant::now();
        // Asked in the background since the agent read it: that answer, rather than a second question.
        self.answers_for(|asking| asking.contains(path), started + BEFORE_WRITE.min(self.max_wait)).await;
        if self.wants_before(path) {
            let wait = self.max_wait.saturating_sub(started.elapsed());
            if wait.is_zero() {
                // Not in time: the file's errors after the round are listed as not compared.
            } else if let Some(diagnostics) = self.source.learn_before(path, wait, true).await {
                lock(&self.seen).entry(path.to_path_buf()).or_insert_with(|| keys(Some(text), &diagnostics));
            }
        }
        // No answer about this file is awaited any more; one about another file is still of its text.
    }

    /// A shell command or a background task starts: what an editor answers about a file from now on may
    /// be of the text it changes, so the answers asked after the agent's reads are waited for first (the
    /// rest of their own wait, at most `AFTER_READ`, 2 s; none asked, no wait), and later ones are not kept.
    pub async fn command_starting(&self) {
        let deadline = tokio::time::Instant::now() + AFTER_READ;
        self.answers_for(|asking| !asking.is_empty(), deadline).await;
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Waits while `pending` holds of the files being asked in the background, at most until `deadline`.
    async fn answers_for(&self, pending: impl Fn(&HashSet<PathBuf>) -> bool, deadline: tokio::time::Instant) {
        loop {
            let answered = self.answered.notified();
            tokio::pin!(answered);
            answered.as_mut().enable();
            if !pending(&lock(&self.asking)) {
                return;
            }
            if tokio::time::timeout_at(deadline, answered).await.is_err() {
                return;
            }
        }
    }

    /// The agent wrote `text` to `path` (a file tool, a rename, or a shell command): the source starts on
    /// it now; the round's end waits for it.
    pub fn wrote(&self, path: &Path, before: Before<'_>, text: &str) {
        if !self.source.covers(path) {
            return;
        }
        lock(&self.fed).insert(path.to_path_buf(), hash(text));
        let before: Option<Arc<str>> = match before {
            Before::Text(t) => Some(Arc::from(t)),
            // Nothing was there: no errors before (where the engine has no view of the file yet).
            Before::Absent => {
                if !lock(&self.seen).contains_key(path) {
                    lock(&self.created).insert(path.to_path_buf());
                }
                None
            }
            Before::Unknown => None,
        };
        let text: Arc<str> = Arc::from(text);
        lock(&self.before).entry(path.to_path_buf()).or_insert_with(|| before.clone());
        {
            let mut round = lock(&self.round);
            round.retain(|(p, _)| p != path);
            round.push((path.to_path_buf(), text.clone()));
        }
        self.source.wrote(Written { path: path.to_path_buf(), before, text });
    }

    /// A shell command changed these files (relative paths, from the checkpoints): their text now, fed
    /// like the file tools' (a file removed or unreadable is left out). A file never fed before is fed
    /// with what it held before the round (`held`: from the checkpoints, text of at most the given bytes;
    /// `None`: not known), so the
    /// source knows its errors from before and those the command caused are new.
    pub fn command_changed(&self, rel: &[PathBuf], held: impl Fn(&Path, u64) -> Option<Held>) {
        tracing::debug!("a command changed {rel:?}");
        for r in rel {
            let path = self.root.join(r);
            if !self.source.covers(&path) {
                continue;
            }
            let Some(text) = disk_text(&path) else { continue };
            // Fed before: the source has its text from before this command.
            if lock(&self.fed).contains_key(&path) {
                self.wrote(&path, Before::Unknown, &text);
                continue;
            }
            // A source that does not use the text from before (an editor) is spared reading it: it is only
            // told whether the file was there (a file the command made had no errors before).
            let knows = self.source.knows_before();
            match held(r, if knows { MAX_TEXT } else { 0 }) {
                Some(Held::Text(before)) if knows => self.wrote(&path, Before::Text(&before), &text),
                Some(Held::Nothing) => self.wrote(&path, Before::Absent, &text),
                _ => self.wrote(&path, Before::Unknown, &text),
            }
        }
    }

    /// A shell command ran where no checkpoints say what it changed: the files fed before are looked at
    /// again, and those whose text changed are fed like the file tools'; files a server serves that the
    /// command made or changed since `started` (`untracked::made_since`) are fed too: as new files (no
    /// errors before) when the file system says they were born after `started`, else with their before
    /// unknown (their errors are said as not compared, none claimed as new).
    pub fn command_ran_untracked(&self, started: Option<std::time::SystemTime>) {
        let known: Vec<PathBuf> = lock(&self.fed).keys().cloned().collect();
        for path in known {
            let Some(text) = disk_text(&path) else { continue };
            if lock(&self.fed).get(&path) != Some(&hash(&text)) {
                self.wrote(&path, Before::Unknown, &text);
            }
        }
        let Some(started) = started else { return };
        for (path, born) in super::untracked::made_since(&self.root, started, |p| self.source.covers(p)) {
            if lock(&self.fed).contains_key(&path) {
                continue;
            }
            let Some(text) = disk_text(&path) else { continue };
            self.wrote(&path, if born { Before::Absent } else { Before::Unknown }, &text);
        }
    }

    /// The round's block: the errors new in the files written this round (and those the servers report
    /// as affected), `not checked` lines for what did not settle, the source's notices. `None`: nothing
    /// was written (no wait at all), or nothing is new and everything was checked.
    pub async fn round_block<H: Host + ?Sized>(&self, host: &H) -> Option<String> {
        let written = std::mem::take(&mut *lock(&self.round));
        if written.is_empty() || self.mode != DiagnosticsMode::Auto {
            return block(self.source.notices());
        }
        let texts: HashMap<PathBuf, Arc<str>> = written.iter().cloned().collect();
        let req = DiagnosticsRequest {
            paths: written.into_iter().map(|(p, _)| p).collect(),
            settle: true,
            max_wait: self.max_wait,
        };
        let files = self.source.diagnostics(req).await;
        tracing::debug!(
            "diagnostics after the round: {:?}",
            files.iter().map(|f| (&f.path, f.diagnostics.len(), &f.checked)).collect::<Vec<_>>()
        );
        let mut lines = Vec::new();
        let mut unchecked = text::Unchecked::default();
        let mut unread = Vec::new();
        let mut outside = 0;
        // Errors whose file's errors from before are not known: of files the round changed, and of others.
        let (mut changed_unknown, mut affected_unknown) = (Vec::new(), Vec::new());
        for f in files {
            let Some(rel) = text::rel(&self.root, &f.path) else {
                outside += f.diagnostics.iter().filter(|d| text::is_error(d)).count();
                continue;
            };
            if f.checked != Checked::Yes {
                unchecked.add(&rel, &f.checked);
                continue;
            }
            let now_text = match texts.get(&f.path) {
                Some(t) => Some(t.to_string()),
                None => read(host, &self.root, &rel).await,
            };
            // Errors from before the round not known: its errors may be older than the round, so they are
            // not claimed as new, but listed under a line that says so. A file the round did not change,
            // first reported after it (a server's first check of an unopened file); or one it changed whose
            // errors before the source could not learn (a server that did not check the text from before in
            // time or never had it; an editor that did not answer in time, or a command's change).
            let changed = texts.contains_key(&f.path);
            let known =
                f.before.is_some() || lock(&self.seen).contains_key(&f.path) || lock(&self.created).contains(&f.path);
            // With nothing known from before, every error of the file is in `new`.
            let new = self.new_lines(&rel, &f, now_text.as_deref());
            match (known, changed) {
                (true, _) => lines.extend(new),
                (false, true) => changed_unknown.extend(new),
                (false, false) => affected_unknown.extend(new),
            }
            if f.dropped > 0 {
                unread.push(text::unread_line(&rel, &f));
            }
        }
        let sections = [(None, lines), (Some(CHANGED), changed_unknown), (Some(AFFECTED), affected_unknown)];
        let mut all = text::capped_sections(sections, "errors");
        if outside > 0 {
            all.push(format!("({outside} errors in files outside the workspace not shown)"));
        }
        all.extend(unread);
        // Capped too: a command that rewrote a tree (a checkout) could leave hundreds of files unchecked.
        all.extend(text::capped(unchecked.lines(), "unchecked files"));
        // After the wait: a server that crashed meanwhile was restarted during it.
        all.extend(self.source.notices());
        block(all)
    }

    /// The file's new errors as lines, and the engine's view of it updated.
    fn new_lines(&self, rel: &str, f: &FileDiagnostics, now_text: Option<&str>) -> Vec<String> {
        let now: Vec<(Key, &Diagnostic)> = f.diagnostics.iter().map(|d| (text::key(now_text, d), d)).collect();
        let before_keys = {
            let seen = lock(&self.seen);
            match seen.get(&f.path) {
                Some(k) => k.clone(),
                // Made by a command this round: nothing was there before.
                None if lock(&self.created).remove(&f.path) => Vec::new(),
                None => {
                    let before_text = lock(&self.before).get(&f.path).cloned().flatten();
                    f.before.iter().flatten().map(|d| text::key(before_text.as_deref(), d)).collect()
                }
            }
        };
        let new = text::new_errors(&before_keys, &now);
        let lines = new.iter().map(|d| text::diagnostic_line(rel, now_text, d)).collect();
        lock(&self.seen).insert(f.path.clone(), now.into_iter().map(|(k, _)| k).collect());
        lines
    }
}

/// The line above errors not compared with before, of files the round changed whose errors before it are
/// not known (a command's change no server had seen, a wait that ran out).
pub const CHANGED: &str =
    "(not compared with before: the errors below are in files the round changed whose errors before it are not known)";
/// The line above errors not compared with before, of files the round did not change that the servers
/// reported for the first time after it (compared from the next round on).
pub const AFFECTED: &str =
    "(not compared with before: the errors below are in files the round did not change, first reported after it)";

/// A file's diagnostics from before the agent's change, keyed as the engine's view of it.
fn keys(text: Option<&str>, diagnostics: &[Diagnostic]) -> Vec<Key> {
    diagnostics.iter().map(|d| text::key(text, d)).collect()
}

fn hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// The largest file fed to a source.
pub const MAX_TEXT: u64 = 4 << 20;

/// A file's text as a command left it: a regular file, not too large; a binary one is not fed to a server
/// (the `diagnostics` tool says why).
fn disk_text(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_TEXT {
        return None;
    }
    text_of(std::fs::read(path).ok()?)
}

/// Bytes as text for a source: UTF-8, not binary.
pub fn text_of(bytes: Vec<u8>) -> Option<String> {
    String::from_utf8(bytes).ok().filter(|t| !t.contains('\0'))
}

fn block(lines: Vec<String>) -> Option<String> {
    (!lines.is_empty()).then(|| format!("{OPEN}\n{}\n{CLOSE}", lines.join("\n")))
}

async fn read<H: Host + ?Sized>(host: &H, root: &Path, rel: &str) -> Option<String> {
    let path = resolve(root, rel).ok()?;
    host.read_file(&path).await.ok()
}
