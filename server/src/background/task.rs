//! One background command: its guard (`host/guard.rs`, the same as `bash`'s), its output as it comes
//! (bounded: what is unread since the last check, head and tail, and a short tail for the end report),
//! and how it ended.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

use crate::host::detached::Started;
use crate::host::guard::{self, Exit, Reaper};
use crate::host::output::Bounded;
use crate::locks::lock;
use crate::sandbox::{self, Policy};

/// What a check shows of the output since the previous one at most (head and tail).
pub const CHECK_CHARS: usize = 10_000;
/// `Bounded` keeps up to 4 bytes a character on each side: so that head and tail together stay within
/// `CHECK_CHARS` characters (bytes), it is given an eighth.
const CHECK_BOUND: usize = CHECK_CHARS / 8;
/// What the end report and the views show of a task's output: its last bytes.
pub const TAIL_BYTES: usize = 2_000;
/// How long a task may take to end on SIGTERM before it gets SIGKILL.
pub const GRACE: Duration = Duration::from_millis(1_000);
/// How long (in 10 ms looks) a kill waits for a just-started task's command to appear under its guard.
const START_POLLS: u32 = 50;

/// Where a task is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Running,
    Exited(i32),
    /// Killed, and by what (`kill_background (SIGTERM)`, `signal 9 (SIGKILL)`).
    Killed(String),
}

impl State {
    /// `running`, `exited 3`, `killed by ...`: the words the tools, the end report and the views use.
    pub fn describe(&self) -> String {
        match self {
            State::Running => "running".into(),
            State::Exited(code) => format!("exited {code}"),
            State::Killed(by) => format!("killed by {by}"),
        }
    }
}

/// Who asked for a kill: the model (`kill_background`), the user (a view's Stop, `/kill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Killer {
    Model,
    User,
}

struct Inner {
    state: State,
    unread: Bounded,
    tail: VecDeque<u8>,
    total: u64,
    /// The model has read how it ended (a check or a kill's result): the end report leaves it out.
    told: bool,
    killing: Option<(Killer, i32)>,
    ended_at: Option<Instant>,
    /// What the sandbox stopped, when its end shows it did (`sandbox/stops.rs`): said with the end.
    stop_note: Option<String>,
}

pub struct Task {
    pub id: String,
    pub command: String,
    pub started: Instant,
    inner: Mutex<Inner>,
    reaper: Arc<Reaper>,
    /// The sandbox it runs in, if any.
    policy: Option<Policy>,
    /// False while it runs; true once its whole tree is gone.
    ended: watch::Sender<bool>,
    /// Bumped on every change a view may show (output, the end).
    changed: watch::Sender<u64>,
}

impl Task {
    /// The task for `started`, with its monitor running: output read as it comes, the end recorded.
    pub fn launch(id: String, command: &str, started: Started, changed: watch::Sender<u64>) -> Arc<Task> {
        let (guard::Guarded { reaper, mut child, mut status }, policy) = started.into_parts();
        let task = Arc::new(Task {
            id,
            command: command.to_string(),
            started: Instant::now(),
            inner: Mutex::new(Inner {
                state: State::Running,
                unread: Bounded::new(CHECK_BOUND),
                tail: VecDeque::new(),
                total: 0,
                told: false,
                killing: None,
                ended_at: None,
                stop_note: None,
            }),
            reaper: Arc::new(reaper),
            policy,
            ended: watch::Sender::new(false),
            changed,
        });
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let t = task.clone();
        tokio::spawn(async move {
            let wait = async {
                let exit = status.wait(&mut child, &t.reaper).await;
                // What the command left running goes with it, so its pipes close too.
                t.reaper.kill_all();
                exit
            };
            let (_, _, exit) = tokio::join!(t.drain(stdout), t.drain(stderr), wait);
            let _ = child.wait().await;
            t.finish(exit.unwrap_or(Exit::Unknown));
        });
        task
    }

