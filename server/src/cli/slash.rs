//! Chat's own commands, handled here and never sent to the model: `/compact`, `/plan`, `/plan edit`,
//! `/plan first [off]`, `/plan approve [fresh]`, `/plan comment [#ID] TEXT`, `/checkpoints`, `/rewind ID`,
//! `/review`, `/undo PATH`, `/jobs`, `/kill ID`.

use std::sync::Arc;

use super::input::Input;
use super::Setup;
use crate::plan::Mode;
use crate::session::FinishReason;
use crate::workspace::Workspace;

/// Runs `command` (the line without its `/`); `false` when it is not one of ours (the line is a task).
pub(super) async fn run(command: &str, ws: &Arc<Workspace>, s: &mut Setup, input: &Input) -> bool {
    let (name, rest) = command.split_once(' ').map_or((command, ""), |(n, r)| (n, r.trim()));
    match (name, rest) {
        ("compact", "") => {
            let Ok(ticket) = ws.begin() else { return true };
            let outcome = ws.compact(&ticket, &s.llm, &s.term).await;
            println!("{}", outcome.final_text);
        }
        ("plan", "") => println!("{}", ws.plan().plan.render()),
        ("plan", "edit") => super::plan_edit::edit_plan(ws, input).await,
        ("plan", "first") => {
            s.cfg.mode = Mode::Plan;
            println!("plan first: on (each task is planned and waits for /plan approve; /plan first off ends it)");
        }
        ("plan", "first off") => {
            s.cfg.mode = Mode::Default;
            println!("plan first: off");
        }
        ("plan", "approve") | ("plan", "approve fresh") => {
            let outcome = super::plan_first::approve(ws, s, rest.ends_with("fresh")).await;
            after(ws, outcome.reason);
        }
        ("plan", comment) if comment.starts_with("comment ") => {
            if let Some(outcome) = super::plan_first::comment(ws, s, &comment["comment ".len()..]).await {
                after(ws, outcome.reason);
            }
        }
        ("checkpoints", "") => super::checkpoints::list(ws),
        ("rewind", args) if !args.is_empty() => super::checkpoints::rewind(ws, args),
        ("review", "") => super::review::show(ws),
        ("undo", args) if !args.is_empty() => super::review::undo(ws, args),
        ("jobs", "") => super::jobs::list(ws),
        ("kill", id) if !id.is_empty() => super::jobs::kill(ws, id).await,
        _ => return false,
    }
    true
}

fn after(ws: &Workspace, reason: FinishReason) {
    if reason == FinishReason::PlanReady {
        plan_waits(ws);
    }
    println!();
}

/// After a planning run in chat: the plan, and what the user can do with it.
pub(super) fn plan_waits(ws: &Workspace) {
    println!("\n{}", ws.plan().plan.render());
    println!("(the plan waits: /plan approve, /plan approve fresh, /plan comment [#ID] TEXT, /plan edit)");
}
