//! A command's processes, from its start to their end: a guard process owns them, and nothing the command
//! starts outlives it (a time-out, a cancel, its own end, or stepwise dying).
//!
//! The guard runs the command in its own process group and reports its exit status on a pipe, then
//! waits for stepwise to end everything (so whatever it adopted stays findable until then). On Linux the
//! guard is a forked copy of stepwise running no program (`fork_guard.rs`) and a child subreaper, so
//! escaped processes (`setsid`, double forks) come back to it and its process tree holds all of them;
//! the parent-death signal reaches it (SIGTERM) if stepwise dies. Elsewhere (and on Linux with
//! `STEPWISE_PORTABLE_HOST=1` in debug builds) the guard is a bash script (`GUARD`); escaped processes are
//! the ones started since the command began that carry its marker in their environment, and a watchdog
//! in the guard reads a pipe only stepwise holds open, whose end means stepwise is gone.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::AsyncReadExt;
use tokio::process::Child;

use super::{platform, procs};
use crate::sandbox::Policy;

/// Marks every process a command starts (the environment is inherited through `setsid` and double
/// forks, process groups are not), so stragglers can be found where the process tree cannot tell.
const MARKER: &str = "STEPWISE_COMMAND_ID";

/// The portable guard: `$1` the command, `$2` `watch` for the watchdog. stdin is the pipe stepwise holds (kept as
/// fd 5; the command gets /dev/null), fd 4 the status pipe. The command runs in a forked subshell of the
/// guard (cheaper than starting a second bash), without the guard's arguments and fds. `$$` is the
/// guard's pid: a command that kills it is reported as killed, and its processes are found by the marker.
/// The guard's own stderr goes to /dev/null (bash reports a killed job there); the command's goes to the
/// pipe as usual.
const GUARD: &str = r#"exec 3>&2 2>/dev/null 5<&0 0</dev/null
trap 'trap - TERM; kill -s KILL 0' TERM
if [ "$2" = watch ]; then (read -r _ <&5; kill -s KILL 0) 4>&- & fi
(c=$1; shift $#; eval "unset c; $c") 2>&3 3>&- 4>&- 5<&- &
wait $!
echo $? >&4
exec 4>&-
read -r _ <&5
kill -s KILL 0"#;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How the command ended, as the guard saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    Unknown,
}

/// A running command: the guard process, its status report and what ends them all. Whoever takes it
/// apart drops the reaper before the child (whose drop kills the guard): the guard must be alive while
/// its tree is walked.
pub struct Guarded {
    pub reaper: Reaper,
    pub child: Child,
    pub status: Status,
}

/// The guard's report of the command's exit status.
pub struct Status(Option<tokio::net::unix::pipe::Receiver>);

/// Starts `command` under a guard in `root`, confined by `sandbox` when given; its stdout and stderr are
/// piped.
pub fn spawn(root: &Path, command: &str, sandbox: Option<&Policy>) -> std::io::Result<Guarded> {
    let portable = platform::portable();
    let confine = Confine::new(sandbox)?;
    let id = format!("{}-{}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let (hold_r, hold_w) = std::io::pipe()?;
    let (status_r, status_w) = std::io::pipe()?;
    let status_fd = status_w.as_raw_fd();
    #[cfg(target_os = "linux")]
    let mut cmd = if portable {
        bash_guard(command, &id, hold_r, status_fd, confine)
    } else {
        forked_guard(command, &id, hold_r, status_fd, confine)?
    };
    #[cfg(not(target_os = "linux"))]
    let mut cmd = bash_guard(command, &id, hold_r, status_fd, confine);
    cmd.current_dir(root).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
    let since = procs::mark();
    let child = cmd.spawn()?;
    drop(cmd);
    drop(status_w);
    let status = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(status_r)).ok();
    let guard = child.id().map(|p| p as i32).unwrap_or(0);
    let reaper = Reaper {
        guard,
        marker: format!("{MARKER}={id}"),
        since,
        portable,
        lost: AtomicBool::new(false),
        done: AtomicBool::new(false),
        _hold: hold_w,
    };
    Ok(Guarded { reaper, child, status: Status(status) })
}

/// What confines a command, made before the fork: its variables (`TMPDIR`) and, on Linux, the Landlock
/// ruleset the guard imposes on itself; on macOS the Seatbelt wrapper around the guard.
struct Confine {
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    #[cfg(target_os = "linux")]
    ruleset: Option<std::sync::Arc<OwnedFd>>,
    /// The session's network namespace, joined before the ruleset is imposed (kept alive by this).
    #[cfg(target_os = "linux")]
    netns: Option<crate::sandbox::NetRef>,
    #[cfg(target_os = "macos")]
    policy: Option<Policy>,
}

