//! The editor's view of the files: the text of open buffers, kept in sync in order.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use dashmap::DashMap;
use tower_lsp_server::ls_types::{Position, PositionEncodingKind, Range, TextDocumentContentChangeEvent, Uri};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// UTF-8 when the client offers it (no conversion needed), else UTF-16 as LSP requires.
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Encoding {
        let offered = offered.unwrap_or(&[]);
        if offered.contains(&PositionEncodingKind::UTF8) {
            Encoding::Utf8
        } else if offered.is_empty() || offered.contains(&PositionEncodingKind::UTF16) {
            Encoding::Utf16
        } else if offered.contains(&PositionEncodingKind::UTF32) {
            Encoding::Utf32
        } else {
            Encoding::Utf16
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
            Encoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    fn width(self, c: char) -> usize {
        match self {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
            Encoding::Utf32 => 1,
        }
    }
}

/// Byte offset of an LSP position; positions past a line's end clamp to it, past the text to its end.
pub fn offset_of(text: &str, pos: Position, enc: Encoding) -> usize {
    let mut line_start = 0;
    for _ in 0..pos.line {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    let line_end = text[line_start..].find('\n').map(|i| line_start + i).unwrap_or(text.len());
    let line = text[line_start..line_end].strip_suffix('\r').unwrap_or(&text[line_start..line_end]);
    let mut units = 0usize;
    for (i, c) in line.char_indices() {
        if units >= pos.character as usize {
            return line_start + i;
        }
        units += enc.width(c);
    }
    line_start + line.len()
}

/// LSP position of a byte offset (which must fall on a char boundary).
pub fn position_of(text: &str, offset: usize, enc: Encoding) -> Position {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let character = before[line_start..].chars().map(|c| enc.width(c)).sum::<usize>() as u32;
    Position { line, character }
}

pub fn range_of(text: &str, bytes: std::ops::Range<usize>, enc: Encoding) -> Range {
    Range { start: position_of(text, bytes.start, enc), end: position_of(text, bytes.end, enc) }
}

#[derive(Debug, Clone)]
pub struct Doc {
    pub uri: Uri,
    pub text: String,
    pub version: i32,
}

pub struct Documents {
    docs: DashMap<PathBuf, Doc>,
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
            self.docs.insert(path, Doc { uri, text, version });
            self.bump();
        }
    }

    /// Applies one `didChange`, synchronously: callers must not await before calling this, so that
    /// changes are applied in the order they arrived.
    pub fn change(&self, uri: &Uri, version: i32, changes: Vec<TextDocumentContentChangeEvent>) -> Result<(), String> {
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
        for c in changes {
            match c.range {
                None => doc.text = c.text,
                Some(r) => {
                    let start = offset_of(&doc.text, r.start, enc);
                    let end = offset_of(&doc.text, r.end, enc).max(start);
                    doc.text.replace_range(start..end, &c.text);
                }
            }
        }
        doc.version = version;
        drop(doc);
        self.bump();
        Ok(())
    }

    pub fn close(&self, uri: &Uri) -> Option<PathBuf> {
        let path = self.path_of(uri)?;
        self.docs.remove(&path);
        self.paths.remove(uri.as_str());
        self.bump();
        Some(path)
    }

    pub fn get(&self, path: &Path) -> Option<Doc> {
        self.docs.get(path).map(|d| d.clone())
    }

    pub fn text(&self, path: &Path) -> Option<String> {
        self.docs.get(path).map(|d| d.text.clone())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Waits until `path` is open with a version newer than `after`, or `timeout` passes.
    /// An editor applies our edit and then reports it with `didChange`; reads wait for that report.
    pub async fn wait_newer(&self, path: &Path, after: i32, timeout: Duration) -> bool {
        let mut rx = self.changed.subscribe();
        let check = |docs: &DashMap<PathBuf, Doc>| docs.get(path).is_some_and(|d| d.version > after);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_in_each_encoding() {
        let text = "a😀b\r\nsecond ünïcode\nlast";
        for enc in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            for (off, _) in text.char_indices().filter(|(i, _)| text.is_char_boundary(*i)) {
                if text[..off].ends_with('\r') {
                    continue; // inside a CRLF pair
                }
                let pos = position_of(text, off, enc);
                assert_eq!(offset_of(text, pos, enc), off, "{enc:?} {off} {pos:?}");
            }
        }
        assert_eq!(position_of(text, text.find('b').unwrap(), Encoding::Utf16).character, 3);
        assert_eq!(position_of(text, text.find('b').unwrap(), Encoding::Utf8).character, 5);
        assert_eq!(position_of(text, text.find('b').unwrap(), Encoding::Utf32).character, 2);
        // Past the end of a line clamps to it (before the CR).
        assert_eq!(offset_of(text, Position { line: 0, character: 99 }, Encoding::Utf16), text.find('\r').unwrap());
        assert_eq!(offset_of(text, Position { line: 9, character: 0 }, Encoding::Utf16), text.len());
    }
}
