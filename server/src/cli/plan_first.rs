//! Plan first on the terminal: `stepwise run --plan-first TASK` plans, shows the plan and asks
//! (y / n / e(dit) / c(omment) / f(resh)); chat's `/plan first`, `/plan approve [fresh]`, `/plan comment`.

use std::io::Write;
use std::sync::Arc;

use super::input::Input;
use super::{bold, run_ticket, Setup};
use crate::agent::{self, FinishReason, RunOutcome};
use crate::plan::{Mode, PlanComment};
use crate::workspace::{RunTicket, Workspace};

/// Plans `task`, then asks until the plan is approved (the run that acts follows), declined, or the
/// input ends. The outcome of the last run.
pub(super) async fn run(
    ws: &Arc<Workspace>,
    s: &Setup,
    task: &str,
    images: Vec<crate::llm::Image>,
    input: &Input,
) -> RunOutcome {
    let cfg = agent::AgentConfig { mode: Mode::Plan, ..s.cfg.clone() };
    let mut outcome = match ws.begin() {
        Ok(mut ticket) => {
            ticket.images = images;
            run_ticket(ws, s, &ticket, task, &cfg).await
        }
        Err(e) => return failed(e),
    };
    loop {
        if outcome.reason != FinishReason::PlanReady {
            return outcome;
        }
        show_plan(ws);
        anstream::eprint!(
            "{} [y]es / [n]o / [e]dit / [c]omment / [f]resh context: ",
            bold("Approve the plan and carry it out?")
        );
        let _ = std::io::stderr().flush();
        let Some(answer) = input.next_line().await else {
            eprintln!("\nstepwise: the plan was not approved; nothing changed");
            return outcome;
        };
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return approve(ws, s, false).await,
            "f" | "fresh" => return approve(ws, s, true).await,
            "e" | "edit" => super::plan_edit::edit_plan(ws, input).await,
            "c" | "comment" => {
                anstream::eprint!("Comment (start with #ID to comment on one step): ");
                let _ = std::io::stderr().flush();
                let line = input.next_line().await.unwrap_or_default();
                if let Some(next) = comment(ws, s, &line).await {
                    outcome = next;
                }
            }
            _ => {
                eprintln!("stepwise: the plan was not approved; nothing changed");
                return outcome;
            }
        }
    }
}

fn failed(e: String) -> RunOutcome {
    agent::finish(FinishReason::Error, String::new(), Some(e), 0, Default::default())
}

fn show_plan(ws: &Workspace) {
    println!("\n{}\n{}", bold("The plan (nothing has changed yet):"), ws.plan().plan.render());
}

/// `#2 text` comments on step 2; anything else on the whole plan. `None` when nothing was sent.
fn parse_comment(line: &str) -> Option<PlanComment> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    match line.strip_prefix('#').and_then(|rest| rest.split_once(char::is_whitespace)) {
        Some((id, text)) if !id.is_empty() && !text.trim().is_empty() => {
            Some(PlanComment { id: Some(id.trim_end_matches(':').to_string()), text: text.trim().to_string() })
        }
        _ => Some(PlanComment { id: None, text: line.to_string() }),
    }
}

/// One planning round on a comment; its outcome, or `None` (said why) when none ran.
pub(super) async fn comment(ws: &Arc<Workspace>, s: &Setup, line: &str) -> Option<RunOutcome> {
    let Some(c) = parse_comment(line) else {
        eprintln!("stepwise: no comment given");
        return None;
    };
    match ws.begin_comments(&[c]) {
        Ok((ticket, prompt)) => Some(run_ticket(ws, s, &ticket, &prompt, &s.cfg).await),
        Err(e) => {
            eprintln!("stepwise: {e}");
            None
        }
    }
}

/// The run that carries the approved plan out.
pub(super) async fn approve(ws: &Arc<Workspace>, s: &Setup, fresh: bool) -> RunOutcome {
    let ticket: Result<(RunTicket, String), String> = ws.begin_approved(None, fresh);
    match ticket {
        Ok((ticket, prompt)) => run_ticket(ws, s, &ticket, &prompt, &s.cfg).await,
        Err(e) => {
            eprintln!("stepwise: {e}");
            failed(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_names_its_step_with_a_hash() {
        assert_eq!(
            parse_comment("#2 test first"),
            Some(PlanComment { id: Some("2".into()), text: "test first".into() })
        );
        assert_eq!(parse_comment("#2: ok"), Some(PlanComment { id: Some("2".into()), text: "ok".into() }));
        assert_eq!(parse_comment(" shorter "), Some(PlanComment { id: None, text: "shorter".into() }));
        assert_eq!(parse_comment("  "), None);
    }
}
