//! The `bash` tool: in the sandbox without a question where it can start (`crate::sandbox`), else
//! asked for as before (`gate.rs` decides which); a command the sandbox stopped runs again outside it
//! only with the user's leave.

use crate::host::{Ask, Host};
use crate::sandbox::{self, Escalation, PutBack, Stop};

use super::gate::{self, Gate};
use super::{ToolContext, ToolOutput};

pub(super) async fn run<H: Host + ?Sized>(
    cx: &ToolContext<'_, H>,
    command: &str,
    gate: Gate<'_>,
) -> Result<ToolOutput, String> {
    let policy = match gate {
        Gate::Confined(policy) => policy,
        Gate::Ask(_) => {
            gate::clear(cx, &gate).await?;
            let out = cx.host.run_command(command, cx.bash_timeout, None).await?;
            return Ok(ToolOutput { is_error: out.is_error, ..ToolOutput::ok(out.text) });
        }
        Gate::Refused(out) => return Ok(out),
        // Never unconfined without a question.
        Gate::Open => return Err("internal error: a shell command without a gate".into()),
    };
    let out = cx.host.run_command(command, cx.bash_timeout, Some(&policy)).await?;
    // Stopped: a write or connection refused, or a write to a protected path undone after it.
    let stop = sandbox::stopped(&out.text, out.is_error, &policy);
    if out.put_back.is_empty() && stop.is_none() {
        return Ok(ToolOutput { is_error: out.is_error, ..ToolOutput::ok(out.text) });
    }
    // Read-only (plan mode) never writes, whatever the user would answer.
    let outcome = if !policy.write {
        Escalation::NotOffered
    } else if gate::approve(cx, &Ask::Unsandboxed { command, stopped: &what_stopped(stop.as_ref(), &out.put_back) })
        .await
    {
        Escalation::Approved
    } else {
        Escalation::Declined
    };
    let note = sandbox::stopped_note(&policy, stop.as_ref(), outcome);
    if outcome != Escalation::Approved {
        return Ok(ToolOutput::failed(format!("{}\n{note}", out.text)));
    }
    let again = cx.host.run_command(command, cx.bash_timeout, None).await?;
    Ok(ToolOutput { is_error: again.is_error, ..ToolOutput::ok(format!("{note}\n{}", again.text)) })
}

/// What the sandbox stopped, for the question: the sandbox's own reading of the error (the path held
/// against the policy), or the protected paths it put back after the command.
fn what_stopped(stop: Option<&Stop>, put_back: &[PutBack]) -> String {
    let kept = put_back.iter().map(|p| p.path.display().to_string()).collect::<Vec<_>>();
    match (stop, kept.is_empty()) {
        (Some(s), true) => s.describe(),
        (Some(s), false) => format!("{}; and writes to protected paths, put back: {}", s.describe(), kept.join(", ")),
        (None, false) => format!("writes to protected paths, put back: {}", kept.join(", ")),
        (None, true) => "a write or connection it does not allow".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::sandbox::Stop;

    #[test]
    fn the_question_names_what_was_stopped() {
        let stop = Stop::Write(PathBuf::from("/outside/x"));
        assert_eq!(super::what_stopped(Some(&stop), &[]), stop.describe());
        assert!(super::what_stopped(Some(&stop), &[]).contains("/outside/x"));
        assert_eq!(super::what_stopped(None, &[]), "a write or connection it does not allow");
    }
}
