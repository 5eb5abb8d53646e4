//! What the client said it can do, reduced to what the server asks of it.

use serde_json::Value;
use tower_lsp_server::ls_types::{ClientCapabilities, ResourceOperationKind};

#[derive(Debug, Clone, Copy, Default)]
pub struct Caps {
    pub apply_edit: bool,
    pub document_changes: bool,
    pub create_files: bool,
    pub work_done_progress: bool,
    pub configuration: bool,
    /// `experimental.stepwise.saveDocuments`: the editor saves documents on `stepwise/saveDocuments`.
    pub save_documents: bool,
    pub refresh_lenses: bool,
    /// `experimental.stepwise.ask`: questions go as the typed `stepwise/ask`, not `window/showMessageRequest`.
    pub ask: bool,
    /// `experimental.stepwise.query`: the editor answers `stepwise/query` from its own language servers,
    /// so it is the folders' source of code intelligence.
    pub query: bool,
}

impl Caps {
    pub fn of(c: &ClientCapabilities) -> Caps {
        let ws = c.workspace.as_ref();
        let edit = ws.and_then(|w| w.workspace_edit.as_ref());
        Caps {
            apply_edit: ws.and_then(|w| w.apply_edit).unwrap_or(false),
            document_changes: edit.and_then(|e| e.document_changes).unwrap_or(false),
            create_files: edit
                .and_then(|e| e.resource_operations.as_ref())
                .is_some_and(|ops| ops.contains(&ResourceOperationKind::Create)),
            work_done_progress: c.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false),
            configuration: ws.and_then(|w| w.configuration).unwrap_or(false),
            save_documents: declared(c, "/stepwise/saveDocuments"),
            ask: declared(c, "/stepwise/ask"),
            query: declared(c, "/stepwise/query"),
            refresh_lenses: ws.and_then(|w| w.code_lens.as_ref()).and_then(|l| l.refresh_support).unwrap_or(false),
        }
    }
}

/// Whether `experimental` has `true` at `pointer`.
fn declared(c: &ClientCapabilities, pointer: &str) -> bool {
    c.experimental.as_ref().and_then(|e| e.pointer(pointer)).and_then(Value::as_bool).unwrap_or(false)
}
