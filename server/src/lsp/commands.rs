//! `workspace/executeCommand`: the `stepwise.*` commands (docs/protocol.md).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, Result};

use super::events::announce_plan;
use super::ext::{self, cmd, Command, ExecuteCommand, ReviewAction, ReviewArgs};
use super::review;
use super::run::{self, invalid_request, Job};
use super::session::Session;
use super::shared::Shared;
use crate::checkpoint::Restore;
use crate::locks;
use crate::workspace::Steered;

/// `C`'s result as the answer: typed here, JSON on the wire.
fn answer<C: ExecuteCommand>(result: C::Result) -> Result<Option<Value>> {
    serde_json::to_value(result).map(Some).map_err(|e| Error {
        code: tower_lsp_server::jsonrpc::ErrorCode::InternalError,
        message: format!("{}: its result could not be written: {e}", C::COMMAND).into(),
        data: None,
    })
}

/// Runs a command; long work (a run, a compaction) goes to the background and the answer comes at once.
pub async fn execute(shared: &Arc<Shared>, command: &str, arguments: &[Value]) -> Result<Option<Value>> {
    let command = Command::parse(command, arguments)?;
    let (workspace, sid) = command.target();
    let session_of = || shared.session(workspace, sid);
    match &command {
        Command::Run(args) => {
            if args.prompt.trim().is_empty() && args.images.is_empty() {
                return Err(Error::invalid_params("stepwise.run needs a non-empty \"prompt\""));
            }
            let session = session_of()?;
            run::ready(&session)?;
            // Checked before the run starts: an image that cannot be taken is this request's error.
            let given: Vec<_> = args.images.iter().map(ext::PromptImage::given).collect();
            let images = crate::images::for_prompt(session.ws.root(), &given)
                .await
                .map_err(|e| Error::invalid_params(format!("stepwise.run: {e}")))?;
            let mut ticket = session.ws.begin().map_err(invalid_request)?;
            ticket.images = images;
            let run_id = run::start_with(shared, session, ticket, Job::Prompt(args.prompt.clone(), args.mode));
            answer::<cmd::Run>(ext::RunStarted { run_id })
        }
        Command::CommentPlan(args) => {
            if args.comments.iter().all(|c| c.text.trim().is_empty()) {
                return Err(Error::invalid_params("stepwise.commentPlan needs \"comments\" with a non-empty \"text\""));
            }
            let session = session_of()?;
            run::ready(&session)?;
            let (ticket, prompt) = session.ws.begin_comments(&args.comments).map_err(invalid_request)?;
            let run_id = run::start_with(shared, session, ticket, Job::Prompt(prompt, None));
            answer::<cmd::CommentPlan>(ext::RunStarted { run_id })
        }
        Command::ApprovePlan(args) => {
            let session = session_of()?;
            run::ready(&session)?;
            let clear = args.clear_context.unwrap_or(false);
            let (ticket, prompt) = session.ws.begin_approved(args.base_revision, clear).map_err(invalid_request)?;
            announce_plan(&shared.notifier, &session, &session.ws.plan());
            let run_id = run::start_with(shared, session, ticket, Job::Prompt(prompt, None));
            answer::<cmd::ApprovePlan>(ext::RunStarted { run_id })
        }
        Command::KillBackground(args) => {
            let ws = session_of()?.ws.clone();
            let said = ws.background().kill(&args.task_id, crate::background::Killer::User).await;
            answer::<cmd::KillBackground>(said.map_err(invalid_request)?)
        }
        Command::CancelSubagent(args) => {
            let session = session_of()?;
            if !session.ws.subagents().cancel(&args.id) {
                let running = session.ws.subagents().running();
                let now = if running.is_empty() { "none runs now".to_string() } else { running.join(", ") };
                return Err(invalid_request(format!("no subagent {} runs in {} ({now})", args.id, session.name())));
            }
            answer::<cmd::CancelSubagent>(())
        }
        Command::Cancel(_) => {
            session_of()?.ws.cancel();
            answer::<cmd::Cancel>(())
        }
        Command::Reset(_) => {
            let session = session_of()?;
            let state = session.ws.reset().await.map_err(invalid_request)?;
            locks::write(&session.view).marks.clear();
            announce_plan(&shared.notifier, &session, &state);
            review::refresh(shared, &session).await;
            answer::<cmd::Reset>(())
        }
        Command::Plan(_) => answer::<cmd::Plan>(session_of()?.plan()),
        Command::Compact(_) => {
            // In the background, as a run of its own: `stepwise/compacted` and `idle` follow.
            run::start(shared, session_of()?, Job::Compact)?;
            answer::<cmd::Compact>(())
        }
        Command::EditPlan(args) => {
            let session = session_of()?;
            let edited = match (&args.items, &args.text) {
                (Some(items), None) => session.ws.edit_plan(items, args.base_revision),
                (None, Some(text)) => session.ws.edit_plan_text(text, args.base_revision),
                _ => return Err(Error::invalid_params("stepwise.editPlan needs either \"items\" or \"text\"")),
            };
            let state = edited.map_err(invalid_request)?;
            announce_plan(&shared.notifier, &session, &state);
            answer::<cmd::EditPlan>(ext::EditedPlan::of(session.at(), &state))
        }
        Command::Steer(args) => {
            if args.text.trim().is_empty() {
                return Err(Error::invalid_params("stepwise.steer needs a non-empty \"text\""));
            }
            steer(shared, session_of()?, args.text.clone()).await?;
            answer::<cmd::Steer>(())
        }
        Command::Checkpoints(_) => answer::<cmd::Checkpoints>(session_of()?.ws.checkpoints()),
        Command::Rewind(args) => {
            if args.checkpoint.trim().is_empty() {
                return Err(Error::invalid_params("stepwise.rewind needs a \"checkpoint\" id"));
            }
            let restore = args.restore.unwrap_or(Restore::Both);
            let done = super::rewind::rewind(shared, session_of()?, &args.checkpoint, restore)
                .await
                .map_err(invalid_request)?;
            answer::<cmd::Rewind>(done)
        }
        Command::Conversation(_) => {
            answer::<cmd::Conversation>(review::conversation(session_of()?).await.map_err(invalid_request)?)
        }
        Command::Changes(args) => {
            let scope = review::scope(args.run_id.as_deref(), args.checkpoint.as_deref());
            answer::<cmd::Changes>(review::changes(shared, session_of()?, scope).await.map_err(invalid_request)?)
        }
        Command::Review(args) => answer::<cmd::Review>(review_command(shared, session_of()?, args).await?),
        Command::NewSession(args) => {
            answer::<cmd::NewSession>(super::sessions::new(shared, shared.folder(workspace)?, args).await?)
        }
        Command::Sessions(_) => answer::<cmd::Sessions>(super::sessions::list(&*shared.folder(workspace)?).await),
        Command::ApplySession(args) => {
            answer::<cmd::ApplySession>(super::sessions::apply(shared, &args.session).await?)
        }
        Command::CloseSession(args) => {
            super::sessions::close(shared, &args.session, args.discard.unwrap_or(false)).await?;
            answer::<cmd::CloseSession>(())
        }
        Command::Skills(_) => {
            // Disk work off the handler's thread.
            let root = session_of()?.ws.root().to_path_buf();
            let found = tokio::task::spawn_blocking(move || crate::skills::find(&root)).await.unwrap_or_default();
            let skills =
                found.list.into_iter().map(|s| ext::Skill { description: s.one_line(), name: s.name }).collect();
            answer::<cmd::Skills>(ext::Skills { skills })
        }
        Command::Image(args) => {
            let image = session_of()?.ws.image(&args.id).ok_or_else(|| {
                invalid_request(format!("no image {} in the conversation (it may have been compacted away)", args.id))
            })?;
            let data = ext::ImageData { media_type: image.media_type().to_string(), data: image.base64().to_string() };
            answer::<cmd::Image>(data)
        }
    }
}

