//! `stepwise run --plan-first TASK` on a pseudo-terminal: the model plans read-only, the plan is shown and
//! waits; a comment is one more planning round; `y` starts the run that acts; `n` leaves everything as it was.

use std::process::Child;
use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::pty::Pty;
use stepwise_tests::sent::last_user_texts;
use stepwise_tests::terminal::{exit_code, Stepwise};
use stepwise_tests::TempDir;

const T: Duration = Duration::from_secs(20);
const ASK: &str = "[y]es / [n]o / [e]dit / [c]omment / [f]resh context: ";

fn run_plan_first(ws: &TempDir, mock: &MockModel, task: &str) -> (Pty, Child) {
    Stepwise::with_model(mock)
        .env("NO_COLOR", "1")
        .args(["run", "--plan-first", "--yes"])
        .workspace(ws)
        .arg(task)
        .on_pty(T)
}

fn item(id: &str, text: &str) -> Value {
    json!({"id": id, "text": text, "status": "pending"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_first_shows_the_plan_takes_a_comment_and_acts_only_once_approved() {
    let mock = MockModel::start(vec![
        // Even with --yes, a write while planning is refused.
        Step::tool("write_file", json!({"path": "a.txt", "content": "too early"})),
        Step::tool("todo", json!({"items": [item("1", "Write a.txt")]})),
        Step::text("Plan ready."),
        Step::tool("todo", json!({"items": [item("1", "Write a.txt"), item("2", "Say so")]})),
        Step::text("Revised."),
        Step::tool("write_file", json!({"path": "a.txt", "content": "done"})),
        Step::text("Wrote it."),
    ])
    .await;
    let ws = TempDir::new("pty-plan-first");
    ws.write("a.txt", "before");
    let (mut pty, child) = run_plan_first(&ws, &mock, "write a.txt");

    let shown = pty.expect(ASK);
    assert!(shown.contains("Error: plan mode: write_file"), "{shown}");
    assert!(shown.contains("[ ] #1: Write a.txt"), "the plan is shown: {shown}");
    assert_eq!(ws.read("a.txt"), "before");
    pty.type_line("c");
    pty.expect("Comment (start with #ID to comment on one step): ");
    pty.type_line("#1 and then say so");
    let shown = pty.expect(ASK);
    assert!(shown.contains("[ ] #2: Say so"), "{shown}");
    assert_eq!(ws.read("a.txt"), "before", "nothing changes while planning");
    pty.type_line("y");
    pty.expect("Wrote it.");
    assert_eq!(exit_code(child, T), 0);
    assert_eq!(ws.read("a.txt"), "done");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 7);
    assert_eq!(
        last_user_texts(&reqs[3].body),
        ["<plan-comments>The user commented on your plan. Revise it with the planning tool, then end your turn; you are still planning.\nOn #1 (Write a.txt): and then say so\n</plan-comments>"]
    );
    let approval = &last_user_texts(&reqs[5].body)[0];
    assert!(approval.starts_with("<plan-approved>") && approval.contains("[>] #1: Write a.txt"), "{approval}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_plan_changes_nothing_and_runs_nothing_more() {
    let mock = MockModel::start(vec![
        Step::tool("bash", json!({"command": "echo x > made.txt"})),
        Step::tool("todo", json!({"items": [item("1", "Make made.txt")]})),
        Step::text("Plan ready."),
    ])
    .await;
    let ws = TempDir::new("pty-plan-first-no");
    let (mut pty, child) = run_plan_first(&ws, &mock, "make a file");
    let shown = pty.expect(ASK);
    // Plan mode runs the shell read-only in the sandbox: the write is stopped there, nothing asked.
    assert!(shown.contains("stopped by the sandbox (it stopped a write to "), "{shown}");
    pty.type_line("n");
    pty.expect("the plan was not approved; nothing changed");
    assert_eq!(exit_code(child, T), 0);
    assert!(!ws.join("made.txt").exists());
    assert_eq!(std::fs::read_dir(ws.path()).unwrap().count(), 0, "the workspace is as it was");
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_plan_first_then_plan_approve_fresh() {
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [item("1", "Write a.txt")]})),
        Step::text("Plan ready."),
        Step::tool("write_file", json!({"path": "a.txt", "content": "done"})),
        Step::text("Wrote it."),
    ])
    .await;
    let ws = TempDir::new("pty-chat-plan-first");
    let (mut pty, child) =
        Stepwise::with_model(&mock).env("NO_COLOR", "1").args(["chat", "--yes"]).workspace(&ws).on_pty(T);
    pty.type_line("/plan approve");
    pty.expect("no plan waits for approval");
    pty.type_line("/plan first");
    pty.expect("plan first: on");
    pty.type_line("write a.txt");
    let shown = pty.expect("(the plan waits: /plan approve");
    assert!(shown.contains("[ ] #1: Write a.txt"), "{shown}");
    assert!(!ws.join("a.txt").exists());
    pty.type_line("/plan approve fresh");
    pty.expect("Wrote it.");
    assert_eq!(ws.read("a.txt"), "done");
    pty.type_line("q");
    assert_eq!(exit_code(child, T), 0);
    let reqs = mock.requests();
    let fresh = &reqs[2].body;
    assert_eq!(fresh["messages"].as_array().unwrap().len(), 1, "a fresh context");
    assert!(last_user_texts(fresh)[0].starts_with("write a.txt\n\n<plan-approved>"));
}
