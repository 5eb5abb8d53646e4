//! Shell commands in the client's terminal, when it offers `terminal/*` (`clientCapabilities.terminal`):
//! the user watches the command run in the thread (the call's content is the terminal), and the model
//! gets the same text as from a local command (`host::shell::verdict`). Approval has already been given.
//!
//! `terminal/create` runs `bash -c COMMAND` in the session folder, `terminal/wait_for_exit` waits (up to
//! the shell timeout), `terminal/output` gives the text, `terminal/release` frees the terminal; on the
//! timeout, and when the run is cancelled (this future is dropped), `terminal/kill` comes first.

use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, KillTerminalRequest, ReleaseTerminalRequest, TerminalExitStatus, TerminalOutputRequest,
    WaitForTerminalExitRequest,
};

use super::events::RunState;
use super::sessions::AcpSession;
use super::Conn;
use crate::host::shell::{verdict, OUTPUT_CAP};
use crate::host::ShellOutput;

/// The bytes of output the client keeps (its newest): room for the characters the model reads.
const OUTPUT_BYTES: u64 = 4 * OUTPUT_CAP as u64;

pub(crate) async fn run(
    conn: &Conn,
    session: &AcpSession,
    state: &RunState,
    command: &str,
    timeout: Duration,
) -> Result<ShellOutput, String> {
    let create = CreateTerminalRequest::new(session.id.clone(), "bash")
        .args(vec!["-c".to_string(), command.to_string()])
        .cwd(session.root().to_path_buf())
        .output_byte_limit(OUTPUT_BYTES);
    let created = conn.send_request(create).block_task().await;
    let id = created.map_err(|e| format!("the editor could not run the command: {}", e.message))?.terminal_id.0;
    let mut held = Held { conn: conn.clone(), session: session.id.clone(), id: id.to_string(), live: true };
    state.in_terminal(conn, &session.id, held.id.clone());

    let wait = conn.send_request(WaitForTerminalExitRequest::new(session.id.clone(), held.id.clone())).block_task();
    let status = match tokio::time::timeout(timeout, wait).await {
        Ok(Ok(r)) => r.exit_status,
        Ok(Err(e)) => {
            held.end(true).await;
            return Err(format!("the editor's terminal failed: {}", e.message));
        }
        Err(_) => {
            held.end(true).await;
            return Err(format!("Timeout ({}s)", timeout.as_secs()));
        }
    };
    let output = conn.send_request(TerminalOutputRequest::new(session.id.clone(), held.id.clone())).block_task().await;
    held.end(false).await;
    let output = output.map_err(|e| format!("the editor did not give the command's output: {}", e.message))?;
    // The client kept the newest bytes; the model is told the start is missing, as it is told of any cut.
    let text = if output.truncated {
        format!("... [earlier output elided by the editor] ...\n{}", output.output)
    } else {
        output.output
    };
    Ok(verdict(&text, exit_note(&status)))
}

/// The note for a command that did not exit 0, as for a local command.
fn exit_note(status: &TerminalExitStatus) -> Option<String> {
    match (status.exit_code, &status.signal) {
        (Some(0), None) => None,
        (_, Some(signal)) => Some(format!("[killed by signal {signal}]")),
        (Some(code), None) => Some(format!("[exit code: {code}]")),
        (None, None) => Some("[exit status unknown]".into()),
    }
}

/// A terminal this agent created: released when done with, and killed first when dropped early.
struct Held {
    conn: Conn,
    session: String,
    id: String,
    live: bool,
}

impl Held {
    async fn end(&mut self, kill: bool) {
        self.live = false;
        end(&self.conn, &self.session, &self.id, kill).await;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.live {
            // Cancelled mid-command: the client still runs it, so it is killed and released from a task.
            let (conn, session, id) = (self.conn.clone(), self.session.clone(), self.id.clone());
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { end(&conn, &session, &id, true).await });
            }
        }
    }
}

async fn end(conn: &Conn, session: &str, id: &str, kill: bool) {
    if kill {
        let req = KillTerminalRequest::new(session.to_string(), id.to_string());
        if let Err(e) = conn.send_request(req).block_task().await {
            tracing::warn!("terminal/kill {id} failed: {}", e.message);
        }
    }
    let req = ReleaseTerminalRequest::new(session.to_string(), id.to_string());
    if let Err(e) = conn.send_request(req).block_task().await {
        tracing::warn!("terminal/release {id} failed: {}", e.message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: Option<u32>, signal: Option<&str>) -> TerminalExitStatus {
        TerminalExitStatus::new().exit_code(code).signal(signal.map(str::to_string))
    }

    #[test]
    fn exit_notes_read_as_for_local_commands() {
        assert_eq!(exit_note(&status(Some(0), None)), None);
        assert_eq!(exit_note(&status(Some(2), None)).as_deref(), Some("[exit code: 2]"));
        assert_eq!(exit_note(&status(None, Some("SIGKILL"))).as_deref(), Some("[killed by signal SIGKILL]"));
        assert_eq!(exit_note(&status(None, None)).as_deref(), Some("[exit status unknown]"));
    }
}