/// A line for the folder's run; with no run going, it starts one with the line as its prompt.
async fn steer(shared: &Arc<Shared>, session: Arc<Session>, text: String) -> Result<()> {
    if session.ws.steer(&text) == Steered::NoRun {
        // Between a run's last look at its inbox and its end, wait for the end (briefly).
        if session.ws.running().is_some() {
            session.ws.until_idle(Duration::from_secs(5)).await;
        }
        run::start(shared, session, Job::Prompt(text, None))?;
    }
    Ok(())
}

/// `stepwise.review`: `keep`, `undo` or `comment` on a file the agent changed.
async fn review_command(shared: &Arc<Shared>, session: Arc<Session>, args: &ReviewArgs) -> Result<ext::Reviewed> {
    let path = args.path.clone();
    if path.trim().is_empty() {
        return Err(Error::invalid_params("stepwise.review needs a \"path\""));
    }
    let scope = review::scope(args.run_id.as_deref(), args.checkpoint.as_deref());
    let hunks = args.hunks.clone();
    match args.action {
        ReviewAction::Keep => review::keep(shared, session, scope, path, hunks).await.map_err(invalid_request),
        ReviewAction::Undo => review::undo(shared, session, scope, path, hunks).await.map_err(invalid_request),
        ReviewAction::Comment => {
            let text = args.text.as_deref().unwrap_or_default();
            if text.trim().is_empty() {
                return Err(Error::invalid_params("a review comment needs a non-empty \"text\""));
            }
            let line =
                review::comment_text(shared, &session, scope, &path, hunks, text).await.map_err(invalid_request)?;
            steer(shared, session, line).await?;
            Ok(ext::Reviewed::default())
        }
    }
}
