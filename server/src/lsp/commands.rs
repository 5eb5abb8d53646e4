//! `workspace/executeCommand`: the `stepwise.*` commands (docs/protocol.md).

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use tower_lsp_server::jsonrpc::{Error, Result};

use super::events::announce_plan;
use super::folder::plan_payload;
use super::folder::Folder;
use super::review;
use super::run::{self, invalid_request, Job};
use super::shared::Shared;
use crate::checkpoint::Restore;
use crate::locks;
use crate::plan::{EditItem, Mode, PlanComment};
use crate::workspace::Steered;

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct CommandArgs {
    prompt: Option<String>,
    workspace: Option<String>,
    /// `stepwise.editPlan`: the whole list, or the same as text in the plan's render form.
    items: Option<Vec<EditItem>>,
    text: Option<String>,
    base_revision: Option<u64>,
    /// `stepwise.rewind`: the checkpoint's id, and what to put back (`both`, `files`, `conversation`).
    checkpoint: Option<String>,
    restore: Option<String>,
    /// `stepwise.changes` / `stepwise.review`: which run (default: the latest that changed files).
    run_id: Option<String>,
    /// `stepwise.review`: the file (relative), what to do, which hunks (default: all).
    path: Option<String>,
    action: Option<String>,
    hunks: Option<Vec<usize>>,
    /// `stepwise.run`: `plan` plans first (`default`: acts, whatever `planFirst` says).
    mode: Option<String>,
    /// `stepwise.commentPlan`: comments, each about an item (`id`) or the whole plan.
    comments: Option<Vec<PlanComment>>,
    /// `stepwise.approvePlan`: start from the task and the approved plan only.
    clear_context: Option<bool>,
}

fn command_args(args: &[Value]) -> Result<CommandArgs> {
    match args.first() {
        None | Some(Value::Null) => Ok(CommandArgs::default()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
            Error::invalid_params(format!("the command's argument does not fit its schema (docs/protocol.md): {e}"))
        }),
    }
}

