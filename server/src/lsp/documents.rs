//! The editor's view of the files: the text of open buffers, kept in sync in order.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use dashmap::DashMap;
use tower_lsp_server::ls_types::{TextDocumentContentChangeEvent, Uri};

use super::positions::Encoding;
use super::reconcile::{self, Pending, Reconciled};

/// An open document as the agent sees it.
#[derive(Debug, Clone)]
pub struct Doc {
    pub uri: Uri,
    /// The editor's text, with every edit it applied (reported or not).
    pub text: String,
    /// The version the editor last reported.
    pub version: i32,
    /// Every applied edit has been reported: `version` names `text`.
    pub settled: bool,
}

/// What the server keeps of an open document.
struct Entry {
    uri: Uri,
    /// The text as the editor last reported it, at `version`.
    reported: String,
    version: i32,
    /// Edits the editor applied that it has not reported yet (reconcile.rs).
    pending: Vec<Pending>,
}

impl Entry {
    fn text(&self) -> &str {
        self.pending.last().map(|p| p.after.as_str()).unwrap_or(&self.reported)
    }

    fn doc(&self) -> Doc {
        Doc {
            uri: self.uri.clone(),
            text: self.text().to_string(),
            version: self.version,
            settled: self.pending.is_empty(),
        }
    }
}

pub struct Documents {
    docs: DashMap<PathBuf, Entry>,
    paths: DashMap<String, PathBuf>,
    /// Negotiated once, by `initialize`; UTF-16 (the LSP default) until then.
    encoding: OnceLock<Encoding>,
    changed: tokio::sync::watch::Sender<u64>,
}

impl Default for Documents {
    fn default() -> Self {
        Documents {
            docs: DashMap::new(),
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

impl Documents {
    pub fn set_encoding(&self, enc: Encoding) {
        if self.encoding.set(enc).is_err() {
            tracing::warn!("the position encoding was negotiated already; it stays");
        }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding.get().copied().unwrap_or(Encoding::Utf16)
    }

    /// The file path of a `file:` URI (cached, since every change names its document).
    pub fn path_of(&self, uri: &Uri) -> Option<PathBuf> {
        if let Some(p) = self.paths.get(uri.as_str()) {
            return Some(p.clone());
        }
        let p = normalize(&uri.to_file_path()?);
        self.paths.insert(uri.as_str().to_string(), p.clone());
        Some(p)
    }

    pub fn open(&self, uri: Uri, text: String, version: i32) {
        if let Some(path) = self.path_of(&uri) {
            self.docs.insert(path, Entry { uri, reported: text, version, pending: Vec::new() });
            self.bump();
        }
    }

    /// Applies one `didChange`, synchronously: callers must not await before calling this, so that
    /// changes are applied in the order they arrived. Returns the document's path and what the change
    /// did besides reporting the agent's own edits.
    pub fn change(
        &self,
        uri: &Uri,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) -> Result<(PathBuf, Reconciled), String> {
        let path = self.path_of(uri).ok_or_else(|| format!("not a file URI: {}", uri.as_str()))?;
        let enc = self.encoding();
        let mut doc = self
            .docs
            .get_mut(&path)
            .ok_or_else(|| format!("change to a document that is not open: {}", uri.as_str()))?;
        // Versions only grow: a change that is not newer than what we have would be applied out of order.
        if version <= doc.version {
            return Err(format!(
                "ignoring a stale change to {}: version {version} is not newer than {}",
                uri.as_str(),
                doc.version
            ));
        }
        let e = &mut *doc;
        let done = reconcile::apply(&mut e.reported, &mut e.pending, changes, enc);
        e.version = version;
        drop(doc);
        self.bump();
        Ok((path, done))
    }

    /// The editor answered `applied: true` to replacing `old` at byte `at` of the document's text with
    /// `new`: the server's copy has the edit from now on, reported or not.
    pub fn applied(&self, path: &Path, at: usize, old: &str, new: &str) {
        if let Some(mut e) = self.docs.get_mut(path) {
            let mut after = e.text().to_string();
            if after.get(at..at + old.len()) != Some(old) {
                // The text moved under the edit (a report crossed it): the editor's next report stands.
                tracing::warn!("an applied edit no longer matches {}; waiting for the editor's text", path.display());
                return;
            }
            after.replace_range(at..at + old.len(), new);
            e.pending.push(Pending { at, old: old.to_string(), new: new.to_string(), after });
            drop(e);
            self.bump();
        }
    }

    pub fn close(&self, uri: &Uri) -> Option<PathBuf> {
        let path = self.path_of(uri)?;
        self.docs.remove(&path);
        self.paths.remove(uri.as_str());
        self.bump();
        Some(path)
    }

    pub fn get(&self, path: &Path) -> Option<Doc> {
        self.docs.get(path).map(|d| d.doc())
    }

    /// Lines of the document's text (0 when it is not open).
    pub fn line_count(&self, path: &Path) -> u32 {
        self.docs.get(path).map_or(0, |d| d.text().lines().count() as u32)
    }

    /// The text with every applied edit (what is written for a shell command).
    pub fn text(&self, path: &Path) -> Option<String> {
        self.docs.get(path).map(|d| d.text().to_string())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Waits until every edit applied to `path` has been reported (or it is closed), or `timeout` passes.
    /// An editor applies our edit and then reports it with `didChange`; the next edit waits for that, so
    /// it can name the version it applies to.
    pub async fn wait_settled(&self, path: &Path, timeout: Duration) -> bool {
        let mut rx = self.changed.subscribe();
        let check = |docs: &DashMap<PathBuf, Entry>| docs.get(path).is_none_or(|d| d.pending.is_empty());
        let wait = async {
            loop {
                if check(&self.docs) {
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
