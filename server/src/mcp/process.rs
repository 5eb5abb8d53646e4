//! A stdio MCP server as a child process that never outlives its session: its own process group under a
//! guard shell (as shell commands run, host/shell.rs), killed with everything it started when the server
//! is dropped, and by the guard when stepwise dies, even by SIGKILL.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

/// What is kept of one line the server writes to stderr.
const LINE_CAP: usize = 300;
/// How many of its first and of its last lines are kept.
const KEPT: usize = 5;
use tokio::process::{ChildStdin, ChildStdout};

/// Marks every process a server starts (inherited through `setsid` and double forks), so they can be
/// found when the server stops.
const MARKER: &str = "STEPWISE_MCP_ID";

/// The parent-death signal reaches only this shell (`$@` is the server and its arguments): it runs the
/// server in the background, stdin kept, and on SIGTERM (stepwise died) kills the whole process group.
const GUARD: &str = r#"trap 'trap - TERM; kill -KILL 0' TERM
"$@" <&0 &
wait $!"#;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The running server: its pipes, and what kills it.
pub struct Child {
    pub stdout: ChildStdout,
    pub stdin: ChildStdin,
    pub reaper: Reaper,
    /// What the server wrote to stderr, for the message when it fails.
    pub stderr: Arc<Mutex<Stderr>>,
}

/// What a server wrote to stderr, bounded: its first lines, its first line that says why it failed, and its
/// last lines. A program that fails says why first (`error: ...`) and may follow it with a backtrace, whose
/// last lines say nothing (rustup's proxy with `RUST_BACKTRACE=1`, issue 51).
#[derive(Debug, Default)]
pub struct Stderr {
    /// The first `KEPT` lines.
    pub head: Vec<String>,
    /// The first line that says error (in any case) and is not indented: a backtrace's frames are, and
    /// may name a function called `..._error`.
    pub error: Option<String>,
    /// The last `KEPT` lines.
    pub tail: Vec<String>,
}

impl Stderr {
    /// Takes one more line.
    pub fn push(&mut self, line: String) {
        if self.error.is_none() && !line.starts_with(char::is_whitespace) && line.to_lowercase().contains("error") {
            self.error = Some(line.clone());
        }
        if self.head.len() < KEPT {
            self.head.push(line.clone());
        }
        if self.tail.len() == KEPT {
            self.tail.remove(0);
        }
        self.tail.push(line);
    }

    /// The last lines, one a line.
    pub fn tail(&self) -> String {
        self.tail.join("\n")
    }
}

/// Kills the server's process group and every process carrying its marker when dropped.
pub struct Reaper {
    pgid: i32,
    marker: String,
    child: Option<tokio::process::Child>,
    /// Told when the server's stderr has been read to its end.
    stderr_done: Arc<tokio::sync::Notify>,
}

impl Reaper {
    /// Why the server failed, in the user's words: how it exited and its last lines on stderr (waited
    /// for briefly: they may still be in the pipe), else the protocol error.
    pub async fn why_failed(&mut self, error: String, stderr: &Mutex<Stderr>) -> String {
        let ended = self.ended(error).await;
        let said = crate::locks::lock(stderr).tail();
        if said.is_empty() {
            ended
        } else {
            format!("{ended}: {said}")
        }
    }

