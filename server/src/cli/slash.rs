//! Chat's own commands, handled here and never sent to the model: `/compact`, `/plan`, `/plan edit`,
//! `/plan first [off]`, `/plan approve [fresh]`, `/plan comment [#ID] TEXT`, `/checkpoints`, `/rewind ID`,
//! `/review`, `/undo PATH`.

use std::io::Write;
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
        ("plan", "edit") => edit_plan(ws, input).await,
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

/// Opens `$VISUAL` / `$EDITOR` on the plan's render form and applies what is saved; on an error the
/// text is offered again, so nothing typed is lost.
pub(super) async fn edit_plan(ws: &Arc<Workspace>, input: &Input) {
    let editor = ["VISUAL", "EDITOR"].iter().find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()));
    let editor = editor.unwrap_or_else(|| "vi".into());
    let file = std::env::temp_dir().join(format!("stepwise-plan-{}.txt", std::process::id()));
    let state = ws.plan();
    let mut text = state.plan.render();
    loop {
        if let Err(e) = std::fs::write(&file, format!("{text}\n")) {
            eprintln!("stepwise: cannot write {}: {e}", file.display());
            return;
        }
        let status = {
            let _paused = input.pause();
            // Through the shell, as git does: `$EDITOR` may carry arguments (`code --wait`).
            tokio::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{editor} \"$1\""))
                .arg("sh")
                .arg(&file)
                .status()
                .await
        };
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("stepwise: {editor} exited with {s}; the plan is unchanged");
                break;
            }
            Err(e) => {
                eprintln!("stepwise: cannot start {editor}: {e}");
                break;
            }
        }
        text = std::fs::read_to_string(&file).unwrap_or_default();
        match ws.edit_plan_text(&text, Some(state.revision)) {
            Ok(new) => {
                println!("{}", new.plan.render());
                break;
            }
            Err(e) => {
                eprint!("stepwise: {e}\nEdit again? [Y/n]: ");
                let _ = std::io::stderr().flush();
                let again = input.next_line().await.unwrap_or_default();
                if matches!(again.trim(), "n" | "N" | "no") {
                    break;
                }
            }
        }
    }
    let _ = std::fs::remove_file(&file);
}
