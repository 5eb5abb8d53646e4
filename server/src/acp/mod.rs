//! `stepwise acp`: the engine as an Agent Client Protocol (v1) agent over stdio (newline-delimited
//! JSON-RPC), for Zed, JetBrains and the Neovim and Emacs ACP clients. One connection, any number of
//! sessions, each a conversation and plan in one folder. The mapping is documented in docs/acp.md.
//!
//! The SDK (`agent-client-protocol`) owns the wire: framing, malformed JSON, unknown methods and ids.
//! Handlers run inside its dispatch loop, so anything that waits on the client (a prompt's run asks for
//! permissions and files) is spawned on the connection and answers its request when done.

mod asker;
mod background;
mod commands;
mod events;
mod host;
mod mcp;
mod modes;
mod prompt;
mod replay;
mod session_list;
mod sessions;
mod stdio;
mod subagents;
mod terminal;
mod tool_calls;
mod updates;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, CloseSessionResponse, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities,
    SessionListCapabilities, SessionResumeCapabilities, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Agent, ConnectTo, Error, ErrorCode};
use serde_json::json;

use crate::locks;
use crate::workspace::guarded;
use sessions::Sessions;

/// What the client said it can do, from `initialize`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClientFs {
    pub read: bool,
    pub write: bool,
    /// `terminal/*`: shell commands run in the client's terminals (acp/terminal.rs).
    pub terminal: bool,
    /// Subagent sessions: each child agent a session of its own (acp/subagents.rs).
    pub subagents: bool,
}

pub(crate) struct Acp {
    sessions: Sessions,
    fs: std::sync::RwLock<ClientFs>,
}

impl Acp {
    fn fs(&self) -> ClientFs {
        *locks::read(&self.fs)
    }
}

/// Serves ACP on stdin/stdout until the client closes its end; returns the exit code.
pub async fn serve_stdio() -> i32 {
    tracing::info!("stepwise {} serving ACP on stdio", env!("CARGO_PKG_VERSION"));
    match serve(stdio::transport()).await {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!("ACP connection failed: {e:?}");
            1
        }
    }
}

