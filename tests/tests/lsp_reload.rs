//! A window reload (issue 39): the editor starts a new server on the same folder while the old one is
//! still alive (VS Code starts the new extension host; the old server gets `shutdown` / `exit`, or just
//! its pipe closed, and takes a moment to end). The new server must come to the changes that wait for
//! review, as it comes to the conversation, rather than keep the empty store it fell back to while the
//! old one held the checkpoints' lock.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(10);

/// The paths `stepwise.changes` lists.
fn paths(changes: &Value) -> Vec<String> {
    changes["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_string()).collect()
}

/// A first server whose run left a change to `a.txt` waiting for review, and its folder and state.
async fn first_with_pending(tag: &str) -> (TestEditor, TempDir, TempDir, MockModel) {
    let (dir, state) = folder_and_state(tag);
    dir.write("a.txt", "one\n");
    let mock = MockModel::start(vec![
        // On disk (an edit through the editor would wait in its buffer, which the new editor has not opened).
        Step::tool("bash", json!({"command": "printf 'two\\n' > a.txt"})),
        Step::text("Done."),
        // A run of the second server (the last test).
        Step::tool("bash", json!({"command": "printf 'b\\n' > b.txt"})),
        Step::text("Done too."),
    ])
    .await;
    // `stepwise/review` comes when the run is over or later (the second server's is the one looked at).
    let first =
        auto_editor(ClientPreset::VsCode, &dir, &state, &mock).binary().ignore(&["stepwise/review"]).start().await;
    let ws = first.folder_uri(0);
    let run = first.start_run(&ws, "change a").await;
    assert_eq!(first.await_run(&ws, &run, T).await.reason(), "end_turn");
    let changes = first.execute("stepwise.changes", json!({})).await.unwrap();
    assert_eq!(paths(&changes), ["a.txt"], "{changes}");
    (first, dir, state, mock)
}

/// The second server, started while the first still runs, announces the pending change once the first
/// is gone, and `stepwise.changes` lists it; the conversation is there too.
async fn second_comes_to_the_changes(second: &TestEditor) {
    let note = second.try_notification_matching("stepwise/review", |_| true, T).await;
    let note = note.unwrap_or_else(|| panic!("no stepwise/review; the new server's log:\n{}", second.stderr()));
    assert_eq!(note["pending"], json!([{"path": "a.txt", "hunks": 1}]), "{note}");
    let changes = second.execute("stepwise.changes", json!({})).await.unwrap();
    assert_eq!(paths(&changes), ["a.txt"], "{changes}");
    let conv = second.execute("stepwise.conversation", json!({})).await.unwrap();
    assert_eq!(conv["entries"][0]["text"], "change a", "{conv}");
    // Its first look may have come after the handover too (then it said the same).
    for note in second.drain("stepwise/review") {
        assert_eq!(note["pending"], json!([{"path": "a.txt", "hunks": 1}]), "{note}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_after_a_reload_the_new_server_shows_the_changes_once_the_old_one_has_shut_down() {
    let (first, dir, state, mock) = first_with_pending("reload-shutdown").await;
    let second = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).binary().start().await;
    // The old server still holds the store: the new one has not got it yet.
    assert!(first.pid().is_some());
    first.finish().await;
    second_comes_to_the_changes(&second).await;
    second.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_after_a_reload_the_new_server_shows_the_changes_once_the_old_ones_pipe_closed() {
    let (first, dir, state, mock) = first_with_pending("reload-vanish").await;
    let second = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).binary().start().await;
    assert!(first.vanish().await.success());
    second_comes_to_the_changes(&second).await;
    second.finish().await;
}

/// A new server that ran something of its own before the old one let go keeps what it recorded (its changes
/// are the ones to review); the old store is left for a later start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_new_server_that_recorded_checkpoints_meanwhile_keeps_its_own() {
    let (first, dir, state, mock) = first_with_pending("reload-declined").await;
    let second = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).binary().start().await;
    let ws = second.folder_uri(0);
    let run = second.start_run(&ws, "write b").await;
    assert_eq!(second.await_run(&ws, &run, T).await.reason(), "end_turn");
    assert!(first.vanish().await.success());
    eventually("the new server to keep its own checkpoints", T, || {
        second.stderr().contains("recorded checkpoints meanwhile: they stay for this process only")
    })
    .await;
    let changes = second.execute("stepwise.changes", json!({})).await.unwrap();
    assert_eq!(paths(&changes), ["b.txt"], "{changes}");
    assert_eq!(changes["runId"], run.as_str());
    second.ignore(&["stepwise/review"]);
    second.finish().await;
}

/// Changes all kept before the reload are still listed (reviewed) once the store is taken over: the editor is
/// told to look again although nothing waits for review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_after_a_reload_changes_already_reviewed_are_listed_again() {
    let (first, dir, state, mock) = first_with_pending("reload-reviewed").await;
    first.execute("stepwise.review", json!({"path": "a.txt", "action": "keep"})).await.unwrap();
    let second = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).binary().start().await;
    assert!(first.vanish().await.success());
    let note = second.await_notification_timeout("stepwise/review", T).await;
    assert_eq!(note["pending"], json!([]), "{note}");
    let changes = second.execute("stepwise.changes", json!({})).await.unwrap();
    assert_eq!(paths(&changes), ["a.txt"], "{changes}");
    assert_eq!(changes["files"][0]["reviewed"], true, "{changes}");
    second.finish().await;
}
