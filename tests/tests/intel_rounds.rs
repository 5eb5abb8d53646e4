//! What counts as a round's changes for the `<diagnostics>` block, through the real binary and a fake
//! server (tests/intel/lines_server.py: an error on each line containing BAD): files a background task
//! changed, a new file a shell command made where no checkpoints follow the commands (`stepwise run`), a
//! file the server reports for the first time after the change (not claimed as new errors), and the
//! "before" of a file a shell command changed that no server was ever fed, taken from the checkpoints
//! (and said as not compared when the server does not check it in time).

mod common;

use common::call;
use serde_json::json;
use stepwise_tests::intel::{block_lines, diagnostics_block, show, user_texts, Env};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_a_background_task_changed_counts_as_the_rounds_change() {
    let ws = TempDir::new("intel-bg");
    ws.write("m.py", "x = 1\n");
    let mock = MockModel::start(vec![
        // The task writes b.py and stays running (it ends with the session).
        call("background_run", json!({"command": "printf 'y = BAD\\n' > b.py; exec sleep 300"})),
        // Waits for the task's write (an event, not a time).
        call("bash", json!({"command": "while [ ! -s b.py ]; do sleep 0.02; done"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    e.fake_server("lines", "lines_server.py", &[]);
    // `chat` keeps checkpoints: their look at what the task changed is what feeds the server.
    let o = e.chat(&mock, &ws, b"work\n").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let want = "b.py:1:1: error: bad line (fake)";
    // Seen at the end of round 1 (the task had written) or when round 2's command began: told once.
    let told: Vec<usize> = (1..=2)
        .filter(|n| diagnostics_block(&mock, *n).is_some_and(|b| block_lines(&b).iter().any(|l| l == want)))
        .collect();
    assert_eq!(told.len(), 1, "{:?} {:?}\n{}", user_texts(&mock, 1), user_texts(&mock, 2), show(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_file_a_shell_command_made_reaches_the_server_in_a_one_shot_run() {
    let ws = TempDir::new("intel-new-file");
    ws.write("m.py", "x = 1\n");
    let probe = ws.join("m.py");
    if std::fs::metadata(&probe).and_then(|m| m.created()).is_err() {
        // Without birth times a made file cannot be told from a changed one: its errors are not claimed.
        eprintln!("cannot be tried here: this file system keeps no birth times");
        return;
    }
    let mock = MockModel::start(vec![
        call("bash", json!({"command": "mkdir -p pkg && printf 'ok = 1\\nz = BAD\\n' > pkg/n.py"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    e.fake_server("lines", "lines_server.py", &[]);
    let o = e.run(&mock, &ws, &[], "work").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a block after the command\n{}", show(&o)));
    assert_eq!(block_lines(&block), ["pkg/n.py:2:1: error: bad line (fake)"], "{block}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_of_a_file_first_reported_after_the_change_are_not_claimed_as_new() {
    let ws = TempDir::new("intel-affected");
    ws.write("m.py", "x = 1\n");
    ws.write("other.py", "q = 1\n");
    let mock = MockModel::start(vec![
        // The change makes the server report other.py, never reported before, with an old error.
        call("write_file", json!({"path": "m.py", "content": "x = 1  # AFFECT\ny = BAD\n"})),
        // A second change: other.py was reported before this round; its error is not new.
        call("write_file", json!({"path": "m.py", "content": "x = 2  # AFFECT\n"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    e.fake_server("lines", "lines_server.py", &[]);
    let o = e.run(&mock, &ws, &[], "work").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a block after round 1\n{}", show(&o)));
    assert_eq!(
        block_lines(&block),
        [
            "m.py:2:1: error: bad line (fake)",
            "(not compared with before: the errors below are in files the round did not change, first reported after it)",
            "other.py:1:1: error: old error in other (fake)",
        ],
        "{block}"
    );
    assert_eq!(diagnostics_block(&mock, 2), None, "{:?}\n{}", user_texts(&mock, 2), show(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_commands_new_error_in_a_file_never_opened_is_told_as_new_and_the_old_one_is_not() {
    let ws = TempDir::new("intel-sed");
    // An error already there (line 1); the server has never been fed this file.
    ws.write("m.py", "a = BAD\nb = 1\n");
    let mock = MockModel::start(vec![
        // A shell command adds a second error (line 2): the checkpoints hold the text from before it.
        call("bash", json!({"command": "sed -i 's/b = 1/b = BAD/' m.py"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    e.fake_server("lines", "lines_server.py", &[]);
    // `chat` keeps checkpoints.
    let o = e.chat(&mock, &ws, b"work\n").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(std::fs::read_to_string(ws.join("m.py")).unwrap(), "a = BAD\nb = BAD\n");
    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a block after the command\n{}", show(&o)));
    // The new error, as new; the old one (line 1) neither as new nor as "not compared".
    assert_eq!(block_lines(&block), ["m.py:2:1: error: bad line (fake)"], "{block}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_whose_text_from_before_the_server_does_not_check_in_time_is_not_compared() {
    let ws = TempDir::new("intel-sed-late");
    ws.write("m.py", "a = BAD\nb = 1\n");
    let mock =
        MockModel::start(vec![call("bash", json!({"command": "sed -i 's/b = 1/b = BAD/' m.py"})), Step::text("done")])
            .await;
    let e = Env::new(None);
    // It never checks what a document is opened with (the text from before): only the change.
    e.fake_server("lines", "lines_server.py", &["--skip-open"]);
    let o = e.chat_with(&mock, &ws, &[("STEPWISE_DIAGNOSTICS_WAIT_MS", "4000")], b"work\n").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a block after the command\n{}", show(&o)));
    // Neither error claimed as new: each listed under the line that says they were not compared.
    assert_eq!(
        block_lines(&block),
        [
            "(not compared with before: the errors below are in files the round changed whose errors before it are not known)",
            "m.py:1:1: error: bad line (fake)",
            "m.py:2:1: error: bad line (fake)",
        ],
        "{block}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_file_a_file_tool_wrote_has_all_its_errors_new() {
    let ws = TempDir::new("intel-new-by-tool");
    // A Python file already there: the server serves this workspace.
    ws.write("m.py", "x = 1\n");
    let mock = MockModel::start(vec![
        call("write_file", json!({"path": "n.py", "content": "ok = 1\nz = BAD\n"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    e.fake_server("lines", "lines_server.py", &[]);
    // The server never saw a text from before: there was none, so nothing was there to compare with.
    let o = e.run(&mock, &ws, &[], "work").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a block after the write\n{}", show(&o)));
    assert_eq!(block_lines(&block), ["n.py:2:1: error: bad line (fake)"], "{block}");
}

/// The look before the first request searches `PATH` only for the servers of the languages the workspace
/// has (issue 39); a well-known server of another language is looked up when the agent first writes a
/// file of it. Here the `gopls` on `PATH` (the fake server) becomes executable only during the run, so
/// only a look-up at the Go file's first write finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_well_known_server_of_a_language_new_to_the_workspace_is_looked_up_at_its_first_file() {
    let ws = TempDir::new("intel-new-language");
    ws.write("m.py", "x = 1\n");
    let script = stepwise_tests::intel::scripts().join("lines_server.py");
    ws.write(".bin/gopls", &format!("#!/bin/sh\nexec python3 '{}'\n", script.display()));
    let mock = MockModel::start(vec![
        call("bash", json!({"command": "chmod +x .bin/gopls"})),
        call("write_file", json!({"path": "main.go", "content": "package BAD\n"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(Some(&ws.join(".bin")));
    e.fake_server("lines", "lines_server.py", &[]);
    let o = e.run(&mock, &ws, &[], "work").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let block = diagnostics_block(&mock, 2).unwrap_or_default();
    assert_eq!(block_lines(&block), ["main.go:1:1: error: bad line (fake)"], "{}", show(&o));
}
