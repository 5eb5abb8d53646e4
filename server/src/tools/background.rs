//! `background_run`, `check_background`, `kill_background`: the tools over the session's background
//! room (`crate::background`). A background command passes the same gate as `bash` (`gate.rs`): in the
//! sandbox unasked where it can start, else asked for; plan mode offers none of the three.

use serde_json::Value;

use super::gate::{self, Gate};
use super::{ToolContext, ToolOutput};
use crate::background::{Background, Killer};
use crate::host::output::truncate_chars;
use crate::host::Host;
use crate::llm::Block;

/// Starts the command and answers at once with its id.
pub(super) async fn run<H: Host + ?Sized>(
    cx: &ToolContext<'_, H>,
    command: &str,
    gate: Gate<'_>,
) -> Result<ToolOutput, String> {
    cx.background.admit()?;
    let policy = match gate {
        Gate::Confined(policy) => Some(policy),
        Gate::Ask(_) => {
            gate::clear(cx, &gate).await?;
            None
        }
        Gate::Refused(out) => return Ok(out),
        // Never unconfined without a question.
        Gate::Open => return Err("internal error: a background command without a gate".into()),
    };
    let started = cx.host.start_background(command, policy.as_ref()).await?;
    let task = cx.background.add(command, started);
    Ok(ToolOutput::ok(format!(
        "Background task {} started: {}\n(check_background {{\"task_id\": \"{}\"}} reads its output; kill_background stops it)",
        task.id,
        truncate_chars(command, 80),
        task.id
    )))
}

/// The optional `task_id` (a string; a number `n` is taken as `bg-n`).
fn task_id(input: &Value, tool: &str) -> Result<Option<String>, String> {
    match input.get("task_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(Value::Number(n)) => Ok(Some(format!("bg-{n}"))),
        Some(_) => Err(format!("{tool}: argument 'task_id' must be a string like \"bg-1\"")),
    }
}

pub(super) fn check(input: &Value, background: &Background) -> Result<String, String> {
    background.check(task_id(input, "check_background")?.as_deref())
}

pub(super) async fn kill(input: &Value, background: &Background) -> Result<String, String> {
    let id = match task_id(input, "kill_background")? {
        Some(id) => id,
        None => return Err("kill_background: missing required argument 'task_id'".into()),
    };
    background.kill(&id, Killer::Model).await
}

/// Closing a round: the tasks that ended since the model was last told, as a text block after the
/// round's tool results; and the checkpoints told to look at what the tasks changed.
pub fn results_into<H: Host + ?Sized>(results: &mut Vec<Block>, host: &H, background: &Background) {
    if background.needs_scan() {
        host.background_seen(background.any_running());
    }
    if let Some(text) = background.take_results() {
        results.push(Block::Text { text });
    }
}
