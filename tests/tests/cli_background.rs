//! Background commands from the command line: nothing of a task outlives `stepwise run`, a `kill -9` of
//! stepwise, or chat; chat's `/jobs` and `/kill ID`; the line a task's end prints, with what the sandbox
//! stopped when it stopped the task.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use stepwise_tests::lsp_client::stepwise_binary;
use stepwise_tests::mock::{MockModel, Step};
use tokio::io::AsyncWriteExt;

fn stepwise(ws: &Path, mock: &MockModel) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(stepwise_binary(false));
    cmd.env_clear();
    for keep in ["PATH", "HOME", "TMPDIR", "LANG", stepwise::host::PORTABLE_ENV] {
        if let Ok(v) = std::env::var(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("STEPWISE_SANDBOX", "off")
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "k")
        .env("MODEL_ID", "m")
        .env("STEPWISE_RETRY_BASE_MS", "10");
    cmd.current_dir(ws).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    cmd
}

/// A task with a child in its own session (it leaves the process group) and one in the group.
const TASK: &str = "setsid sleep 300 & echo $! > esc.pid; sleep 300 & echo $! > kid.pid; echo $$ > task.pid; wait";

/// True once `pid` is gone, within 5 s.
fn gone_within_5s(pid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if !process_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn task_pids(ws: &TempDir) -> Vec<i32> {
    ["task.pid", "kid.pid", "esc.pid"].iter().map(|f| read_pid(&ws.join(f))).collect()
}

#[tokio::test]
async fn the_end_of_stepwise_run_ends_every_task() {
    let mock = MockModel::start(vec![
        call("background_run", json!({"command": TASK})),
        // Until the task wrote its last pid (it writes task.pid after the others): the run then ends it.
        call("bash", json!({"command": "while [ ! -s task.pid ]; do sleep 0.02; done; echo up"})),
        Step::text("started"),
    ])
    .await;
    let ws = TempDir::new("bg-run");
    let mut cmd = stepwise(ws.path(), &mock);
    cmd.args(["run", "--yes", "start", "a", "server"]);
    let o = tokio::time::timeout(Duration::from_secs(30), cmd.output()).await.expect("stepwise hung").unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("stepwise: stopping background tasks: bg-1"), "{err}");
    for pid in task_pids(&ws) {
        assert!(gone_within_5s(pid), "{pid} outlived stepwise run");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_9_of_stepwise_ends_every_task() {
    let mock = MockModel::start(vec![
        call("background_run", json!({"command": TASK})),
        call("bash", json!({"command": "sleep 300"})),
    ])
    .await;
    let ws = TempDir::new("bg-kill9");
    let mut cmd = stepwise(ws.path(), &mock);
    cmd.args(["run", "--yes", "start", "a", "server"]);
    let child = cmd.spawn().unwrap();
    let pids = task_pids(&ws);
    // SAFETY: plain syscall on our child's pid.
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGKILL) };
    let _ = child.wait_with_output().await;
    for pid in pids {
        assert!(gone_within_5s(pid), "{pid} outlived a kill -9 of stepwise");
    }
}

#[tokio::test]
async fn chat_lists_and_kills_tasks_and_says_when_one_ends() {
    let mock = MockModel::start(vec![
        call("background_run", json!({"command": "echo serving; touch serving.done; exec sleep 300"})),
        // Past the task's first output (an event: the file it makes after it), so `/jobs` shows it.
        call("bash", json!({"command": "while [ ! -f serving.done ]; do sleep 0.02; done"})),
        Step::text("started"),
        call("background_run", json!({"command": "echo quick; touch quick.done; exit 4"})),
        // Past the task's end (the end is seen a moment after its exit).
        call("bash", json!({"command": "while [ ! -f quick.done ]; do sleep 0.02; done; sleep 0.5"})),
        Step::text("again"),
    ])
    .await;
    let ws = TempDir::new("bg-chat");
    let mut cmd = stepwise(ws.path(), &mock);
    cmd.args(["chat", "--yes"]).stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"start it\n/jobs\n/kill bg-1\n/kill bg-1\n/jobs\nonce more\n/kill nope\n").await.unwrap();
    drop(stdin);
    let o = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.expect("chat hung").unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("bg-1  running  echo serving; touch serving.done; exec sleep 300\n      serving"), "{out}");
    assert!(out.contains("bg-1: killed by the user (SIGTERM); none of its processes is left"), "{out}");
    assert!(out.contains("bg-1 is not running (killed by the user (SIGTERM)): nothing to kill"), "{out}");
    assert!(out.contains("bg-1  killed by the user (SIGTERM)  echo serving"), "{out}");
    assert!(err.contains("stepwise: no background task nope in this session (tasks: bg-1, bg-2)"), "{err}");
    // The second task ended by itself: said on the terminal without the model asked.
    assert!(err.contains("stepwise: bg-2 exited 4 (echo quick; touch quick.done; exit 4)"), "{err}");
}