    /// How the server ended (`it exited with code 1`, `it was killed`), waited for briefly, else `error`
    /// (it still runs); its stderr read to the end (the lines may still be in the pipe).
    pub async fn ended(&mut self, error: String) -> String {
        let exited = match self.child.as_mut() {
            Some(c) => tokio::time::timeout(Duration::from_secs(2), c.wait()).await.ok().and_then(Result::ok),
            None => None,
        };
        // The stderr reader finishes at the pipe's end, right after the exit.
        let _ = tokio::time::timeout(Duration::from_secs(1), self.stderr_done.notified()).await;
        match exited.map(|s| s.code()) {
            Some(Some(code)) => format!("it exited with code {code}"),
            Some(None) => "it was killed".into(),
            None => error,
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if self.pgid > 0 {
            // SAFETY: plain syscall on a process group we created; it may be gone already.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
        }
        kill_marked(&self.marker);
        // Reaped by tokio in the background (kill_on_drop), so no zombie is left.
        drop(self.child.take());
    }
}

/// Processes that left the group still carry the marker in their environment.
fn kill_marked(marker: &str) {
    let Ok(dir) = std::fs::read_dir("/proc") else { return };
    let needle = marker.as_bytes();
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
        if env.split(|b| *b == 0).any(|var| var == needle) {
            // SAFETY: plain syscall; the process may be gone already.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Starts `command args` in `root` with `env` added to stepwise's environment.
pub fn spawn(root: &Path, command: &str, args: &[String], env: &BTreeMap<String, String>) -> Result<Child, String> {
    spawn_confined(root, command, args, env, None)
}

/// `spawn`, confined by the session's sandbox `policy` when given (Linux: the Landlock ruleset shell
/// commands get, imposed before the guard starts; the language servers stepwise starts run so).
pub fn spawn_confined(
    root: &Path,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    policy: Option<&crate::sandbox::Policy>,
) -> Result<Child, String> {
    #[cfg(target_os = "linux")]
    let ruleset = match policy {
        Some(p) => Some(crate::sandbox::landlock_ruleset(p).map_err(|e| format!("cannot confine {command}: {e}"))?),
        None => None,
    };
    #[cfg(not(target_os = "linux"))]
    if policy.is_some() {
        return Err(format!("{command}: a server cannot be confined on this system"));
    }
    let id = format!("{}-{}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let mut cmd = tokio::process::Command::new("bash");
    cmd.args(["-c", GUARD, "stepwise-mcp", command])
        .args(args)
        .current_dir(root)
        .envs(env)
        .env(MARKER, &id)
        .envs(policy.map(crate::sandbox::Policy::env).unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // SAFETY: only an async-signal-safe call between fork and exec. Spawned from a runtime worker
    // thread, which lives as long as the runtime (a thread's exit also fires the signal). Linux only:
    // elsewhere (macOS) there is no parent-death signal, and a server outlives a stepwise killed with -9
    // (the process group is still killed on every ordinary exit).
    #[cfg(target_os = "linux")]
    unsafe {
        use std::os::fd::AsRawFd;
        let fd = ruleset.as_ref().map_or(-1, |fd| fd.as_raw_fd());
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            if fd >= 0 && !crate::sandbox::landlock_restrict(fd) {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot start bash for {command}: {e}"))?;
    let pgid = child.id().map(|p| p as i32).unwrap_or(0);
    let (Some(stdout), Some(stdin), stderr) = (child.stdout.take(), child.stdin.take(), child.stderr.take()) else {
        return Err(format!("{command}: no pipes"));
    };
    let said = Arc::new(Mutex::new(Stderr::default()));
    let stderr_done = Arc::new(tokio::sync::Notify::new());
    if let Some(stderr) = stderr {
        let (said, done) = (said.clone(), stderr_done.clone());
        let name = command.to_string();
        tokio::spawn(async move {
            // Split by hand: a server that never ends a line must not grow one without bound.
            let mut reader = BufReader::new(stderr);
            let mut line: Vec<u8> = Vec::new();
            loop {
                let (used, ended) = match reader.fill_buf().await {
                    Ok([]) | Err(_) => break,
                    Ok(buf) => match buf.iter().position(|b| *b == b'\n') {
                        Some(i) => {
                            take_some(&mut line, &buf[..i]);
                            (i + 1, true)
                        }
                        None => {
                            take_some(&mut line, buf);
                            (buf.len(), false)
                        }
                    },
                };
                reader.consume(used);
                if ended {
                    let text = String::from_utf8_lossy(&line).into_owned();
                    tracing::debug!("mcp {name}: {text}");
                    crate::locks::lock(&said).push(text);
                    line.clear();
                }
            }
            done.notify_one();
        });
    }
    Ok(Child {
        stdout,
        stdin,
        reaper: Reaper { pgid, marker: format!("{MARKER}={id}"), child: Some(child), stderr_done },
        stderr: said,
    })
}

/// Appends to `line` what fits under `LINE_CAP`.
fn take_some(line: &mut Vec<u8>, more: &[u8]) {
    let room = LINE_CAP.saturating_sub(line.len());
    line.extend_from_slice(&more[..more.len().min(room)]);
}
