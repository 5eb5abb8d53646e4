//! The room on its own, on the disk's guard (no model): start, read, end, kill, the cap, the report.

use std::time::Duration;

use super::*;

async fn start(bg: &Background, command: &str) -> Arc<Task> {
    let root = std::env::temp_dir();
    let started = spawn(&root, command, None).await.expect("starts");
    bg.add(command, started)
}

async fn until_ended(task: &Task) {
    for _ in 0..500 {
        if !task.is_running() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} did not end", task.id);
}

/// Waits (on the room's change signal) until `task` has printed `text`.
async fn until_printed(bg: &Background, task: &Task, text: &str) {
    let mut rx = bg.subscribe();
    let seen = rx.wait_for(|_| task.tail().contains(text));
    tokio::time::timeout(Duration::from_secs(10), seen).await.expect("printed in time").unwrap();
}

#[tokio::test]
async fn a_task_answers_with_its_id_and_reports_its_end_once() {
    let bg = Background::default();
    let t = start(&bg, "echo hello; exit 3").await;
    assert_eq!(t.id, "bg-1");
    until_ended(&t).await;
    assert_eq!(t.state(), State::Exited(3));
    let block = bg.take_results().expect("ended, untold");
    assert_eq!(block, "<background-results>\nbg-1: exited 3\nhello\n</background-results>");
    assert_eq!(bg.take_results(), None, "told once");
    let t2 = start(&bg, "true").await;
    assert_eq!(t2.id, "bg-2");
}

#[tokio::test]
async fn checks_give_the_output_since_the_last_check() {
    let bg = Background::default();
    let t = start(&bg, "echo one; read _; echo two").await;
    // stdin is /dev/null: `read` returns at once, so the task ends after printing both.
    until_ended(&t).await;
    let first = bg.check(Some("bg-1")).unwrap();
    assert_eq!(first, "bg-1: exited 0\none\ntwo");
    assert_eq!(bg.check(Some("bg-1")).unwrap(), "bg-1: exited 0\n(no new output)");
    assert_eq!(bg.take_results(), None, "a check that showed the end told it");
    assert!(bg.check(Some("bg-9")).unwrap_err().contains("no background task bg-9"));
    assert_eq!(bg.check(None).unwrap(), "bg-1: exited 0 · echo one; read _; echo two");
}

#[tokio::test]
async fn a_kill_ends_the_tree_and_says_by_what() {
    let bg = Background::default();
    let t = start(&bg, "trap '' TERM; sleep 600 & echo ready; sleep 600; wait").await;
    until_printed(&bg, &t, "ready").await;
    let said = bg.kill("bg-1", Killer::Model).await.unwrap();
    assert!(!t.is_running());
    // bash ignores SIGTERM here, so SIGKILL ends it.
    assert_eq!(said, "bg-1: killed by kill_background (SIGKILL); none of its processes is left");
    let again = bg.kill("bg-1", Killer::Model).await.unwrap();
    assert!(again.contains("is not running"), "{again}");
    assert!(bg.kill("bg-7", Killer::Model).await.is_err());
}

#[tokio::test]
async fn a_signal_is_never_an_exit_code() {
    let bg = Background::default();
    let t = start(&bg, "kill -9 $$").await;
    until_ended(&t).await;
    assert_eq!(t.state(), State::Killed("signal 9 (SIGKILL)".into()));
}

#[tokio::test]
async fn the_cap_is_said_when_reached() {
    let bg = Background::default();
    for _ in 0..MAX_RUNNING {
        start(&bg, "sleep 600").await;
    }
    let e = bg.admit().unwrap_err();
    assert!(e.contains("the most a session may have (10)"), "{e}");
    bg.kill("bg-1", Killer::User).await.unwrap();
    assert!(bg.admit().is_ok());
}

#[tokio::test]
async fn endless_output_keeps_memory_bounded() {
    let bg = Background::default();
    let t = start(&bg, "head -c 50000000 /dev/zero | tr '\\0' x; echo; echo END").await;
    until_ended(&t).await;
    assert!(t.total() > 50_000_000);
    let (_, text, _) = t.check();
    assert!(text.len() < 100_000, "{}", text.len());
    assert!(text.contains("bytes elided") && text.trim_end().ends_with("END"));
}
