//! The one owner of text that is not on disk yet (issue 29), as rust-analyzer's Vfs + MemDocs: the
//! editor's open buffers, the agent's text the editor holds for files it has not opened, and what must be
//! saved before a command. Nothing else keeps such text; the rules between them are here and only here,
//! each with a test in `tests.rs`:
//!
//! 1. **Read**: the open buffer (with every edit the editor applied, reported or not), else the agent's
//!    text for a file that is not open (its overlay), else the disk (`None`).
//! 2. **Open**: the buffer is the truth from now on; an overlay goes. What was unsaved stays unsaved.
//! 3. **Change**: applied in order, versions only grow. A report of the agent's own edit is recognised and
//!    not applied twice; the user's typing over a pending agent edit wins (reconcile.rs).
//! 4. **Close**: the buffer goes and the disk is the truth (as LSP says). The unsaved mark stays, for a
//!    client that reopens the document at once (a language change), but with no text left nothing is
//!    written for it before a command: what the user threw away is not brought back.
//! 5. **The agent's edit applied** (the editor answered `applied: true`): on the buffer it was made for, a
//!    pending edit; for a file that was not open, its overlay; either way the path is unsaved. A late
//!    answer: a buffer opened meanwhile takes the edit only if it has not got it; a buffer closed
//!    meanwhile takes nothing. A rejected, failed or unanswered edit records nothing.
//! 6. **Before a command**: the unsaved paths beneath the folder, each with its mark. The editor's save
//!    clears a path only if nothing was marked since; what the editor did not save is written with the
//!    text by rule 1, unless it is no longer unsaved (a save by the user meanwhile stands).
//! 7. **On disk**: the user saved the document, or the server wrote the file itself (a client without
//!    applyEdit, a rewind or undo on disk): the path is not unsaved any more and its overlay goes.
//! 8. **A folder removed**: the overlays and unsaved marks of paths no folder holds any more go (no run can
//!    use them; the editor keeps its buffers, which stay open documents here).

mod buffer;
pub mod reconcile;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use dashmap::DashMap;
use tower_lsp_server::ls_types::{TextDocumentContentChangeEvent, Uri};

use super::positions::Encoding;
use crate::locks;
use buffer::Buffer;
pub use reconcile::{follow, LineChange, Reconciled};

/// A file's text where the editor has one.
#[derive(Debug, Clone)]
pub struct Text {
    pub text: String,
    /// Set when the text is an open document's; `None` for an overlay.
    pub open: Option<Open>,
}

#[derive(Debug, Clone)]
pub struct Open {
    /// The version an edit can name: the editor's, once every edit it applied is reported.
    pub version: Option<i32>,
    /// Which opening of the document this is (for `AgentEdit::made_for`).
    pub opened: u64,
}

/// An edit sent to the editor as `workspace/applyEdit`, recorded once the editor applied it.
#[derive(Debug, Clone)]
pub struct AgentEdit {
    pub path: PathBuf,
    /// The opening of the document it was made for (`Open::opened`); `None`: the file was not open.
    pub made_for: Option<u64>,
    /// Byte offset of `old` in the text the edit was made on.
    pub at: usize,
    pub old: String,
    pub new: String,
    /// The whole text after the edit.
    pub after: String,
}

impl AgentEdit {
    /// The text the edit was made on.
    fn before(&self) -> Option<String> {
        let head = self.after.get(..self.at)?;
        let tail = self.after.get(self.at + self.new.len()..)?;
        Some(format!("{head}{}{tail}", self.old))
    }
}

/// A path with agent text that may not be saved, as of one mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsaved {
    pub path: PathBuf,
    mark: u64,
}

#[derive(Default)]
struct State {
    buffers: HashMap<PathBuf, Buffer>,
    /// The agent's text for files the editor holds but has not opened (not yet on disk).
    overlay: HashMap<PathBuf, String>,
    /// Paths with agent text that may not be saved, each with the mark of its latest change.
    unsaved: HashMap<PathBuf, u64>,
    /// Counts openings and marks: each gets a number never used before.
    tick: u64,
}

