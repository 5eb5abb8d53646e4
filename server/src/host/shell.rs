//! Running the model's shell commands: own process group, bounded time and output, nothing left behind.

use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

pub use super::output::truncate_chars;
use super::output::Bounded;

/// What the model reads of one command at most (the seed's cap).
pub const OUTPUT_CAP: usize = 50_000;
/// A command that prints more than this is stopped: its output could never be shown, only paid for.
pub const OUTPUT_CEILING: u64 = 16 * 1024 * 1024;

/// Marks every process a command starts (the environment is inherited through `setsid` and double
/// forks, process groups are not), so stragglers can be found and killed when the command ends.
const MARKER: &str = "STEPWISE_COMMAND_ID";

/// The seed's blocklist, made precise: it is a speed bump, not a sandbox (approval is the real gate).
/// Returns why a command is refused.
pub fn is_dangerous(command: &str) -> Option<&'static str> {
    let words: Vec<&str> = command.split(|c: char| c.is_whitespace() || ";&|()`".contains(c)).collect();
    if words.iter().any(|w| *w == "sudo" || *w == "doas") {
        return Some("it asks for root privileges (sudo)");
    }
    if words.iter().any(|w| matches!(*w, "shutdown" | "reboot" | "halt" | "poweroff")) {
        return Some("it would stop or restart the machine");
    }
    let squashed: String = command.split_whitespace().collect::<Vec<_>>().join(" ");
    for root in ["rm -rf /", "rm -fr /", "rm -rf /*", "rm -fr /*"] {
        if let Some(i) = squashed.find(root) {
            let next = squashed[i + root.len()..].chars().next();
            // `rm -rf /` or `rm -rf /*`, not `rm -rf /tmp/x` (whose harm approval judges).
            if next.is_none_or(|c| c.is_whitespace() || ";&|".contains(c)) {
                return Some("it deletes the whole filesystem");
            }
        }
    }
    // Redirecting into a device (`> /dev/sda`), but not the harmless sinks.
    let mut rest = command;
    while let Some(i) = rest.find("/dev/") {
        let before = rest[..i].trim_end();
        let dev: String = rest[i + 5..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        if before.ends_with('>') && !matches!(dev.as_str(), "null" | "stdout" | "stderr" | "tty" | "zero") {
            return Some("it writes to a device");
        }
        rest = &rest[i + 5..];
    }
    None
}

/// A finished command as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutput {
    pub text: String,
    /// Exited non-zero, was killed, or was stopped for its output.
    pub is_error: bool,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The shell around the model's command (`$1`). The parent-death signal reaches only this shell, so it
/// runs the command in the background and waits: on SIGTERM (stepwise died, even by SIGKILL) its trap
/// kills the whole process group. A command killed by a signal is re-raised, so its verdict says
/// which (an exit status of 129..192 therefore reads as that signal). The guard's own stderr goes to
/// /dev/null (bash would report the killed job there); the command's goes to the pipe as usual.
const GUARD: &str = r#"exec 3>&2 2>/dev/null
trap 'trap - TERM; kill -KILL 0' TERM
bash -c "$1" 2>&3 3>&- &
wait $!
s=$?
trap - TERM
if [ "$s" -gt 128 ] && [ "$s" -le 192 ]; then kill -s $((s - 128)) $$; fi
exit "$s""#;

/// Kills the command's process group and every process carrying its marker when dropped: on timeout,
/// on cancellation (the future is dropped) and after a normal exit.
struct Reaper {
    pgid: i32,
    marker: String,
}