impl Confine {
    fn new(policy: Option<&Policy>) -> std::io::Result<Confine> {
        Ok(Confine {
            env: policy.map(Policy::env).unwrap_or_default(),
            #[cfg(target_os = "linux")]
            ruleset: policy.map(crate::sandbox::landlock_ruleset).transpose()?,
            #[cfg(target_os = "linux")]
            netns: policy.and_then(|p| p.netns.clone()),
            #[cfg(target_os = "macos")]
            policy: policy.cloned(),
        })
    }

    #[cfg(target_os = "linux")]
    fn ruleset_fd(&self) -> RawFd {
        self.ruleset.as_ref().map_or(-1, |fd| fd.as_raw_fd())
    }

    /// (user or -1, net or -1): the namespaces the guard joins.
    #[cfg(target_os = "linux")]
    fn netns_fds(&self) -> (RawFd, RawFd) {
        self.netns.as_ref().map_or((-1, -1), |n| n.0.fds())
    }
}

/// The portable guard: a bash running `GUARD`, its watchdog reading `hold` (its stdin).
fn bash_guard(
    command: &str,
    id: &str,
    hold: std::io::PipeReader,
    status_fd: RawFd,
    confine: Confine,
) -> tokio::process::Command {
    let args = ["-c", GUARD, "bash", command, "watch"];
    #[cfg(target_os = "macos")]
    let mut cmd = match &confine.policy {
        Some(policy) => {
            let mut rest = vec!["bash"];
            rest.extend(args);
            let (program, args) = crate::sandbox::seatbelt_wrap(policy, &rest);
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args);
            cmd
        }
        None => {
            let mut cmd = tokio::process::Command::new("bash");
            cmd.args(args);
            cmd
        }
    };
    #[cfg(not(target_os = "macos"))]
    let mut cmd = {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.args(args);
        cmd
    };
    cmd.env(MARKER, id).envs(confine.env.iter().map(|(k, v)| (k, v))).stdin(Stdio::from(hold));
    #[cfg(target_os = "linux")]
    let (ruleset, netns) = (confine.ruleset_fd(), confine.netns_fds());
    // SAFETY: only async-signal-safe calls (fcntl, dup2; setns, prctl and landlock_restrict_self)
    // between fork and exec; the ruleset and namespaces are kept open by `confine`, moved into the hook.
    unsafe {
        cmd.pre_exec(move || {
            let _keep = &confine;
            #[cfg(target_os = "linux")]
            if netns.1 >= 0 && !crate::sandbox::join_netns(netns.0, netns.1) {
                return Err(std::io::Error::last_os_error());
            }
            #[cfg(target_os = "linux")]
            if ruleset >= 0 && !crate::sandbox::landlock_restrict(ruleset) {
                return Err(std::io::Error::last_os_error());
            }
            inherit_as(status_fd, 4)
        })
    };
    cmd
}

/// Linux's guard: the forked child itself (`fork_guard.rs`); it never reaches `exec`.
#[cfg(target_os = "linux")]
fn forked_guard(
    command: &str,
    id: &str,
    hold: std::io::PipeReader,
    status_fd: RawFd,
    confine: Confine,
) -> std::io::Result<tokio::process::Command> {
    let image = super::fork_guard::Image::new(command, (MARKER, id), &confine.env)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no bash on the PATH"))?;
    let mut cmd = tokio::process::Command::new("bash");
    cmd.stdin(Stdio::null());
    let parent = std::process::id();
    let (ruleset, netns) = (confine.ruleset_fd(), confine.netns_fds());
    // SAFETY: `run` makes only async-signal-safe calls, on memory made before the fork; it owns `hold`
    // and the ruleset (kept open in the parent until the spawn, then closed there by the drop of `cmd`).
    unsafe {
        cmd.pre_exec(move || {
            let _keep = &confine;
            let hold_fd = hold.as_raw_fd();
            super::fork_guard::run(&image, parent, status_fd, hold_fd, ruleset, netns)
        })
    };
    Ok(cmd)
}

