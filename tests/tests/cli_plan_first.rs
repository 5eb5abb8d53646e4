//! `stepwise run --plan-first TASK` on a pseudo-terminal: the model plans read-only, the plan is shown and
//! waits; a comment is one more planning round; `y` starts the run that acts; `n` leaves everything as it was.

use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::stepwise_binary;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::pty::Pty;
use stepwise_tests::TempDir;

const T: Duration = Duration::from_secs(20);
const ASK: &str = "[y]es / [n]o / [e]dit / [c]omment / [f]resh context: ";

fn run_plan_first(ws: &TempDir, mock: &MockModel, pty_end: &OwnedFd, task: &str) -> Child {
    let end = || Stdio::from(pty_end.try_clone().unwrap());
    Command::new(stepwise_binary(false))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "k")
        .env("MODEL_ID", "m")
        .env("NO_COLOR", "1")
        .args(["run", "--plan-first", "--yes", "--workspace"])
        .arg(ws.path())
        .arg(task)
        .stdin(end())
        .stdout(end())
        .stderr(end())
        .spawn()
        .unwrap()
}

fn item(id: &str, text: &str) -> Value {
    json!({"id": id, "text": text, "status": "pending"})
}

/// The text blocks of a request's last user turn.
fn last_user_texts(body: &Value) -> Vec<String> {
    let last = body["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "user").unwrap().clone();
    match &last["content"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(c) => c.iter().filter_map(|b| b["text"].as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    }
}

/// Its exit code, waited for on a thread of its own (bounded).
fn wait_exit(mut child: Child) -> i32 {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait().map(|s| s.code().unwrap_or(-1))));
    rx.recv_timeout(T).expect("stepwise did not exit").unwrap()
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
    let (mut pty, end) = Pty::open(T);
    let child = run_plan_first(&ws, &mock, &end, "write a.txt");
    drop(end);

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
    assert_eq!(wait_exit(child), 0);
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
    let (mut pty, end) = Pty::open(T);
    let child = run_plan_first(&ws, &mock, &end, "make a file");
    drop(end);
    let shown = pty.expect(ASK);
    // Plan mode runs the shell read-only in the sandbox: the write is stopped there, nothing asked.
    assert!(shown.contains("stopped by the sandbox (read-only"), "{shown}");
    pty.type_line("n");
    pty.expect("the plan was not approved; nothing changed");
    assert_eq!(wait_exit(child), 0);
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
    let (mut pty, end) = Pty::open(T);
    let pty_end = || Stdio::from(end.try_clone().unwrap());
    let child = Command::new(stepwise_binary(false))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "k")
        .env("MODEL_ID", "m")
        .env("NO_COLOR", "1")
        .args(["chat", "--yes", "--workspace"])
        .arg(ws.path())
        .stdin(pty_end())
        .stdout(pty_end())
        .stderr(pty_end())
        .spawn()
        .unwrap();
    drop(end);
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
    assert_eq!(wait_exit(child), 0);
    let reqs = mock.requests();
    let fresh = &reqs[2].body;
    assert_eq!(fresh["messages"].as_array().unwrap().len(), 1, "a fresh context");
    assert!(last_user_texts(fresh)[0].starts_with("write a.txt\n\n<plan-approved>"));
}
