//! A run: one job in one folder, in the background, from `running` to `idle`, whatever happens.

use std::sync::Arc;
use std::time::Duration;

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{MessageType, ProgressToken, WorkDoneProgressBegin};

use super::asker::FolderAsker;
use super::events::EditorEvents;
use super::ext;
use super::host::EditorHost;
use super::notify::Outgoing;
use super::progress::Progress;
use super::session::Session;
use super::shared::Shared;
use crate::agent::FinishReason;
use crate::locks;
use crate::plan::Mode;
use crate::workspace::{guarded, Prepared, RunRequest, RunTicket};

/// What a run does: a prompt for the agent (in the mode asked for, else the settings'), or compacting
/// the conversation on demand.
pub enum Job {
    Prompt(String, Option<Mode>),
    Compact,
}

/// `InvalidRequest` with a message that says what was wrong.
pub fn invalid_request(message: String) -> Error {
    Error { message: message.into(), ..Error::invalid_request() }
}

/// Whether a run can start in the session: not when its worktree was deleted by hand (its tools would
/// work nowhere); the conversation stays readable, closable and discardable.
pub fn ready(session: &Session) -> Result<()> {
    match session.worktree.as_ref().and_then(|t| t.gone()) {
        Some(why) => Err(invalid_request(format!("session {}: {why}; its conversation is kept", session.title))),
        None => Ok(()),
    }
}

/// Takes the folder's run slot and starts the job in the background; the run's id at once.
pub fn start(shared: &Arc<Shared>, session: Arc<Session>, job: Job) -> Result<String> {
    ready(&session)?;
    let ticket = session.ws.begin().map_err(invalid_request)?;
    Ok(start_with(shared, session, ticket, job))
}

/// Starts the job in the background on a slot already taken (plan first's comments and approval).
pub fn start_with(shared: &Arc<Shared>, session: Arc<Session>, ticket: RunTicket, job: Job) -> String {
    let id = ticket.id.clone();
    let (shared, run_id) = (shared.clone(), id.clone());
    let progress = Arc::new(Progress::default());
    tokio::spawn(async move {
        // Whatever happens inside a run, even a panic, its folder is free again afterwards and the editor
        // hears that the run ended (its progress too).
        let run = run_task(shared.clone(), session.clone(), ticket, job, progress.clone());
        let Err(why) = guarded(run).await else { return };
        tracing::error!("{why}");
        let n = &shared.notifier;
        progress.end(n, "error");
        n.send(Outgoing::Message(MessageType::ERROR, format!("stepwise: {why}")));
        let idle = ext::Status::idle(&session.at(), &run_id, FinishReason::Error, Some(&why));
        let running = session.ws.background().running();
        n.send(Outgoing::Status(ext::Status { error_kind: Some(ext::ErrorKind::Internal), ..idle.tasks(running) }));
    });
    id
}

async fn run_task(shared: Arc<Shared>, session: Arc<Session>, ticket: RunTicket, job: Job, progress: Arc<Progress>) {
    let run_id = ticket.id.clone();
    let prompt = match &job {
        Job::Prompt(p, _) => p.clone(),
        Job::Compact => "Compacting the conversation".to_string(),
    };
    let n = &shared.notifier;
    let running = session.ws.background().running();
    n.send(Outgoing::Status(ext::Status::new(&session.at(), &run_id, ext::RunState::Running).tasks(running)));
    let begin = tokio::spawn(begin_progress(shared.clone(), run_id.clone(), prompt.clone(), progress.clone()));

    drop(shared.config_pending.read().await);
    let settings = shared.settings_for(&session);
    let req = RunRequest {
        overrides: settings.clone(),
        mode: match job {
            Job::Prompt(_, mode) => mode,
            Job::Compact => None,
        },
        compaction: matches!(job, Job::Compact),
        // An editor that answers `stepwise/query` is the source: no language server of stepwise's own.
        host_intelligence: shared.caps().query && session.worktree.is_none(),
        ..Default::default()
    };
    let timeout = std::time::Duration::from_secs(settings.approval_timeout_secs.unwrap_or(300).max(1));
    let asker = FolderAsker { shared: shared.clone(), at: session.at(), timeout };
    let (reason, error, kind) = match session.ws.prepare_run(req, &asker).await {
        Err(msg) => (FinishReason::Error, Some(msg), Some(ext::ErrorKind::Setup)),
        Ok(Prepared { cfg, llm }) => {
            let host = EditorHost::for_run(&shared, &session, run_id.clone(), &settings);
            let events = EditorEvents {
                shared: shared.clone(),
                notifier: n.clone(),
                session: session.clone(),
                run_id: run_id.clone(),
                progress: progress.clone(),
            };
            locks::write(&session.view).marks.clear();
            let outcome = match job {
                Job::Prompt(..) => session.ws.prompt(&ticket, &prompt, &llm, &host, &events, &cfg).await,
                Job::Compact => session.ws.compact(&ticket, &llm, &events).await,
            };
            let kind = (outcome.reason == FinishReason::Error).then_some(ext::ErrorKind::Model);
            (outcome.reason, outcome.error, kind)
        }
    };
    if let Some(msg) = &error {
        n.send(Outgoing::Message(MessageType::ERROR, format!("stepwise: {msg}")));
    }
    // A progress still being agreed to is given up; one that began is ended.
    begin.abort();
    progress.end(n, reason.as_str());
    drop(ticket);
    // What is left to review is announced before the run is said to be over.
    super::review::refresh(&shared, &session).await;
    let idle = ext::Status::idle(&session.at(), &run_id, reason, error.as_deref());
    let running = session.ws.background().running();
    n.send(Outgoing::Status(ext::Status { error_kind: kind, ..idle.tasks(running) }));
}

/// A work-done progress for the run, when the client offers them and agrees to this one in time.
async fn begin_progress(shared: Arc<Shared>, run_id: String, prompt: String, progress: Arc<Progress>) {
    if !shared.caps().work_done_progress {
        return progress.refused();
    }
    let token = ProgressToken::String(format!("stepwise/{run_id}"));
    let created =
        tokio::time::timeout(Duration::from_secs(10), shared.client.create_work_done_progress(token.clone())).await;
    if !matches!(created, Ok(Ok(()))) {
        return progress.refused();
    }
    let begin = WorkDoneProgressBegin {
        title: "Stepwise".into(),
        cancellable: Some(true),
        message: Some(prompt.chars().take(80).collect()),
        percentage: Some(0),
    };
    progress.begin(&shared.notifier, token, begin);
}
