//! Running the model's shell commands: bounded time and output, nothing left behind (`guard.rs`).

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::guard::{self, Exit, Reaper};
pub use super::output::truncate_chars;
use super::output::Bounded;
use crate::sandbox::{put_back_note, Keeper, Policy, PutBack};

/// What the model reads of one command at most (the seed's cap).
pub const OUTPUT_CAP: usize = 50_000;
/// A command that prints more than this is stopped: its output could never be shown, only paid for.
pub const OUTPUT_CEILING: u64 = 16 * 1024 * 1024;

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
    /// The protected paths a sandboxed command wrote, put back after it (`sandbox/keep/`); said in `text` too.
    pub put_back: Vec<PutBack>,
}

/// Runs `command` in `root` with the user's full rights (no sandbox).
pub async fn run_shell(root: &Path, command: &str, timeout: Duration) -> Result<ShellOutput, String> {
    run_shell_in(root, command, timeout, None).await
}

/// Runs `command` in `root`, confined by `sandbox` when given (`crate::sandbox`).
pub async fn run_shell_in(
    root: &Path,
    command: &str,
    timeout: Duration,
    sandbox: Option<&Policy>,
) -> Result<ShellOutput, String> {
    let Some(keeper) = sandbox.and_then(|p| p.keeper.as_ref()) else {
        return run_guarded(root, command, timeout, sandbox).await;
    };
    keeper.0.before();
    // Cancelled (the run dropped this future): what the command wrote there is still put back.
    let mut after = AfterCheck(Some(&keeper.0));
    let result = run_guarded(root, command, timeout, sandbox).await;
    let put_back = after.0.take().map(|k| k.after()).unwrap_or_default();
    let note = put_back_note(&put_back);
    match (result, note) {
        (r, None) => r,
        (Ok(mut out), Some(note)) => {
            out.text = format!("{}\n{note}", out.text);
            out.put_back = put_back;
            Ok(out)
        }
        (Err(e), Some(note)) => Err(format!("{e}\n{note}")),
    }
}

struct AfterCheck<'a>(Option<&'a Keeper>);

impl Drop for AfterCheck<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.0.take() {
            k.after();
        }
    }
}

async fn run_guarded(
    root: &Path,
    command: &str,
    timeout: Duration,
    sandbox: Option<&Policy>,
) -> Result<ShellOutput, String> {
    let guarded = guard::spawn(root, command, sandbox).map_err(|e| match sandbox {
        Some(_) => format!("cannot start the shell in the sandbox: {e}"),
        None => format!("cannot start the shell: {e}"),
    })?;
    // Declared before the reaper, so dropped after it: the guard must outlive the walk of its tree.
    let mut child = guarded.child;
    let mut status = guarded.status;
    let reaper = guarded.reaper;
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
        // When the command exits, whatever it left running is killed, so their open pipes cannot stall us.
        let wait = async {
            let exit = status.wait(&mut child, &reaper).await;
            reaper.kill_all();
            exit
        };
        let (overflowed, exit) = tokio::join!(drains, wait);
        (out, err, exit, overflowed)
    };
    let (out, err, exit, overflowed) = match tokio::time::timeout(timeout, collect).await {
        Ok(r) => r,
        Err(_) => return Err(format!("Timeout ({}s)", timeout.as_secs())),
    };
    drop(reaper);
    // Reaps the killed guard now rather than leaving it to tokio's orphan queue.
    let _ = child.wait().await;
    let exit = exit.map_err(|e| format!("the shell failed: {e}"))?;
    let mut text = out.into_text();
    text.push_str(&err.into_text());
    let failure = if overflowed {
        Some(format!("[output passed {} MB: the command was stopped]", OUTPUT_CEILING / (1024 * 1024)))
    } else {
        exit_note(exit)
    };
    Ok(verdict(&text, failure))
}

/// What the model reads of a finished command, wherever it ran: its output (trimmed, at most
/// `OUTPUT_CAP` characters, head and tail) and, when it failed, the note saying how on a line of its own.
pub fn verdict(output: &str, failure: Option<String>) -> ShellOutput {
    let mut text = truncate_middle(output.trim(), OUTPUT_CAP);
    match failure {
        None if text.is_empty() => ShellOutput { text: "(no output)".into(), is_error: false, put_back: Vec::new() },
        None => ShellOutput { text, is_error: false, put_back: Vec::new() },
        Some(note) => {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&note);
            ShellOutput { text, is_error: true, put_back: Vec::new() }
        }
    }
}

fn exit_note(exit: Exit) -> Option<String> {
    match exit {
        Exit::Code(0) => None,
        Exit::Code(code) => Some(format!("[exit code: {code}]")),
        Exit::Signal(sig) => Some(format!("[killed by signal {sig}]")),
        Exit::Unknown => Some("[exit status unknown]".into()),
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
