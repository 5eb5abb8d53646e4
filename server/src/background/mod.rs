//! Background commands (the seeds' s08): a session's tasks, started by `background_run`, read by
//! `check_background`, ended by `kill_background` or a view's Stop, and told to the model when they end
//! (`<background-results>`, before its next request).
//!
//! Each task runs under the same guard as `bash` (`host/guard.rs`: its whole process tree owned, escapes
//! found, the sandbox imposed), forked from a thread that lives as long as the process (`host/detached.rs`), so
//! it lives until it ends, is killed, or its session ends: dropping the room kills every task's tree,
//! and if stepwise dies (`kill -9` included) each guard's parent-death signal ends its tree.

mod task;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

pub use crate::host::detached::{spawn, Started};
use crate::host::output::truncate_chars;
use crate::locks::lock;
pub use task::{signal_name, Killer, State, Task, CHECK_CHARS, GRACE, TAIL_BYTES};

/// Tasks running at once in one session at most.
pub const MAX_RUNNING: usize = 10;
/// Ended tasks kept for `check_background` and the views; older ones are forgotten.
const KEEP_ENDED: usize = 20;
/// Lines of a task's output the end report shows at most.
const REPORT_LINES: usize = 20;

/// A session's background tasks.
pub struct Background {
    tasks: Mutex<Vec<Arc<Task>>>,
    next: AtomicU32,
    /// Bumped on every change a view may show (a start, output, an end).
    changed: watch::Sender<u64>,
    /// When the checkpoints last looked at what the tasks changed (`needs_scan`).
    scanned: Mutex<Instant>,
}

impl Default for Background {
    fn default() -> Self {
        Background {
            tasks: Mutex::new(Vec::new()),
            next: AtomicU32::new(1),
            changed: watch::Sender::new(0),
            scanned: Mutex::new(Instant::now()),
        }
    }
}

/// One task as the views show it (`stepwise/background`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "BackgroundTask")]
pub struct TaskView {
    /// `bg-<n>`.
    pub id: String,
    pub command: String,
    /// `running`, `exited <code>` or `killed by <what>`.
    pub state: String,
    pub running: bool,
    /// The last bytes of its output.
    pub tail: String,
}

impl Background {
    /// Wakes on every change a view may show.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub fn running(&self) -> usize {
        lock(&self.tasks).iter().filter(|t| t.is_running()).count()
    }

    /// Whether another task may start; the refusal says why.
    pub fn admit(&self) -> Result<(), String> {
        let n = self.running();
        if n >= MAX_RUNNING {
            let ids: Vec<String> = lock(&self.tasks).iter().filter(|t| t.is_running()).map(|t| t.id.clone()).collect();
            return Err(format!(
                "background_run: {n} background tasks are running, the most a session may have ({MAX_RUNNING}); \
stop one with kill_background first (running: {})",
                ids.join(", ")
            ));
        }
        Ok(())
    }

    /// Adds a started command: its id (`bg-<n>`, from 1 in each session).
    pub fn add(&self, command: &str, started: Started) -> Arc<Task> {
        let id = format!("bg-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let task = Task::launch(id, command, started, self.changed.clone());
        let mut tasks = lock(&self.tasks);
        tasks.push(task.clone());
        let ended = tasks.iter().filter(|t| !t.is_running()).count();
        if ended > KEEP_ENDED {
            // The oldest ended tasks go; running ones always stay.
            let mut drop_n = ended - KEEP_ENDED;
            tasks.retain(|t| {
                let keep = t.is_running() || drop_n == 0;
                if !keep {
                    drop_n -= 1;
                }
                keep
            });
        }
        drop(tasks);
        self.changed.send_modify(|n| *n += 1);
        task
    }

    pub fn find(&self, id: &str) -> Option<Arc<Task>> {
        let id = id.trim();
        lock(&self.tasks).iter().find(|t| t.id == id).cloned()
    }

    pub fn list(&self) -> Vec<Arc<Task>> {
        lock(&self.tasks).clone()
    }

    /// The tasks as the views show them.
    pub fn views(&self) -> Vec<TaskView> {
        self.list()
            .iter()
            .map(|t| {
                let state = t.state();
                TaskView {
                    id: t.id.clone(),
                    command: t.command.clone(),
                    running: state == State::Running,
                    state: state.describe(),
                    tail: t.tail(),
                }
            })
            .collect()
    }

    /// What `id` names is not a task of this session: the error the model (or the user) reads.
    pub fn unknown(&self, id: &str) -> String {
        let ids: Vec<String> = self.list().iter().map(|t| t.id.clone()).collect();
        let known = if ids.is_empty() { "none".to_string() } else { ids.join(", ") };
        format!("no background task {} in this session (tasks: {known})", truncate_chars(id.trim(), 40))
    }

    /// Kills task `id`'s whole tree (SIGTERM, then SIGKILL); `Ok` once it is gone, saying how it ended.
    pub async fn kill(&self, id: &str, killer: Killer) -> Result<String, String> {
        let task = self.find(id).ok_or_else(|| self.unknown(id))?;
        if !task.kill(killer).await {
            task.mark_told();
            return Ok(format!("{} is not running ({}): nothing to kill", task.id, task.state().describe()));
        }
        task.mark_told();
        Ok(format!("{}: {}; none of its processes is left", task.id, task.state().describe()))
    }

    /// `check_background`: one task's state and its output since the last check, or every task on a line.
    pub fn check(&self, id: Option<&str>) -> Result<String, String> {
        let Some(id) = id else {
            let tasks = self.list();
            if tasks.is_empty() {
                return Ok("No background tasks.".into());
            }
            let lines: Vec<String> = tasks
                .iter()
                .map(|t| format!("{}: {} · {}", t.id, t.state().describe(), truncate_chars(&t.command, 80)))
                .collect();
            return Ok(lines.join("\n"));
        };
        let task = self.find(id).ok_or_else(|| self.unknown(id))?;
        let (state, output, fresh) = task.check();
        let output = output.trim_end();
        let body = if fresh == 0 { "(no new output)" } else { output };
        let note = task.stop_note().map(|n| format!("\n{n}")).unwrap_or_default();
        Ok(format!("{}: {}\n{body}{note}", task.id, state.describe()))
    }

    /// The block telling the model which tasks ended since it was last told (`None`: none did).
    pub fn take_results(&self) -> Option<String> {
        let mut lines = Vec::new();
        for t in self.list() {
            let Some(state) = t.take_untold_end() else { continue };
            lines.push(format!("{}: {}", t.id, state.describe()));
            let tail = last_lines(&t.tail(), REPORT_LINES);
            if !tail.is_empty() {
                lines.push(tail);
            }
            lines.extend(t.stop_note());
        }
        (!lines.is_empty()).then(|| format!("<background-results>\n{}\n</background-results>", lines.join("\n")))
    }

    /// Whether the checkpoints should look for what the tasks changed: one runs, or one ended since
    /// they last looked. Marks them looked.
    pub fn needs_scan(&self) -> bool {
        let mut scanned = lock(&self.scanned);
        let since = *scanned;
        *scanned = Instant::now();
        self.list().iter().any(|t| t.ended_at().is_none_or(|e| e >= since))
    }

    /// Whether a task still runs (the checkpoints keep watching for it).
    pub fn any_running(&self) -> bool {
        self.running() > 0
    }

    /// Ends every task now (the session is going); the guards' trees die with them.
    pub fn kill_all_now(&self) {
        for t in self.list() {
            t.kill_now();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.kill_all_now();
    }
}

/// The last `n` lines of `text`, trimmed.
fn last_lines(text: &str, n: usize) -> String {
    let text = text.trim();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests;
