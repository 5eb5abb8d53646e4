//! Background commands' bad input and faults, beside core_background.rs: a task still running a minute
//! after it started, one printing without end (its output bounded, the session going on), a double-forked
//! `setsid` grandchild ended by `kill_background` before its result, a kill right after the start, and a
//! task the sandbox stops: no question is put, and its end says what the sandbox stopped.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use stepwise::background::{spawn, Background, Killer, Task, CHECK_CHARS};
use stepwise::host::{Approval, Ask, DiskHost};

async fn start(bg: &Background, root: &std::path::Path, command: &str) -> Arc<Task> {
    let started = spawn(root, command, None).await.expect("starts");
    bg.add(command, started)
}

/// Waits, woken by the room's changes, until `done` holds (at most `limit`).
async fn until(bg: &Background, limit: Duration, mut done: impl FnMut() -> bool) {
    let mut rx = bg.subscribe();
    let seen = rx.wait_for(|_| done());
    tokio::time::timeout(limit, seen).await.expect("in time").expect("the room is there");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_still_runs_a_minute_after_it_started() {
    let ws = TempDir::new("bg-minute");
    let bg = Background::default();
    let task = start(&bg, ws.path(), "i=0; while :; do echo tick $i; i=$((i+1)); sleep 1; done").await;
    // Read as the model would, with check_background, on every change until the 62nd tick (>= 61 s).
    let mut read = String::new();
    until(&bg, Duration::from_secs(120), || {
        let checked = bg.check(Some("bg-1")).unwrap();
        let (state, output) = checked.split_once('\n').unwrap();
        assert_eq!(state, "bg-1: running", "{checked}");
        if output != "(no new output)" {
            read.push_str(output);
            read.push('\n');
        }
        read.contains("tick 61\n")
    })
    .await;
    assert!(task.started.elapsed() >= Duration::from_secs(60), "{:?}", task.started.elapsed());
    assert!(task.is_running(), "{}", task.state().describe());
    assert!((0..=61).all(|i| read.contains(&format!("tick {i}\n"))), "every tick was read once: {read}");
    let said = bg.kill("bg-1", Killer::Model).await.unwrap();
    assert_eq!(said, "bg-1: killed by kill_background (SIGTERM); none of its processes is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_without_end_stays_bounded_and_the_session_goes_on() {
    let ws = TempDir::new("bg-yes");
    let bg = Background::default();
    let task = start(&bg, ws.path(), "yes stepwise").await;
    until(&bg, Duration::from_secs(60), || task.total() > 50_000_000).await;
    let checked = bg.check(Some("bg-1")).unwrap();
    assert!(checked.starts_with("bg-1: running\n"), "{}", &checked[..80]);
    assert!(checked.len() <= CHECK_CHARS + 200, "a check holds head and tail only: {}", checked.len());
    assert!(checked.contains("bytes elided"), "it says what it left out");
    assert!(task.tail().len() <= stepwise::background::TAIL_BYTES);
    let said = bg.kill("bg-1", Killer::Model).await.unwrap();
    assert!(said.ends_with("none of its processes is left"), "{said}");
    // The room goes on: another task starts and reports its end.
    let next = start(&bg, ws.path(), "echo after").await;
    until(&bg, Duration::from_secs(10), || !next.is_running()).await;
    let report = bg.take_results().unwrap();
    assert!(report.contains("bg-2: exited 0\nafter"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_background_ends_a_double_forked_setsid_grandchild_before_it_answers() {
    let ws = TempDir::new("bg-double-fork");
    let bg = Background::default();
    // The grandchild's parent exits at once (a double fork), and it leaves the session and process group.
    let command = "(setsid sh -c 'sleep 300 & echo $! > grandchild.pid' &); echo ready; exec sleep 300";
    let task = start(&bg, ws.path(), command).await;
    until(&bg, Duration::from_secs(10), || task.tail().contains("ready")).await;
    let grandchild = read_pid(&ws.join("grandchild.pid"));
    assert!(process_alive(grandchild));
    let said = bg.kill("bg-1", Killer::Model).await.unwrap();
    assert_eq!(said, "bg-1: killed by kill_background (SIGTERM); none of its processes is left");
    assert!(!process_alive(grandchild), "the double-forked {grandchild} outlived kill_background");
}

/// The sandbox stops a background task's write outside the workspace: `background_run` asks nothing (the
/// escalation question is `bash`'s; nobody waits on a task's end to answer one), the write did not
/// happen, and the end (check and report) says what the sandbox stopped and that it is not run outside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_the_sandbox_stops_asks_nothing_and_its_end_says_what_was_stopped() {
    use stepwise::sandbox::{SandboxMode, SandboxSettings};
    if let Err(why) = stepwise::sandbox::availability(false) {
        eprintln!("CANNOT TRY: the sandbox cannot start here ({why})");
        return;
    }
    let outside = TempDir::new("bg-outside");
    let target = outside.join("x.txt");
    let command = format!("echo start; echo hi > {}", target.display());
    let cfg = stepwise::agent::AgentConfig {
        sandbox: SandboxSettings::of(SandboxMode::WorkspaceWrite, false),
        ..Default::default()
    };
    let mut h = Harness::with_cfg(
        vec![call("background_run", json!({ "command": command })), stepwise_tests::mock::Step::text("done")],
        cfg,
    )
    .await;
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = asked.clone();
    let approver: stepwise::host::disk::Approver = Arc::new(move |ask: &Ask<'_>| {
        log.lock().unwrap().push(ask.question("ws"));
        Box::pin(async { Approval::Deny })
    });
    h.host = DiskHost::new(h.ws.path(), Some(approver)).unwrap();
    h.run("write outside").await;
    assert!(result_texts(&h.body(1))[0].starts_with("Background task bg-1 started"), "{:?}", h.body(1));
    let bg = h.work.background();
    let task = bg.find("bg-1").unwrap();
    let started = Instant::now();
    until(bg, Duration::from_secs(10), || !task.is_running()).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!target.exists(), "the write outside the workspace happened");
    let stopped = format!(
        "[sandbox: the command was stopped by the sandbox (it stopped a write to {}, outside the folders it may write;",
        target.display()
    );
    let not_outside =
        "a background task is not offered to run outside the sandbox: do it another way, or ask the user]";
    // Told in the next request's report (in the request after the start already, when the task ended
    // before that round closed), and by a check.
    let sent = texts(last_message(&h.body(1))).into_iter().find(|t| t.starts_with("<background-results>"));
    let report = bg.take_results().or(sent).expect("the task's end is reported");
    // (Its stdout and stderr are read apart: their order in the tail is not the order printed.)
    assert!(report.starts_with("<background-results>\nbg-1: exited 1\n") && report.contains("start\n"), "{report}");
    assert!(report.contains(&stopped) && report.contains(not_outside), "{report}");
    let checked = bg.check(Some("bg-1")).unwrap();
    assert!(checked.starts_with("bg-1: exited 1\n"), "{checked}");
    assert!(checked.contains(&stopped) && checked.ends_with(not_outside), "{checked}");
    assert!(asked.lock().unwrap().is_empty(), "a question was put: {:?}", asked.lock().unwrap());
}

/// A kill right after the start, before the guard may have started the command: the command is still
/// asked to end (SIGTERM), not left to the SIGKILL a second later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_right_after_the_start_asks_the_command_to_end() {
    let ws = TempDir::new("bg-early-kill");
    let bg = Background::default();
    for i in 1..=40 {
        start(&bg, ws.path(), "echo started; exec sleep 300").await;
        let said = bg.kill(&format!("bg-{i}"), Killer::Model).await.unwrap();
        assert_eq!(said, format!("bg-{i}: killed by kill_background (SIGTERM); none of its processes is left"));
    }
}