impl Reaper {
    fn kill_all(&self) {
        if self.pgid > 0 {
            // SAFETY: plain syscall on a process group id we created; errors (already gone) are fine.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
        }
        kill_marked(&self.marker);
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Processes that escaped the group (`setsid`, double forks) still carry the marker in their environment.
fn kill_marked(marker: &str) {
    let Ok(dir) = std::fs::read_dir("/proc") else { return };
    let needle = marker.as_bytes();
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
        if env.split(|b| *b == 0).any(|var| var == needle) {
            // SAFETY: plain syscall; the process may already be gone.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

pub async fn run_shell(root: &Path, command: &str, timeout: Duration) -> Result<ShellOutput, String> {
    let id = format!("{}-{}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let mut cmd = tokio::process::Command::new("bash");
    cmd.args(["-c", GUARD, "stepwise-shell", command])
        .current_dir(root)
        .env(MARKER, &id)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: only async-signal-safe calls between fork and exec. If stepwise dies (even by SIGKILL) the
    // guard shell gets SIGTERM and takes its whole process group down (GUARD); tokio spawns from its
    // long-lived worker threads, whose exit would also count.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot start bash: {e}"))?;
    let reaper = Reaper { pgid: child.id().map(|p| p as i32).unwrap_or(0), marker: format!("{MARKER}={id}") };
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let collect = async {
        let mut out = Bounded::new(OUTPUT_CAP);
        let mut err = Bounded::new(OUTPUT_CAP);
        let drains = async {
            let (a, b) = tokio::join!(
                drain(stdout, &mut out, OUTPUT_CEILING, &reaper),
                drain(stderr, &mut err, OUTPUT_CEILING, &reaper)
            );
            a || b
        };
        // When the shell exits, whatever it left running is killed, so their open pipes cannot stall us.
        let wait = async {
            let status = child.wait().await;
            reaper.kill_all();
            status
        };
        let (overflowed, status) = tokio::join!(drains, wait);
        (out, err, status, overflowed)
    };
    let (out, err, status, overflowed) = match tokio::time::timeout(timeout, collect).await {
        Ok(r) => r,
        Err(_) => return Err(format!("Timeout ({}s)", timeout.as_secs())),
    };
    drop(reaper);
    let status = status.map_err(|e| format!("bash failed: {e}"))?;
    let mut text = out.into_text();
    text.push_str(&err.into_text());
    let failure = if overflowed {
        Some(format!("[output passed {} MB: the command was stopped]", OUTPUT_CEILING / (1024 * 1024)))
    } else {
        exit_note(status)
    };
    Ok(verdict(&text, failure))
}

/// What the model reads of a finished command, wherever it ran: its output (trimmed, at most
/// `OUTPUT_CAP` characters, head and tail) and, when it failed, the note saying how on a line of its own.
pub fn verdict(output: &str, failure: Option<String>) -> ShellOutput {
    let mut text = truncate_middle(output.trim(), OUTPUT_CAP);
    match failure {
        None if text.is_empty() => ShellOutput { text: "(no output)".into(), is_error: false },
        None => ShellOutput { text, is_error: false },
        Some(note) => {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&note);
            ShellOutput { text, is_error: true }
        }
    }
}

fn exit_note(status: std::process::ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("[exit code: {code}]")),
        (None, Some(sig)) => Some(format!("[killed by signal {sig}]")),
        (None, None) => Some("[exit status unknown]".into()),
    }
}

/// Reads a pipe to its end into `buf`; past `ceiling` bytes the command is killed and this returns true.
async fn drain<R: AsyncRead + Unpin>(pipe: Option<R>, buf: &mut Bounded, ceiling: u64, reaper: &Reaper) -> bool {
    let Some(mut pipe) = pipe else { return false };
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                buf.push(&chunk[..n]);
                if buf.total() > ceiling {
                    reaper.kill_all();
                    return true;
                }
            }
        }
    }
}

/// At most `max` characters: the head and the tail, with a note of what was left out between them.
pub fn truncate_middle(s: &str, max: usize) -> String {
    let total = s.chars().count();
    if total <= max {
        return s.to_string();
    }
    let half = max / 2;
    let head = truncate_chars(s, half);
    let tail_start = s.char_indices().nth(total - half).map(|(i, _)| i).unwrap_or(s.len());
    format!("{head}\n... [{} characters elided] ...\n{}", total - 2 * half, &s[tail_start..])
}