impl State {
    fn next(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// Rule 1, without the disk.
    fn text(&self, path: &Path) -> Option<Text> {
        if let Some(b) = self.buffers.get(path) {
            let open = Open { version: b.pending.is_empty().then_some(b.version), opened: b.opened };
            return Some(Text { text: b.text().to_string(), open: Some(open) });
        }
        self.overlay.get(path).map(|t| Text { text: t.clone(), open: None })
    }

    fn forget(&mut self, path: &Path) {
        self.overlay.remove(path);
        self.unsaved.remove(path);
    }
}

pub struct Texts {
    state: Mutex<State>,
    /// `file:` URIs to canonical paths (every change names its document).
    paths: DashMap<String, PathBuf>,
    /// Negotiated once, by `initialize`; UTF-16 (the LSP default) until then.
    encoding: OnceLock<Encoding>,
    /// Bumped at every change of a buffer, for `wait_settled`.
    changed: tokio::sync::watch::Sender<u64>,
}

impl Default for Texts {
    fn default() -> Self {
        Texts {
            state: Mutex::default(),
            paths: DashMap::new(),
            encoding: OnceLock::new(),
            changed: tokio::sync::watch::channel(0).0,
        }
    }
}

/// The canonical path of a document, so it compares with canonical workspace roots.
pub fn normalize(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent).map(|p| p.join(name)).unwrap_or(path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

impl Texts {
    pub fn set_encoding(&self, enc: Encoding) {
        if self.encoding.set(enc).is_err() {
            tracing::warn!("the position encoding was negotiated already; it stays");
        }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding.get().copied().unwrap_or(Encoding::Utf16)
    }

    /// The file path of a `file:` URI.
    pub fn path_of(&self, uri: &Uri) -> Option<PathBuf> {
        if let Some(p) = self.paths.get(uri.as_str()) {
            return Some(p.clone());
        }
        let p = normalize(&uri.to_file_path()?);
        self.paths.insert(uri.as_str().to_string(), p.clone());
        Some(p)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Rule 2: `didOpen`.
    pub fn open(&self, uri: Uri, text: String, version: i32) {
        let Some(path) = self.path_of(&uri) else { return };
        let mut s = locks::lock(&self.state);
        let opened = s.next();
        s.overlay.remove(&path);
        s.buffers.insert(path, Buffer { uri, reported: text, version, pending: Vec::new(), opened });
        drop(s);
        self.bump();
    }

    /// Rule 3: one `didChange`, applied synchronously: callers must not await before calling this, so that
    /// changes are applied in the order they arrived. Returns the document's path and what the change did
    /// besides reporting the agent's own edits.
    pub fn change(
        &self,
        uri: &Uri,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) -> Result<(PathBuf, Reconciled), String> {
        let path = self.path_of(uri).ok_or_else(|| format!("not a file URI: {}", uri.as_str()))?;
        let enc = self.encoding();
        let mut s = locks::lock(&self.state);
        let b = s
            .buffers
            .get_mut(&path)
            .ok_or_else(|| format!("change to a document that is not open: {}", uri.as_str()))?;
        if version <= b.version {
            return Err(format!(
                "ignoring a stale change to {}: version {version} is not newer than {}",
                uri.as_str(),
                b.version
            ));
        }
        let done = reconcile::apply(&mut b.reported, &mut b.pending, changes, enc);
        b.version = version;
        drop(s);
        self.bump();
        Ok((path, done))
    }

    /// Rule 4: `didClose`.
    pub fn close(&self, uri: &Uri) -> Option<PathBuf> {
        let path = self.path_of(uri)?;
        locks::lock(&self.state).buffers.remove(&path);
        self.paths.remove(uri.as_str());
        self.bump();
        Some(path)
    }

    /// Rule 1: the text the agent reads where the editor has one; `None`: read the disk.
    pub fn read(&self, path: &Path) -> Option<Text> {
        locks::lock(&self.state).text(path)
    }

    /// The URI of the open document at `path`.
    pub fn uri_of(&self, path: &Path) -> Option<Uri> {
        locks::lock(&self.state).buffers.get(path).map(|b| b.uri.clone())
    }

    /// Lines of the open document's text (0 when it is not open).
    pub fn line_count(&self, path: &Path) -> u32 {
        locks::lock(&self.state).buffers.get(path).map_or(0, |b| b.text().lines().count() as u32)
    }

    /// Rule 5: the editor applied the agent's edit.
    pub fn applied(&self, edit: AgentEdit) {
        let mut s = locks::lock(&self.state);
        match s.buffers.get_mut(&edit.path) {
            Some(b) => {
                // Made for this opening of the document; or opened while the edit was out, with the text
                // the edit was made on (the text it opened with may have the edit already).
                // Not when the text has it already: the editor's didChange can be handled before the
                // task holding its answer to applyEdit runs, and an insertion (`old` empty) would then
                // match again and wait for a report that never comes.
                let take = b.text() != edit.after
                    && (Some(b.opened) == edit.made_for || edit.before().as_deref() == Some(b.text()));
                if take && !b.push(edit.at, &edit.old, &edit.new) {
                    // The text moved under the edit (a report crossed it): the editor's next report stands.
                    tracing::warn!(
                        "an applied edit no longer matches {}; waiting for the editor's text",
                        edit.path.display()
                    );
                }
            }
            None if edit.made_for.is_none() => {
                s.overlay.insert(edit.path.clone(), edit.after);
            }
            // Closed while the edit was out: the disk is the truth.
            None => {}
        }
        let mark = s.next();
        s.unsaved.insert(edit.path, mark);
        drop(s);
        self.bump();
    }

    /// Rule 6: what must be saved before a command runs in `root`.
    pub fn unsaved_beneath(&self, root: &Path) -> Vec<Unsaved> {
        let s = locks::lock(&self.state);
        let mut out: Vec<Unsaved> = s
            .unsaved
            .iter()
            .filter(|(p, _)| p.starts_with(root))
            .map(|(p, m)| Unsaved { path: p.clone(), mark: *m })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// Rule 6: `u` is on disk (the editor saved it, or the server wrote it); a later mark stays.
    pub fn saved(&self, u: &Unsaved) {
        let mut s = locks::lock(&self.state);
        if s.unsaved.get(&u.path) == Some(&u.mark) {
            s.forget(&u.path);
        }
    }

    /// Rule 6: the text to write for a path the editor did not save, with its mark, if it is still
    /// unsaved; a path with no text left (closed, rule 4) is no longer unsaved.
    pub fn to_write(&self, path: &Path) -> Option<(String, Unsaved)> {
        let mut s = locks::lock(&self.state);
        let mark = *s.unsaved.get(path)?;
        match s.text(path) {
            Some(t) => Some((t.text, Unsaved { path: path.to_path_buf(), mark })),
            None => {
                s.unsaved.remove(path);
                None
            }
        }
    }

    /// Rule 7: the disk has the path's text now (`didSave`, or the server wrote it).
    pub fn on_disk(&self, path: &Path) {
        locks::lock(&self.state).forget(path);
    }

    /// Rule 8: keeps overlays and unsaved marks only of the paths `held` says a folder still holds.
    pub fn keep_only(&self, held: impl Fn(&Path) -> bool) {
        let mut s = locks::lock(&self.state);
        s.overlay.retain(|p, _| held(p));
        s.unsaved.retain(|p, _| held(p));
    }

    /// Waits until every edit applied to `path` has been reported (or it is closed), or `timeout` passes.
    /// An editor applies our edit and then reports it with `didChange`; the next edit waits for that, so
    /// it can name the version it applies to.
    pub async fn wait_settled(&self, path: &Path, timeout: Duration) -> bool {
        let mut rx = self.changed.subscribe();
        let wait = async {
            loop {
                let settled = locks::lock(&self.state).buffers.get(path).is_none_or(|b| b.pending.is_empty());
                if settled {
                    return true;
                }
                if rx.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.unwrap_or(false)
    }
}
