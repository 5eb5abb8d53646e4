//! The `bash` tool: in the sandbox without a question where it can start (`host/sandbox.rs`), else
//! asked for as before; a command the sandbox stopped runs again outside it only with the user's leave.

use crate::host::sandbox::{self, Escalation};
use crate::host::{is_dangerous, Ask, Host, SandboxMode};

use super::{files, ToolContext, ToolOutput};

pub(super) async fn run<H: Host>(cx: &ToolContext<'_, H>, command: &str) -> Result<ToolOutput, String> {
    if let Some(why) = is_dangerous(command) {
        // The first line is the seed's text (editors and suites match it); the reason follows.
        return Err(format!("Dangerous command blocked\n{why}"));
    }
    // Wanted but unable to start (said once, in the status and `stepwise doctor`): ask per command, as
    // with the sandbox off, never run unconfined unasked; in read-only (plan mode) not at all, as no
    // answer can make an unconfined command write nothing.
    let policy = match cx.sandbox.policy(cx.host.root(), cx.sandbox_settings) {
        Ok(p) => p,
        Err(why) if cx.sandbox_settings.mode == SandboxMode::ReadOnly => {
            return Err(format!("read-only: the sandbox cannot start here ({why}), and commands run only inside it"));
        }
        Err(_) => None,
    };
    let Some(policy) = policy else {
        if !files::approve(cx, &Ask::Command(command)).await {
            return Err("Command denied by the user".into());
        }
        let out = cx.host.run_command(command, cx.bash_timeout, None).await?;
        return Ok(ToolOutput { text: out.text, is_error: out.is_error, change: None });
    };
    let out = cx.host.run_command(command, cx.bash_timeout, Some(&policy)).await?;
    if sandbox::stopped(&out.text, out.is_error).is_none() {
        return Ok(ToolOutput { text: out.text, is_error: out.is_error, change: None });
    }
    // Read-only (plan mode) never writes, whatever the user would answer.
    let outcome = if !policy.write {
        Escalation::NotOffered
    } else if files::approve(cx, &Ask::Unsandboxed(command)).await {
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
