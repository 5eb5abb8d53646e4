//! The seam of code intelligence: what the engine asks of whoever knows the code (an editor answering
//! `stepwise/query`, or the language servers stepwise starts itself), in LSP's own types. Part of the
//! host's seam (a host offers its source through `Host::intelligence`), so it lives here; `crate::intel`
//! uses it and re-exports it as `intel::source`.
//!
//! The engine (tools, the round's `<diagnostics>` block) speaks to a source only through this trait, so the
//! agent loop never knows about LSP or editors. Paths here are absolute and inside the workspace; positions
//! and ranges are LSP's (0-based lines, UTF-16 columns, as in `stepwise/query`); the conversion to the
//! model's workspace-relative paths and 1-based lines and columns happens at the tool boundary (`intel::text`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
pub use tower_lsp_server::ls_types::{
    Diagnostic, DocumentSymbolResponse, Hover, Location, Position, Uri, WorkspaceEdit, WorkspaceSymbolResponse,
};

/// Text the agent wrote to one file (a file tool, a rename, or a shell command the checkpoints saw change it).
#[derive(Debug, Clone)]
pub struct Written {
    /// Absolute, inside the workspace.
    pub path: PathBuf,
    /// The text before the change (`None`: a new file, or a shell command's change whose text before is
    /// unknown). A source that never saw the file uses it to know the diagnostics from before the change.
    pub before: Option<Arc<str>>,
    /// The whole text after the change.
    pub text: Arc<str>,
}

/// The most diagnostics a source keeps for one file (a server or an editor flooding thousands costs
/// bounded memory; `FileDiagnostics::dropped` counts the rest).
pub const KEEP_PER_FILE: usize = 200;

/// A request for diagnostics.
#[derive(Debug, Clone)]
pub struct DiagnosticsRequest {
    /// The files asked about (absolute). Empty: every file the source has diagnostics for.
    pub paths: Vec<PathBuf>,
    /// Wait until each asked file's diagnostics are those of the text last `wrote` for it (the server
    /// published or answered for that version, or its `$/progress` work ended), at most `max_wait`
    /// (each source may wait less: it learns how long its servers take). `false`: what is known now.
    pub settle: bool,
    /// The longest the caller will wait; files not settled by then are `Checked::No`.
    pub max_wait: Duration,
}

/// Whether a file's diagnostics are those of the text the agent wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    Yes,
    /// Not known in time: `who` (a server's name, or "the editor") did not answer within `waited`.
    No {
        who: String,
        waited: Duration,
    },
    /// Cannot be checked at all (no server for it, a server that cannot start or crashed): the reason,
    /// one line the model reads.
    Failed(String),
}

/// The diagnostics of one file.
#[derive(Debug, Clone)]
pub struct FileDiagnostics {
    /// Absolute. A source may report files it was not asked about (the servers found them affected);
    /// the engine shows only those inside the workspace.
    pub path: PathBuf,
    /// The file's diagnostics now (for the text last written, when `checked` is `Yes`).
    pub diagnostics: Vec<Diagnostic>,
    /// The file's diagnostics from before the agent first wrote to it, when the source knows them (it
    /// saw the file before, or opened it with `Written::before`). The engine prefers its own view from
    /// its previous report of the file; with neither, every diagnostic counts as new.
    pub before: Option<Vec<Diagnostic>>,
    pub checked: Checked,
    /// How many more the source was given for the file than it kept (a server flooding thousands: memory
    /// stays bounded, and the model is told how many it does not see).
    pub dropped: usize,
}

/// A question about the code, as `stepwise/query` asks it. Positions are in the text the source has for
/// the file (the agent's latest writes included).
#[derive(Debug, Clone)]
pub enum Query {
    Definition { path: PathBuf, position: Position },
    References { path: PathBuf, position: Position },
    Implementation { path: PathBuf, position: Position },
    Hover { path: PathBuf, position: Position },
    DocumentSymbols { path: PathBuf },
    WorkspaceSymbols { query: String },
    Rename { path: PathBuf, position: Position, new_name: String },
}

/// The answer to a `Query`, the LSP result of its kind (`None`/empty: the server knows nothing there).
#[derive(Debug, Clone)]
pub enum Answer {
    /// Definition, references, implementation (a `LocationLink` answer is turned into its target).
    Locations(Vec<Location>),
    Hover(Option<Hover>),
    DocumentSymbols(Option<DocumentSymbolResponse>),
    WorkspaceSymbols(Option<WorkspaceSymbolResponse>),
    /// A rename's edit; the engine applies it as the agent's own edits through the `Host`.
    Edit(Option<WorkspaceEdit>),
}

/// A source of code intelligence for one workspace. Cheap to clone behind an `Arc`; every method returns
/// at once or gives a future that ends by its deadline (a source never hangs the loop).
pub trait Intelligence: Send + Sync {
    /// Who answers, for lines the model reads ("the editor", or "language servers").
    fn who(&self) -> String;

    /// Whether the source can say anything about this file (the editor: any file; servers stepwise
    /// starts: a file whose extension one of them serves).
    fn covers(&self, path: &Path) -> bool;

    /// The agent wrote to a file. Returns at once: checking starts now (a server is fed the text), so the
    /// wait at the end of the round overlaps the round's other calls. An editor source may do nothing:
    /// the edit reached its buffers through the host.
    fn wrote(&self, written: Written);

    /// The diagnostics of the asked files (and of files the servers report as affected).
    fn diagnostics(&self, req: DiagnosticsRequest) -> BoxFuture<'_, Vec<FileDiagnostics>>;

    /// A navigation or rename question. `Err`: one line the model reads (no server for the file, the
    /// server failed or did not answer in time).
    fn query(&self, q: Query) -> BoxFuture<'_, Result<Answer, String>>;

    /// Whether `FileDiagnostics::before` is given for every file whose errors from before the agent's
    /// first write the source learned (the servers stepwise starts open a file with its text from before
    /// and wait for its check): then `None` means not known, and the engine compares nothing for the file.
    /// An editor gives none: the engine compares with its own view, or counts every error as new.
    fn knows_before(&self) -> bool {
        false
    }

    /// The file's diagnostics now, settled for the text the source has for it, within `wait`: asked of a
    /// source that does not learn a file's errors from before by itself (`knows_before` false: an editor),
    /// before the agent first changes the file, so the errors already there are not claimed as new.
    /// `may_open`: the agent is about to write the file, so an editor may open a document it does not have
    /// open to answer (unshown); after a read only a document already open is asked about (the agent may
    /// read many files it never changes). `None`: not known in time, or nothing to ask (the servers
    /// stepwise starts learn it from `Written::before`).
    fn learn_before(&self, _path: &Path, _wait: Duration, _may_open: bool) -> BoxFuture<'_, Option<Vec<Diagnostic>>> {
        Box::pin(async { None })
    }

    /// Lines the model is told once, in the next `<diagnostics>` block (a server crashed and was
    /// restarted). Taking them empties them.
    fn notices(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether it may still answer: `false` once every language server it would use for the workspace is
    /// known not to start (the code-intelligence tools, which could only fail, are not offered in the runs
    /// after; the `<diagnostics>` block still says which files are not checked).
    fn can_answer(&self) -> bool {
        true
    }
}

/// A session's source, shared by the host, the tools and the round.
pub type Source = Arc<dyn Intelligence>;