/// A task that ends while chat waits for the next prompt is said on the terminal at once; the model is
/// not asked.
#[tokio::test]
async fn chat_says_when_a_task_ends_between_prompts() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mock = MockModel::start(vec![
        call("background_run", json!({"command": "while [ ! -f go ]; do sleep 0.05; done; echo bye; exit 3"})),
        Step::text("started"),
    ])
    .await;
    let ws = TempDir::new("bg-chat-late");
    let mut cmd = stepwise(ws.path(), &mock);
    cmd.args(["chat", "--yes"]).stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    stdin.write_all(b"start it\n").await.unwrap();
    let limit = Duration::from_secs(20);
    // The run is over once its last text is printed.
    tokio::time::timeout(limit, async {
        while let Some(line) = out.next_line().await.unwrap() {
            if line.contains("started") {
                return;
            }
        }
        panic!("chat ended before the run's text");
    })
    .await
    .expect("the run did not end");
    // The mock records a request once it has answered it.
    let asked = mock.wait_for_requests(2, limit).await.len();
    std::fs::write(ws.join("go"), "").unwrap();
    let said = tokio::time::timeout(limit, async {
        while let Some(line) = err.next_line().await.unwrap() {
            if line.contains("bg-1") {
                return line;
            }
        }
        panic!("chat ended without saying the task ended");
    })
    .await
    .expect("the task's end was not said");
    assert_eq!(said, "stepwise: bg-1 exited 3 (while [ ! -f go ]; do sleep 0.05; done; echo bye; exit 3)");
    assert_eq!(mock.requests().len(), asked, "the model was asked about the task's end");
    drop(stdin);
    let status = tokio::time::timeout(limit, child.wait()).await.expect("chat hung").unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_a_task_the_sandbox_stopped_says_what_it_stopped() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    if let Err(why) = stepwise::sandbox::availability(false) {
        eprintln!("CANNOT TRY: the sandbox cannot start here ({why})");
        return;
    }
    let outside = TempDir::new("bg-cli-outside");
    let target = outside.join("x.txt");
    let command = format!("echo start; echo hi > {}", target.display());
    let mock = MockModel::start(vec![call("background_run", json!({"command": command})), Step::text("started")]).await;
    let ws = TempDir::new("bg-cli-sandbox");
    let mut cmd = stepwise(ws.path(), &mock);
    cmd.env("STEPWISE_SANDBOX", "workspace-write").args(["chat", "--yes"]).stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    stdin.write_all(b"write outside\n").await.unwrap();
    // The end's line, then the sandbox's note under it.
    let said = tokio::time::timeout(Duration::from_secs(20), async {
        let mut seen = Vec::new();
        while let Some(line) = err.next_line().await.unwrap() {
            if seen.last().is_some_and(|l: &String| l.starts_with("stepwise: bg-1 ")) {
                return (seen.pop().unwrap(), line);
            }
            seen.push(line);
        }
        panic!("chat ended without saying the task ended: {seen:?}");
    })
    .await
    .expect("the task's end was not said");
    // (The command is cut at 60 characters.)
    assert!(said.0.starts_with("stepwise: bg-1 exited 1 (echo start; echo hi > /"), "{}", said.0);
    let note = format!(
        "  [sandbox: the command was stopped by the sandbox (it stopped a write to {}, outside the folders it may write;",
        target.display()
    );
    assert!(said.1.starts_with(&note), "{}", said.1);
    assert!(
        said.1.ends_with(
            "a background task is not offered to run outside the sandbox: do it another way, or ask the user]"
        ),
        "{}",
        said.1
    );
    assert!(!target.exists(), "the write outside the workspace happened");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait()).await.expect("chat hung").unwrap();
    assert_eq!(status.code(), Some(0));
}