/// Serves one client over `transport` (stdio in production).
pub async fn serve(transport: impl ConnectTo<Agent> + 'static) -> Result<(), Error> {
    let dir = crate::store::state_dir();
    // Before serving: no session is open yet, and `session/list` does not show what goes.
    crate::prune::sessions(dir.as_ref().map(|d| d.join("acp")).as_deref(), &[]);
    let acp = Arc::new(Acp { sessions: Sessions::new(dir), fs: Default::default() });
    let (a1, a2, a3, a4, a5) = (acp.clone(), acp.clone(), acp.clone(), acp.clone(), acp.clone());
    let (a6, a7, a8, a9) = (acp.clone(), acp.clone(), acp.clone(), acp.clone());
    let served = Agent
        .v1()
        .name("stepwise")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx| {
                let fs = &req.client_capabilities.fs;
                let terminal = req.client_capabilities.terminal;
                let subagents = req.client_capabilities.subagents.is_some();
                *locks::write(&a1.fs) =
                    ClientFs { read: fs.read_text_file, write: fs.write_text_file, terminal, subagents };
                // We speak v1 only; a client asking for a newer version gets ours and decides.
                let info = Implementation::new("stepwise", env!("CARGO_PKG_VERSION")).title("stepwise".to_string());
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(true)
                                .prompt_capabilities(PromptCapabilities::new().image(true))
                                .mcp_capabilities(McpCapabilities::new().http(true))
                                .session_capabilities(
                                    SessionCapabilities::new()
                                        .list(SessionListCapabilities::new())
                                        .resume(SessionResumeCapabilities::new())
                                        .close(SessionCloseCapabilities::new()),
                                ),
                        )
                        .agent_info(info),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx| {
                let root = match session_folder(&req.cwd) {
                    Ok(r) => r,
                    Err(e) => return responder.respond_with_error(e),
                };
                let session = a2.sessions.create(root);
                for problem in session.mcp.take(&req.mcp_servers) {
                    tracing::warn!("session/new: {problem}");
                }
                tracing::info!("session {} in {}", session.id, session.root().display());
                let modes = modes::state(session.mode());
                responder.respond(NewSessionResponse::new(session.id.clone()).modes(modes))?;
                commands::advertise(&cx, &session);
                background::watch(&cx, &session);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx| {
                let root = match session_folder(&req.cwd) {
                    Ok(r) => r,
                    Err(e) => return responder.respond_with_error(e),
                };
                let session = match a3.sessions.load(&req.session_id.0, &root) {
                    Ok(s) => s,
                    Err(e) => return responder.respond_with_error(e),
                };
                for problem in session.mcp.take(&req.mcp_servers) {
                    tracing::warn!("session/load: {problem}");
                }
                // The history goes out before the answer: the client shows it, then continues.
                replay::send_history(&session, &cx).await;
                responder.respond(LoadSessionResponse::new().modes(modes::state(session.mode())))?;
                commands::advertise(&cx, &session);
                background::watch(&cx, &session);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ResumeSessionRequest, responder, cx| {
                // As session/load, without telling the history again.
                let loaded = session_folder(&req.cwd).and_then(|root| a6.sessions.load(&req.session_id.0, &root));
                let session = match loaded {
                    Ok(s) => s,
                    Err(e) => return responder.respond_with_error(e),
                };
                responder.respond(ResumeSessionResponse::new().modes(modes::state(session.mode())))?;
                commands::advertise(&cx, &session);
                background::watch(&cx, &session);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest, responder, cx| {
                // Reading the files must not hold up the dispatch loop (a cancel may be waiting).
                let (dir, cwd) = (a7.sessions.dir().map(Path::to_path_buf), req.cwd);
                cx.spawn(async move {
                    let listed =
                        tokio::task::spawn_blocking(move || session_list::list(dir.as_deref(), cwd.as_deref()));
                    responder.respond(ListSessionsResponse::new(listed.await.unwrap_or_default()))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, _cx| {
                let Some(session) = a9.sessions.get(&req.session_id.0) else {
                    return responder.respond_with_error(unknown_session(&req.session_id.0));
                };
                match modes::set(&session, &req.mode_id.0) {
                    Ok(()) => responder.respond(SetSessionModeResponse::new()),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: CloseSessionRequest, responder, _cx| {
                if !a8.sessions.close(&req.session_id.0) {
                    return responder.respond_with_error(unknown_session(&req.session_id.0));
                }
                responder.respond(CloseSessionResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx| {
                let session = match a4.sessions.get(&req.session_id.0) {
                    Some(s) => s,
                    None => return responder.respond_with_error(unknown_session(&req.session_id.0)),
                };
                let Ok(ticket) = session.ws.begin() else {
                    return responder.respond_with_error(Error::new(
                        ErrorCode::INVALID_REQUEST,
                        "a prompt is already running in this session (send session/cancel first)",
                    ));
                };
                let text = prompt::prompt_text(&req.prompt);
                let fs = a4.fs();
                let conn = cx.clone();
                cx.spawn(async move {
                    let (shown, to) = (session.clone(), conn.clone());
                    // A panic in the run must not take the connection down: it answers this prompt only.
                    let run = prompt::run(session, conn, fs, text, req.prompt, ticket);
                    let answer = guarded(run).await.unwrap_or_else(|why| Err(panicked(why)));
                    // The tasks the turn started or ended, shown before its answer.
                    background::show_all(&to, &shown);
                    commands::refresh(&to, &shown);
                    // The client may be gone; nothing more to do for this prompt either way.
                    let _ = responder.respond_with_result(answer);
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: CancelNotification, _cx| {
                let id = &note.session_id.0;
                match (a5.sessions.get(id), subagents::split(id)) {
                    (Some(s), _) => {
                        s.ws.cancel();
                    }
                    // A child's session: that child ends alone.
                    (None, Some((parent, sa))) => match a5.sessions.get(parent) {
                        Some(s) if s.ws.subagents().cancel(sa) => {}
                        _ => tracing::warn!("session/cancel for {id}: no such child runs"),
                    },
                    (None, None) => tracing::warn!("session/cancel for unknown session {id}"),
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    // The client is gone (or the connection failed): stop what runs and write every session's state.
    acp.sessions.wrap_up().await;
    served
}

/// The answer to a prompt whose run panicked; the session stays usable.
fn panicked(why: String) -> Error {
    tracing::error!("{why}");
    Error::new(ErrorCode::INTERNAL_ERROR, why)
}

pub(crate) fn unknown_session(id: &str) -> Error {
    Error::new(ErrorCode::RESOURCE_NOT_FOUND, format!("unknown session id '{id}'")).data(json!({ "sessionId": id }))
}

/// A session's folder: an absolute path to an existing directory, canonicalised.
fn session_folder(cwd: &Path) -> Result<PathBuf, Error> {
    let bad = |why: String| Error::new(ErrorCode::INVALID_PARAMS, why).data(json!({ "cwd": cwd }));
    if !cwd.is_absolute() {
        return Err(bad(format!("cwd must be an absolute path, got '{}'", cwd.display())));
    }
    match std::fs::canonicalize(cwd) {
        Ok(p) if p.is_dir() => Ok(p),
        Ok(_) => Err(bad(format!("cwd {} is not a directory", cwd.display()))),
        Err(e) => Err(bad(format!("cwd {} cannot be used: {e}", cwd.display()))),
    }
}

pub(crate) type Conn = agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Client>;