/// Puts `fd` at `at` in the child, open across exec.
fn inherit_as(fd: RawFd, at: RawFd) -> std::io::Result<()> {
    // SAFETY: plain syscalls on fds of this (forked) process.
    let r = unsafe {
        if fd == at {
            libc::fcntl(fd, libc::F_SETFD, 0)
        } else {
            libc::dup2(fd, at)
        }
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl Status {
    /// Waits for the command to end and tells how; the guard stays, holding what the command left behind,
    /// until the reaper ends it.
    pub async fn wait(&mut self, child: &mut Child, reaper: &Reaper) -> std::io::Result<Exit> {
        if let Some(status) = self.0.as_mut() {
            let mut report = String::new();
            let _ = status.take(16).read_to_string(&mut report).await;
            if let Ok(s) = report.trim().parse::<i32>() {
                // A shell reports death by signal N as 128 + N (so an exit status of 129..192 reads as one).
                return Ok(if s > 128 && s <= 192 { Exit::Signal(s - 128) } else { Exit::Code(s) });
            }
        }
        // No report: the guard itself was killed (by the command, say), so what it adopted went elsewhere.
        reaper.lost.store(true, Ordering::Relaxed);
        let status = child.wait().await?;
        use std::os::unix::process::ExitStatusExt;
        Ok(match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Unknown,
        })
    }
}

/// Ends every process of a command when dropped: on time-out, on cancellation (the future is dropped)
/// and after a normal exit.
pub struct Reaper {
    guard: i32,
    marker: String,
    since: procs::Mark,
    portable: bool,
    /// The guard lost its adopted processes (it died before reporting): look for the marker too.
    lost: AtomicBool,
    /// Everything was killed already: nothing is left that could start another process.
    done: AtomicBool,
    /// The write end of the pipe the guard reads: closed when stepwise is gone (the portable watchdog
    /// notices; the Linux guard also ends its group when it sees it closed).
    _hold: std::io::PipeWriter,
}

impl Reaper {
    pub fn kill_all(&self) {
        if self.guard <= 0 || self.done.load(Ordering::Relaxed) {
            return;
        }
        let scan = self.portable || self.lost.load(Ordering::Relaxed);
        // Unless `lost`, the guard is alive and unreaped, so its pid is still its own; the tree is walked
        // only then, and where the kernel cannot list children the marker is looked for instead.
        #[cfg(target_os = "linux")]
        let scan = scan || {
            let guard = self.guard;
            !freeze_and_kill(|| subtree(guard))
        };
        // SAFETY: plain syscall on the process group we created; errors (already gone) are fine.
        unsafe { libc::killpg(self.guard, libc::SIGKILL) };
        if scan {
            let (since, marker) = (self.since, self.marker.as_str());
            freeze_and_kill(|| {
                Some(procs::started_since(since).into_iter().filter(|&p| procs::has_env(p, marker)).collect())
            });
        }
        self.done.store(true, Ordering::Relaxed);
    }
}

impl Reaper {
    /// Asks the command's processes to end (SIGTERM), the guard excepted (its own SIGTERM ends them all
    /// at once, which is `kill_all`'s job): how many were asked. `None` where they cannot be listed (the
    /// portable guard, or a guard that was lost): the caller goes straight to `kill_all`. `Some(0)` while
    /// the guard has not started the command yet (or it has ended).
    pub fn terminate(&self) -> Option<usize> {
        if self.guard <= 0 || self.done.load(Ordering::Relaxed) || self.portable || self.lost.load(Ordering::Relaxed) {
            return None;
        }
        #[cfg(target_os = "linux")]
        if let Some(all) = subtree(self.guard) {
            for &p in all.iter().skip(1) {
                // SAFETY: plain syscall; the process may already be gone.
                unsafe { libc::kill(p, libc::SIGTERM) };
            }
            return Some(all.len() - 1);
        }
        None
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// The guard and everything below it; `None` where the kernel does not list children.
#[cfg(target_os = "linux")]
fn subtree(guard: i32) -> Option<Vec<i32>> {
    let mut all = vec![guard];
    let mut i = 0;
    while i < all.len() {
        let kids = procs::children(all[i])?;
        all.extend(kids.into_iter().filter(|k| !all.contains(k)).collect::<Vec<_>>());
        i += 1;
    }
    Some(all)
}

/// Stops what `find` finds until it finds nothing new (a stopped process cannot fork), then kills them
/// all. Returns false when `find` could not look.
fn freeze_and_kill(mut find: impl FnMut() -> Option<Vec<i32>>) -> bool {
    let mut held: Vec<i32> = Vec::new();
    let mut looked = false;
    for _ in 0..64 {
        let Some(found) = find() else { break };
        looked = true;
        let new: Vec<i32> = found.into_iter().filter(|p| !held.contains(p)).collect();
        if new.is_empty() {
            break;
        }
        for &p in &new {
            // SAFETY: plain syscall; the process may already be gone.
            unsafe { libc::kill(p, libc::SIGSTOP) };
        }
        held.extend(new);
    }
    for &p in &held {
        // SAFETY: as above.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    looked
}
