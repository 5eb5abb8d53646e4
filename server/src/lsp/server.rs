//! Protocol glue: LSP methods map onto folders, documents and runs.

use std::sync::Arc;

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::caps::Caps;
use super::commands;
use super::ext::COMMANDS;
use super::frames::InvalidMessage;
use super::notify::Outgoing;
use super::positions::Encoding;
use super::session::{lens_title, Session};
use super::settings::init_state_dir;
use super::shared::Shared;
use crate::locks;

pub struct Backend {
    shared: Arc<Shared>,
}

impl Backend {
    pub fn new(client: Client) -> Backend {
        Backend { shared: Arc::new(Shared::new(client)) }
    }

    pub(super) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// `window/workDoneProgress/cancel`: the user cancelled a run from the editor's progress UI.
    pub async fn progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        let ProgressToken::String(token) = params.token else { return };
        let Some(run_id) = token.strip_prefix("stepwise/") else { return };
        for s in self.shared.all_sessions() {
            if s.ws.running().as_deref() == Some(run_id) {
                s.ws.cancel();
            }
        }
    }

    /// The answer to a malformed frame (frames.rs turns each into a request to this method).
    pub async fn invalid_message(&self, p: InvalidMessage) -> Result<Value> {
        Err(Error { code: ErrorCode::from(p.code), message: p.message.into(), data: None })
    }
}

fn capabilities(enc: Encoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(enc.kind()),
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::INCREMENTAL),
            save: Some(TextDocumentSyncSaveOptions::Supported(true)),
            ..Default::default()
        })),
        code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: COMMANDS.iter().map(|c| c.to_string()).collect(),
            ..Default::default()
        }),
        workspace: Some(WorkspaceServerCapabilities {
            workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                supported: Some(true),
                change_notifications: Some(OneOf::Left(true)),
            }),
            file_operations: None,
        }),
        ..Default::default()
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let c = &params.capabilities;
        let options = params.initialization_options.as_ref();
        // Before the folders are added: they load their saved sessions from the state directory.
        self.shared.initialize(Caps::of(c), options.and_then(init_state_dir));
        let enc = Encoding::negotiate(c.general.as_ref().and_then(|g| g.position_encodings.as_deref()));
        self.shared.texts.set_encoding(enc);
        if let Some(v) = options {
            *locks::write(&self.shared.init_settings) = self.shared.settings_from(v);
        }
        #[allow(deprecated)]
        let folders = match (&params.workspace_folders, &params.root_uri) {
            (Some(f), _) if !f.is_empty() => f.iter().map(|f| f.uri.clone()).collect(),
            (_, Some(root)) => vec![root.clone()],
            _ => Vec::new(),
        };
        for uri in &folders {
            self.shared.add_folder(uri);
        }
        Ok(InitializeResult {
            capabilities: capabilities(enc),
            server_info: Some(ServerInfo { name: "stepwise".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        // Messages from `initialize` (a folder that cannot be used, a saved session that cannot be read).
        self.shared.release_early();
        let folders: Vec<_> = self.shared.folders.iter().map(|f| f.clone()).collect();
        super::events::announce_restored(&self.shared, &self.shared.all_sessions());
        self.shared.prune_sessions(&folders);
        self.shared.clone().fetch_configuration_later();
    }

    async fn shutdown(&self) -> Result<()> {
        self.shared.wrap_up(std::time::Duration::from_secs(2)).await;
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let d = params.text_document;
        self.shared.texts.open(d.uri, d.text, d.version);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        // Applied before any await, so changes keep the order in which they arrived.
        let doc = params.text_document;
        match self.shared.texts.change(&doc.uri, doc.version, params.content_changes) {
            Ok((path, done)) => {
                if let Some(f) = self.shared.folder_of(&path) {
                    let lines = || self.shared.texts.line_count(&path);
                    let mut moved = false;
                    for s in f.in_place() {
                        moved |= s.follow_changes(&path, done.foreign.as_deref(), lines);
                    }
                    if moved {
                        self.shared.notifier.send(Outgoing::RefreshLenses);
                    }
                }
            }
            Err(e) => tracing::warn!("{e}"),
        }
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        if let Some(path) = self.shared.texts.path_of(&params.text_document.uri) {
            self.shared.texts.on_disk(&path);
            if let Some(f) = self.shared.folder_of(&path) {
                for s in f.in_place() {
                    s.ws.note_user_save(&path);
                    let shared = self.shared.clone();
                    tokio::spawn(async move { super::review::refresh(&shared, &s).await });
                }
            }
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.shared.texts.close(&params.text_document.uri);
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        for f in &params.event.removed {
            self.shared.remove_folder(&f.uri);
        }
        let added: Vec<Arc<Session>> = params
            .event
            .added
            .iter()
            .filter_map(|f| self.shared.add_folder(&f.uri))
            .flat_map(|f| f.sessions())
            .collect();
        super::events::announce_restored(&self.shared, &added);
        self.shared.clone().fetch_configuration_later();
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        // Clients that push settings send them here; clients that are asked get asked again.
        self.shared.push_settings(&params.settings);
        self.shared.clone().fetch_configuration_later();
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        let Some(path) = self.shared.texts.path_of(&params.text_document.uri) else { return Ok(None) };
        let Some(folder) = self.shared.folder_of(&path) else { return Ok(None) };
        let text = self.shared.texts.read(&path).map(|t| t.text).unwrap_or_default();
        let sessions = folder.in_place();
        let several = sessions.len() > 1;
        let mut lenses = Vec::new();
        for session in &sessions {
            lenses.extend(session_lenses(session, &path, &text, several));
        }
        Ok(Some(lenses))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        commands::execute(&self.shared, &params.command, &params.arguments).await
    }
}

/// One session's lenses on a document of its folder: its plan on line 0 (its title too when the folder has
/// several sessions), its edit marks, and Keep / Undo above each unreviewed hunk.
fn session_lenses(session: &Session, path: &std::path::Path, text: &str, several: bool) -> Vec<CodeLens> {
    let plan = session.ws.plan_board().read(|s| (!s.plan.is_empty()).then(|| lens_title(&s.plan)));
    let mut lenses = super::review::lenses(session, path, text);
    let Some(mut title) = plan else { return lenses };
    if several {
        title = format!("{} · {title}", session.title);
    }
    let hunks = super::review::pending_hunks(session);
    if hunks > 0 {
        title.push_str(&format!(" · {hunks} {} to review", if hunks == 1 { "hunk" } else { "hunks" }));
    }
    let view = locks::read(&session.view);
    // `stepwise.plan`'s own argument.
    let arg = super::ext::WorkspaceArgs { workspace: Some(session.uri.clone()), session: Some(session.id.clone()) };
    let args = serde_json::to_value(arg).ok().map(|a| vec![a]);
    let lens = |line: u32, title: String| CodeLens {
        range: Range { start: Position { line, character: 0 }, end: Position { line, character: 0 } },
        command: Some(Command { title, command: "stepwise.plan".into(), arguments: args.clone() }),
        data: None,
    };
    lenses.insert(0, lens(0, title));
    for m in view.marks.iter().filter(|m| m.path == path) {
        lenses.push(lens(m.start, format!("✎ stepwise: {}", m.step)));
    }
    lenses
}
