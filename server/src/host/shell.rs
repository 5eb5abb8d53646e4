//! Running the model's shell commands: own process group, bounded time and output, nothing left behind.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

pub const OUTPUT_CAP: usize = 50_000;

/// The seed's blocklist. It is a speed bump, not a sandbox: approval is the real gate.
pub fn is_dangerous(command: &str) -> bool {
    const DANGEROUS: [&str; 5] = ["rm -rf /", "sudo", "shutdown", "reboot", "> /dev/"];
    DANGEROUS.iter().any(|d| command.contains(d))
}

/// Kills the whole process group when dropped: on timeout, on cancellation (the future is dropped)
/// and after a normal exit, so background children cannot outlive the call.
struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.0 > 0 {
            // SAFETY: plain syscall on a process group id we created; errors (already gone) are fine.
            unsafe {
                libc::killpg(self.0, libc::SIGKILL);
            }
        }
    }
}

pub async fn run_shell(root: &Path, command: &str, timeout: Duration) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start bash: {e}"))?;
    let guard = GroupGuard(child.id().map(|p| p as i32).unwrap_or(0));
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let collect = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let read_out = async {
            if let Some(s) = stdout.as_mut() {
                let _ = s.read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_end(&mut err).await;
            }
        };
        // Wait for the shell itself, then kill stragglers so their open pipes cannot stall us.
        let wait = async {
            let status = child.wait().await;
            drop(GroupGuard(guard.0));
            status
        };
        let (_, _, status) = tokio::join!(read_out, read_err, wait);
        (out, err, status)
    };
    let (out, err, status) = match tokio::time::timeout(timeout, collect).await {
        Ok(r) => r,
        Err(_) => return Err(format!("Timeout ({}s)", timeout.as_secs())),
    };
    drop(guard);
    status.map_err(|e| format!("bash failed: {e}"))?;
    let mut text = String::from_utf8_lossy(&out).into_owned();
    text.push_str(&String::from_utf8_lossy(&err));
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok("(no output)".into());
    }
    Ok(truncate_chars(trimmed, OUTPUT_CAP).to_string())
}

pub fn truncate_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
