//! Which editor the fake one imitates, and how it answers each kind of server request.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::ErrorObj;

/// Which editor the fake one imitates: its capabilities and its default answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientPreset {
    /// utf-16 only; applyEdit with documentChanges and `create`; work-done progress; code lens
    /// refresh; configuration; `experimental.stepwise.saveDocuments`.
    VsCode,
    /// utf-8/utf-16/utf-32; applyEdit with documentChanges (no resource operations); work-done
    /// progress; no code lens refresh; configuration.
    Neovim,
    /// Declares nothing at all (no applyEdit, no progress, no configuration).
    Bare,
}

impl ClientPreset {
    pub fn capabilities(self) -> Value {
        match self {
            ClientPreset::VsCode => json!({
                "general": {"positionEncodings": ["utf-16"]},
                "workspace": {
                    "applyEdit": true,
                    "workspaceEdit": {
                        "documentChanges": true,
                        "resourceOperations": ["create", "rename", "delete"],
                        "failureHandling": "textOnlyTransactional",
                    },
                    "configuration": true,
                    "workspaceFolders": true,
                    "didChangeConfiguration": {"dynamicRegistration": true},
                    "executeCommand": {"dynamicRegistration": true},
                    "codeLens": {"refreshSupport": true},
                },
                "textDocument": {
                    "synchronization": {"dynamicRegistration": true, "didSave": true, "willSave": true},
                    "codeLens": {"dynamicRegistration": true},
                },
                "window": {
                    "workDoneProgress": true,
                    "showMessage": {"messageActionItem": {"additionalPropertiesSupport": true}},
                },
                "experimental": {"stepwise": {"saveDocuments": true}},
            }),
            ClientPreset::Neovim => json!({
                "general": {"positionEncodings": ["utf-8", "utf-16", "utf-32"]},
                "workspace": {
                    "applyEdit": true,
                    "workspaceEdit": {"documentChanges": true},
                    "configuration": true,
                    "workspaceFolders": true,
                    "didChangeConfiguration": {"dynamicRegistration": false},
                    "codeLens": {"refreshSupport": false},
                },
                "textDocument": {
                    "synchronization": {"didSave": true, "willSave": true, "dynamicRegistration": false},
                    "codeLens": {"dynamicRegistration": false},
                },
                "window": {"workDoneProgress": true, "showMessage": {"messageActionItem": {"additionalPropertiesSupport": true}}},
            }),
            ClientPreset::Bare => json!({}),
        }
    }

    pub(crate) fn default_policies(self) -> HashMap<String, Policy> {
        let mut p = HashMap::new();
        p.insert("workspace/applyEdit".into(), Policy::ApplyEdits);
        p.insert("workspace/codeLens/refresh".into(), Policy::Respond(Value::Null));
        p.insert("window/workDoneProgress/create".into(), Policy::Respond(Value::Null));
        p.insert("workspace/configuration".into(), Policy::Configuration);
        p.insert("stepwise/saveDocuments".into(), Policy::SaveDocuments);
        p.insert("client/registerCapability".into(), Policy::Respond(Value::Null));
        p
    }
}

/// How the editor answers one kind of server→client request.
#[derive(Clone)]
pub enum Policy {
    /// Keep it for the test: [`TestEditor::await_request`], then [`TestEditor::respond`].
    Queue,
    /// Answer with this result.
    Respond(Value),
    /// Answer with this error.
    RespondError(ErrorObj),
    /// `workspace/applyEdit`: apply the edit to the editor's documents (a real editor's behaviour),
    /// report it with `didChange`, answer `{"applied": true}` (or `false` with a reason when it
    /// cannot be applied, e.g. a version mismatch).
    ApplyEdits,
    /// `workspace/applyEdit`: answer `{"applied": false, "failureReason": <reason>}`.
    RejectEdits(String),
    /// Never answer.
    NeverAnswer,
    /// `stepwise/saveDocuments`: write the documents to disk, send `didSave`, answer `{"saved": uris}`.
    SaveDocuments,
    /// `workspace/configuration`: one copy of the editor's settings per item.
    Configuration,
    /// Any answer computed from the params.
    With(Answer),
}

/// A computed answer to a server request.
pub type Answer = Arc<dyn Fn(&Value) -> Result<Value, ErrorObj> + Send + Sync>;

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            Policy::Queue => "Queue",
            Policy::Respond(_) => "Respond",
            Policy::RespondError(_) => "RespondError",
            Policy::ApplyEdits => "ApplyEdits",
            Policy::RejectEdits(_) => "RejectEdits",
            Policy::NeverAnswer => "NeverAnswer",
            Policy::SaveDocuments => "SaveDocuments",
            Policy::Configuration => "Configuration",
            Policy::With(_) => "With",
        };
        f.write_str(s)
    }
}
