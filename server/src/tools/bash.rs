//! The `bash` tool: in the sandbox without a question where it can start (`host/sandbox.rs`), else
//! asked for as before (`gate.rs` decides which); a command the sandbox stopped runs again outside it
//! only with the user's leave.

use crate::host::sandbox::{self, Escalation};
use crate::host::{Ask, Host};

use super::gate::{self, Gate};
use super::{ToolContext, ToolOutput};

pub(super) async fn run<H: Host>(cx: &ToolContext<'_, H>, command: &str, gate: Gate<'_>) -> Result<ToolOutput, String> {
    let policy = match gate {
        Gate::Confined(policy) => policy,
        Gate::Ask(_) => {
            gate::clear(cx, &gate).await?;
            let out = cx.host.run_command(command, cx.bash_timeout, None).await?;
            return Ok(ToolOutput { text: out.text, is_error: out.is_error, change: None });
        }
        Gate::Refused(out) => return Ok(out),
        // Never unconfined without a question.
        Gate::Open => return Err("internal error: a shell command without a gate".into()),
    };
    let out = cx.host.run_command(command, cx.bash_timeout, Some(&policy)).await?;
    // Stopped: a write or connection refused, or a write to a protected path undone after it.
    if out.put_back.is_empty() && sandbox::stopped(&out.text, out.is_error).is_none() {
        return Ok(ToolOutput { text: out.text, is_error: out.is_error, change: None });
    }
    // Read-only (plan mode) never writes, whatever the user would answer.
    let outcome = if !policy.write {
        Escalation::NotOffered
    } else if gate::approve(cx, &Ask::Unsandboxed(command)).await {
        Escalation::Approved
    } else {
        Escalation::Declined
    };
    let note = sandbox::stopped_note(&policy, outcome);
    if outcome != Escalation::Approved {
        return Ok(ToolOutput { text: format!("{}\n{note}", out.text), is_error: true, change: None });
    }
    let again = cx.host.run_command(command, cx.bash_timeout, None).await?;
    Ok(ToolOutput { text: format!("{note}\n{}", again.text), is_error: again.is_error, change: None })
}