    async fn drain<R: AsyncRead + Unpin>(&self, pipe: Option<R>) {
        let Some(mut pipe) = pipe else { return };
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let mut i = lock(&self.inner);
                    i.unread.push(&chunk[..n]);
                    i.total += n as u64;
                    let bytes = &chunk[n.saturating_sub(TAIL_BYTES)..n];
                    let over = (i.tail.len() + bytes.len()).saturating_sub(TAIL_BYTES);
                    i.tail.drain(..over);
                    i.tail.extend(bytes);
                    drop(i);
                    self.changed.send_modify(|n| *n += 1);
                }
            }
        }
    }

    fn finish(&self, exit: Exit) {
        let mut i = lock(&self.inner);
        i.state = match (i.killing, exit) {
            (Some((killer, sig)), _) => {
                let by = match killer {
                    Killer::Model => "kill_background",
                    Killer::User => "the user",
                };
                State::Killed(format!("{by} ({})", signal_name(sig)))
            }
            (None, Exit::Code(code)) => State::Exited(code),
            (None, Exit::Signal(sig)) => State::Killed(format!("signal {sig} ({})", signal_name(sig))),
            (None, Exit::Unknown) => State::Killed("an unknown cause (no exit status)".into()),
        };
        i.ended_at = Some(Instant::now());
        // A failure the sandbox caused is said as such. No question to run it outside follows (that is
        // `bash`'s): nobody waits on a background task's end to answer one.
        let failed = !matches!(i.state, State::Exited(0)) && i.killing.is_none();
        if let Some(policy) = self.policy.as_ref().filter(|_| failed) {
            let (a, b) = i.tail.as_slices();
            let tail = String::from_utf8_lossy(&[a, b].concat()).into_owned();
            if let Some(stop) = sandbox::stopped(&tail, true, policy) {
                i.stop_note = Some(sandbox::stopped_note(policy, Some(&stop), sandbox::Escalation::Background));
            }
        }
        drop(i);
        self.ended.send_replace(true);
        self.changed.send_modify(|n| *n += 1);
    }

    pub fn state(&self) -> State {
        lock(&self.inner).state.clone()
    }

    pub fn is_running(&self) -> bool {
        lock(&self.inner).state == State::Running
    }

    /// The output since the last check (emptied), and the state; an ended state counts as told.
    pub fn check(&self) -> (State, String, u64) {
        let mut i = lock(&self.inner);
        let unread = std::mem::replace(&mut i.unread, Bounded::new(CHECK_BOUND));
        let fresh = unread.total();
        if i.state != State::Running {
            i.told = true;
        }
        (i.state.clone(), unread.into_text(), fresh)
    }

    /// The last bytes of the output, as text.
    pub fn tail(&self) -> String {
        let i = lock(&self.inner);
        let (a, b) = i.tail.as_slices();
        let mut bytes = a.to_vec();
        bytes.extend_from_slice(b);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Bytes printed in all.
    pub fn total(&self) -> u64 {
        lock(&self.inner).total
    }

    /// Ended and not yet told to the model: marks it told.
    pub fn take_untold_end(&self) -> Option<State> {
        let mut i = lock(&self.inner);
        if i.state == State::Running || i.told {
            return None;
        }
        i.told = true;
        Some(i.state.clone())
    }

    pub fn mark_told(&self) {
        lock(&self.inner).told = true;
    }

    /// What the sandbox stopped, once its end showed it did.
    pub fn stop_note(&self) -> Option<String> {
        lock(&self.inner).stop_note.clone()
    }

    pub fn ended_at(&self) -> Option<Instant> {
        lock(&self.inner).ended_at
    }

    /// Ends the whole tree: SIGTERM, and SIGKILL for what is left after `GRACE`; returns once everything
    /// is gone (its ports free). `false`: it had ended already.
    pub async fn kill(&self, killer: Killer) -> bool {
        let over = {
            let mut i = lock(&self.inner);
            let over = i.state != State::Running || i.killing.is_some();
            if !over {
                i.killing = Some((killer, libc::SIGTERM));
            }
            over
        };
        if over {
            // Ended, or being killed already: the answer waits for that kill to finish.
            self.until_ended(Duration::from_secs(5)).await;
            return false;
        }
        if !(self.ask_to_end().await && self.until_ended(GRACE).await) {
            lock(&self.inner).killing = Some((killer, libc::SIGKILL));
            self.reaper.kill_all();
            self.until_ended(Duration::from_secs(5)).await;
        }
        true
    }

    /// SIGTERM to the task's processes; false where they cannot be listed or none came. A task killed
    /// right after it started may not have its command yet (the guard starts it): that is waited for a
    /// moment, else the SIGTERM would reach nobody and only SIGKILL, a second later, would end it.
    async fn ask_to_end(&self) -> bool {
        for _ in 0..START_POLLS {
            match self.reaper.terminate() {
                Some(0) if self.is_running() => tokio::time::sleep(Duration::from_millis(10)).await,
                asked => return asked.is_some_and(|n| n > 0),
            }
        }
        false
    }

    /// Kills everything now, without a grace (the session is going).
    pub fn kill_now(&self) {
        self.reaper.kill_all();
    }

    async fn until_ended(&self, limit: Duration) -> bool {
        let mut rx = self.ended.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|e| *e)).await.is_ok_and(|r| r.is_ok())
    }
}

/// `SIGTERM`, `SIGKILL`, ... (the common ones; else the number).
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}
