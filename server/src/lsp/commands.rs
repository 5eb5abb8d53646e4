//! `workspace/executeCommand`: the `stepwise.*` commands (docs/protocol.md).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use tower_lsp_server::jsonrpc::{Error, Result};

use super::notify::Outgoing;
use super::run::{self, invalid_request, Job};
use super::shared::Shared;
use crate::agent::Session;
use crate::locks;

pub const COMMANDS: [&str; 5] =
    ["stepwise.run", "stepwise.cancel", "stepwise.reset", "stepwise.plan", "stepwise.compact"];

#[derive(Deserialize, Default)]
#[serde(default)]
struct CommandArgs {
    prompt: Option<String>,
    workspace: Option<String>,
}

fn command_args(args: &[Value]) -> Result<CommandArgs> {
    match args.first() {
        None | Some(Value::Null) => Ok(CommandArgs::default()),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| Error::invalid_params(format!("expected {{\"prompt\"?: string, \"workspace\"?: uri}}: {e}"))),
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
            let id = run::start(shared, folder()?, Job::Prompt(prompt))?;
            Ok(Some(json!({"runId": id})))
        }
        "stepwise.cancel" => {
            folder()?.cancel_run();
            Ok(None)
        }
        "stepwise.reset" => {
            let folder = folder()?;
            folder.cancel_run();
            // A cancelled run lets go of the session promptly; don't hang the editor if it doesn't.
            let mut session = tokio::time::timeout(Duration::from_secs(5), folder.session.lock())
                .await
                .map_err(|_| invalid_request("the running task did not stop; try again".into()))?;
            *session = Session::default();
            folder.save(&session);
            drop(session);
            folder.set_plan(&Default::default());
            locks::write(&folder.view).marks.clear();
            folder.allow_all.store(false, Ordering::Relaxed);
            shared.notifier.send(Outgoing::Plan(folder.plan_json()));
            shared.notifier.send(Outgoing::RefreshLenses);
            Ok(None)
        }
        "stepwise.plan" => Ok(Some(folder()?.plan_json())),
        "stepwise.compact" => {
            // In the background, as a run of its own: `stepwise/compacted` and `idle` follow.
            run::start(shared, folder()?, Job::Compact)?;
            Ok(None)
        }
        other => Err(Error::invalid_params(format!("unknown command: {other}"))),
    }
}
