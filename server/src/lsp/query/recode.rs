//! Positions between the seam and the editor. The seam counts columns in UTF-16 (intel/source.rs); the
//! editor answers `stepwise/query` in the position encoding negotiated at `initialize` (Neovim offers
//! UTF-8). Each document's text (the editor's, else the disk's) converts them; files outside every
//! workspace folder are never read, their positions pass as they are.

use std::collections::HashMap;
use std::path::PathBuf;

use tower_lsp_server::ls_types::{
    DocumentChangeOperation, DocumentChanges, DocumentSymbol, DocumentSymbolResponse, Location, OneOf, Position, Range,
    SymbolInformation, Uri, WorkspaceEdit, WorkspaceSymbolResponse,
};

use crate::lsp::positions::{offset_of, position_of, Encoding};
use crate::lsp::shared::Shared;

/// The largest file read to convert positions in it.
const MAX_TEXT: u64 = 16 * 1024 * 1024;

pub struct Recode<'a> {
    shared: &'a Shared,
    enc: Encoding,
    texts: HashMap<PathBuf, Option<String>>,
}

impl<'a> Recode<'a> {
    pub fn new(shared: &'a Shared) -> Recode<'a> {
        Recode { shared, enc: shared.texts.encoding(), texts: HashMap::new() }
    }

    /// Whether positions need converting at all (not when the editor counts in UTF-16 too).
    fn needed(&self) -> bool {
        self.enc != Encoding::Utf16
    }

    async fn text(&mut self, uri: &Uri) -> Option<&str> {
        let path = self.shared.texts.path_of(uri)?;
        if !self.texts.contains_key(&path) {
            let text = match self.shared.texts.read(&path) {
                Some(t) => Some(t.text),
                None if self.shared.folder_of(&path).is_some() => read_small(&path).await,
                None => None,
            };
            self.texts.insert(path.clone(), text);
        }
        self.texts.get(&path)?.as_deref()
    }

    /// A seam position (UTF-16) as the editor counts it.
    pub async fn editor_position(&mut self, uri: &Uri, pos: Position) -> Position {
        let enc = self.enc;
        if !self.needed() {
            return pos;
        }
        match self.text(uri).await {
            Some(text) => position_of(text, offset_of(text, pos, Encoding::Utf16), enc),
            None => pos,
        }
    }

    /// An editor's range in UTF-16, in place.
    pub async fn range(&mut self, uri: &Uri, range: &mut Range) {
        let enc = self.enc;
        if !self.needed() {
            return;
        }
        if let Some(text) = self.text(uri).await {
            for p in [&mut range.start, &mut range.end] {
                *p = position_of(text, offset_of(text, *p, enc), Encoding::Utf16);
            }
        }
    }

    pub async fn locations(&mut self, locations: &mut [Location]) {
        for l in locations {
            self.range(&l.uri.clone(), &mut l.range).await;
        }
    }

    pub async fn symbols(&mut self, uri: &Uri, response: &mut DocumentSymbolResponse) {
        match response {
            DocumentSymbolResponse::Flat(list) => self.informations(list).await,
            DocumentSymbolResponse::Nested(list) => {
                // Depth-first without recursion (an async fn cannot call itself without boxing).
                let mut stack: Vec<&mut DocumentSymbol> = list.iter_mut().collect();
                while let Some(s) = stack.pop() {
                    self.range(uri, &mut s.range).await;
                    self.range(uri, &mut s.selection_range).await;
                    if let Some(children) = s.children.as_mut() {
                        stack.extend(children.iter_mut());
                    }
                }
            }
        }
    }

    pub async fn workspace_symbols(&mut self, response: &mut WorkspaceSymbolResponse) {
        match response {
            WorkspaceSymbolResponse::Flat(list) => self.informations(list).await,
            WorkspaceSymbolResponse::Nested(list) => {
                for s in list {
                    if let OneOf::Left(l) = &mut s.location {
                        self.range(&l.uri.clone(), &mut l.range).await;
                    }
                }
            }
        }
    }

    async fn informations(&mut self, list: &mut [SymbolInformation]) {
        for s in list {
            self.range(&s.location.uri.clone(), &mut s.location.range).await;
        }
    }

    pub async fn edit(&mut self, edit: &mut WorkspaceEdit) {
        if let Some(changes) = edit.changes.as_mut() {
            for (uri, edits) in changes.iter_mut() {
                for e in edits {
                    self.range(uri, &mut e.range).await;
                }
            }
        }
        let docs: Vec<_> = match edit.document_changes.as_mut() {
            Some(DocumentChanges::Edits(list)) => list.iter_mut().collect(),
            Some(DocumentChanges::Operations(ops)) => ops
                .iter_mut()
                .filter_map(|op| match op {
                    DocumentChangeOperation::Edit(e) => Some(e),
                    DocumentChangeOperation::Op(_) => None,
                })
                .collect(),
            None => Vec::new(),
        };
        for doc in docs {
            let uri = doc.text_document.uri.clone();
            for e in doc.edits.iter_mut() {
                match e {
                    OneOf::Left(e) => self.range(&uri, &mut e.range).await,
                    OneOf::Right(e) => self.range(&uri, &mut e.text_edit.range).await,
                }
            }
        }
    }
}

async fn read_small(path: &std::path::Path) -> Option<String> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    if !meta.is_file() || meta.len() > MAX_TEXT {
        return None;
    }
    // Through `text_file`: the file may have become a FIFO since (a plain open would wait on it).
    let path = path.to_path_buf();
    let bytes = tokio::task::spawn_blocking(move || crate::text_file::read(&path, MAX_TEXT, true)).await.ok()?.ok()?;
    String::from_utf8(bytes).ok()
}