/// Runs a command; long work (a run, a compaction) goes to the background and the answer comes at once.
pub async fn execute(shared: &Arc<Shared>, command: &str, arguments: &[Value]) -> Result<Option<Value>> {
    let args = command_args(arguments)?;
    let folder = || shared.folder(args.workspace.as_deref());
    match command {
        "stepwise.run" => {
            let prompt = args.prompt.clone().unwrap_or_default();
            if prompt.trim().is_empty() {
                return Err(Error::invalid_params("stepwise.run needs a non-empty \"prompt\""));
            }
            let mode =
                match args.mode.as_deref() {
                    None => None,
                    Some(m) => Some(Mode::parse(m).ok_or_else(|| {
                        Error::invalid_params(format!("\"mode\" is \"default\" or \"plan\", not {m:?}"))
                    })?),
                };
            let id = run::start(shared, folder()?, Job::Prompt(prompt, mode))?;
            Ok(Some(json!({"runId": id})))
        }
        "stepwise.commentPlan" => {
            let comments = args.comments.as_deref().unwrap_or_default();
            if comments.iter().all(|c| c.text.trim().is_empty()) {
                return Err(Error::invalid_params("stepwise.commentPlan needs \"comments\" with a non-empty \"text\""));
            }
            let folder = folder()?;
            let (ticket, prompt) = folder.ws.begin_comments(comments).map_err(invalid_request)?;
            let id = run::start_with(shared, folder, ticket, Job::Prompt(prompt, None));
            Ok(Some(json!({"runId": id})))
        }
        "stepwise.approvePlan" => {
            let folder = folder()?;
            let clear = args.clear_context.unwrap_or(false);
            let (ticket, prompt) = folder.ws.begin_approved(args.base_revision, clear).map_err(invalid_request)?;
            announce_plan(&shared.notifier, &folder, &folder.ws.plan());
            let id = run::start_with(shared, folder, ticket, Job::Prompt(prompt, None));
            Ok(Some(json!({"runId": id})))
        }
        "stepwise.cancel" => {
            folder()?.ws.cancel();
            Ok(None)
        }
        "stepwise.reset" => {
            let folder = folder()?;
            let state = folder.ws.reset().await.map_err(invalid_request)?;
            locks::write(&folder.view).marks.clear();
            announce_plan(&shared.notifier, &folder, &state);
            review::refresh(shared, &folder).await;
            Ok(None)
        }
        "stepwise.plan" => Ok(Some(folder()?.plan_json())),
        "stepwise.compact" => {
            // In the background, as a run of its own: `stepwise/compacted` and `idle` follow.
            run::start(shared, folder()?, Job::Compact)?;
            Ok(None)
        }
        "stepwise.editPlan" => {
            let folder = folder()?;
            let edited = match (&args.items, &args.text) {
                (Some(items), None) => folder.ws.edit_plan(items, args.base_revision),
                (None, Some(text)) => folder.ws.edit_plan_text(text, args.base_revision),
                _ => return Err(Error::invalid_params("stepwise.editPlan needs either \"items\" or \"text\"")),
            };
            let state = edited.map_err(invalid_request)?;
            announce_plan(&shared.notifier, &folder, &state);
            let mut v = plan_payload(&folder.uri, &state);
            if let Some(o) = v.as_object_mut() {
                o.remove("by");
            }
            Ok(Some(v))
        }
        "stepwise.steer" => {
            let text = args.text.clone().unwrap_or_default();
            if text.trim().is_empty() {
                return Err(Error::invalid_params("stepwise.steer needs a non-empty \"text\""));
            }
            steer(shared, folder()?, text).await?;
            Ok(None)
        }
        "stepwise.checkpoints" => Ok(Some(json!(folder()?.ws.checkpoints()))),
        "stepwise.rewind" => {
            let id = args.checkpoint.clone().filter(|c| !c.trim().is_empty());
            let id = id.ok_or_else(|| Error::invalid_params("stepwise.rewind needs a \"checkpoint\" id"))?;
            let restore = match args.restore.as_deref() {
                None => Restore::Both,
                Some(r) => Restore::parse(r).ok_or_else(|| {
                    Error::invalid_params(format!("\"restore\" is \"both\", \"files\" or \"conversation\", not {r:?}"))
                })?,
            };
            let done = super::rewind::rewind(shared, folder()?, &id, restore).await.map_err(invalid_request)?;
            Ok(Some(done))
        }
        "stepwise.conversation" => Ok(Some(review::conversation(folder()?).await.map_err(invalid_request)?)),
        "stepwise.changes" => {
            let scope = review::scope(args.run_id.as_deref(), args.checkpoint.as_deref());
            Ok(Some(review::changes(shared, folder()?, scope).await.map_err(invalid_request)?))
        }
        "stepwise.review" => review_command(shared, folder()?, args).await.map(Some),
        other => Err(Error::invalid_params(format!("unknown command: {other}"))),
    }
}

/// A line for the folder's run; with no run going, it starts one with the line as its prompt.
async fn steer(shared: &Arc<Shared>, folder: Arc<Folder>, text: String) -> Result<()> {
    if folder.ws.steer(&text) == Steered::NoRun {
        // Between a run's last look at its inbox and its end, wait for the end (briefly).
        if folder.ws.running().is_some() {
            folder.ws.until_idle(Duration::from_secs(5)).await;
        }
        run::start(shared, folder, Job::Prompt(text, None))?;
    }
    Ok(())
}

/// `stepwise.review`: `keep`, `undo` or `comment` on a file the agent changed.
async fn review_command(shared: &Arc<Shared>, folder: Arc<Folder>, args: CommandArgs) -> Result<Value> {
    let path = args.path.filter(|p| !p.trim().is_empty());
    let path = path.ok_or_else(|| Error::invalid_params("stepwise.review needs a \"path\""))?;
    let scope = review::scope(args.run_id.as_deref(), args.checkpoint.as_deref());
    let hunks = args.hunks;
    match args.action.as_deref() {
        Some("keep") => review::keep(shared, folder, scope, path, hunks).await.map_err(invalid_request),
        Some("undo") => review::undo(shared, folder, scope, path, hunks).await.map_err(invalid_request),
        Some("comment") => {
            let text = args.text.unwrap_or_default();
            if text.trim().is_empty() {
                return Err(Error::invalid_params("a review comment needs a non-empty \"text\""));
            }
            let line =
                review::comment_text(shared, &folder, scope, &path, hunks, &text).await.map_err(invalid_request)?;
            steer(shared, folder, line).await?;
            Ok(super::ext::value(super::ext::Reviewed::default()))
        }
        other => Err(Error::invalid_params(format!(
            "\"action\" is \"keep\", \"undo\" or \"comment\", not {}",
            other.map_or("missing".to_string(), |o| format!("{o:?}"))
        ))),
    }
}
