//! Documented sidecar behaviour around the run: the `approval` and `approvalTimeoutSecs` settings, folders
//! added and removed while the server runs, and a document closed with unsaved text.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(10);
const DENIED: &str = "Error: Command denied by the user";

fn asked(ed: &TestEditor) -> usize {
    ed.transcript()
        .iter()
        .filter(|m| matches!(m, Incoming::Request { method, .. } if method == "window/showMessageRequest"))
        .count()
}

/// One shell command under the given approval settings: it is refused, never run, and the run goes on.
/// Returns how many times the editor was asked, and the run's statuses.
async fn one_refused_command(tag: &str, setup: impl FnOnce(EditorBuilder) -> EditorBuilder) -> (usize, Vec<Value>) {
    let (dir, state) = folder_and_state(tag);
    let mock = MockModel::start(vec![Step::tool("bash", json!({"command": "touch ran"})), Step::text("done")]).await;
    let ed = setup(editor(ClientPreset::VsCode, &dir, &state, &mock)).ignore(&TRANSCRIPT).start().await;
    let log = ed.run("try a command").await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(log.results(), vec![("bash".to_string(), DENIED.to_string(), true)]);
    assert!(!dir.path().join("ran").exists());
    let asked = asked(&ed);
    ed.finish().await;
    (asked, log.statuses().iter().map(|s| s["state"].clone()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_approval_deny_refuses_without_asking() {
    let (asked, _) = one_refused_command("approval-deny", |e| e.option("approval", json!("deny"))).await;
    assert_eq!(asked, 0, "`deny` does not ask");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_unanswered_approval_is_a_denial_after_the_timeout() {
    let (asked, states) = one_refused_command("approval-timeout", |e| {
        e.option("approvalTimeoutSecs", json!(1)).policy("window/showMessageRequest", Policy::NeverAnswer)
    })
    .await;
    assert_eq!(asked, 1);
    assert_eq!(states, vec![json!("running"), json!("waiting"), json!("running"), json!("idle")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_folders_added_and_removed_while_running() {
    let (a, state) = folder_and_state("folders-a");
    let b = stepwise_tests::TempDir::new("folders-b");
    let mock = MockModel::start(vec![Step::Hang, Step::text("B done")]).await;
    let ed = editor(ClientPreset::VsCode, &a, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let uri_a = ed.folder_uri(0);
    let uri_b = ed.uri(b.path());

    // A run in A hangs on the model; A is removed: its run is cancelled and A is gone.
    let run_a = ed.start_run(&uri_a, "work in A").await;
    mock.wait_for_requests(1, T).await;
    eventually("the mock to take its hang step", T, || mock.remaining() == 1).await;
    ed.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({"event": {"added": [{"uri": uri_b, "name": "b"}], "removed": [{"uri": uri_a, "name": "a"}]}}),
    );
    let log = ed.await_run(&uri_a, &run_a, T).await;
    assert_eq!(log.reason(), "cancelled");
    let e = ed.execute("stepwise.run", json!({"prompt": "again", "workspace": uri_a})).await.unwrap_err();
    assert!(e.message.contains("unknown workspace folder"), "{e}");

    // B works, and is the first folder now.
    let run_b = ed.start_run(&uri_b, "work in B").await;
    let log = ed.await_run(&uri_b, &run_b, T).await;
    assert_eq!((log.reason().as_str(), log.text().as_str()), ("end_turn", "B done"));
    let reqs = mock.wait_for_requests(2, T).await;
    let system = reqs[1].body["system"].to_string();
    assert!(system.contains(b.path().canonicalize().unwrap().to_str().unwrap()), "B's run works in B: {system}");
    let plan = ed.execute("stepwise.plan", json!({})).await.unwrap();
    assert_eq!(plan["workspace"], uri_b);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_closed_document_is_read_from_disk_again() {
    let (dir, state) = folder_and_state("did-close");
    std::fs::write(dir.path().join("note.txt"), "on disk\n").unwrap();
    let read = || Step::tool("read_file", json!({"path": "note.txt"}));
    let mock = MockModel::start(vec![read(), Step::text("one"), read(), Step::text("two")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let uri = ed.open(dir.path().join("note.txt"), "on disk\n");
    ed.change_full(&uri, "in the buffer, unsaved\n");
    let log = ed.run("read it").await;
    assert_eq!(log.results()[0].1, "in the buffer, unsaved");
    // Closed without saving: the buffer's text is gone, the disk is the truth again.
    ed.close(&uri);
    let log = ed.run("read it again").await;
    assert_eq!(log.results()[0].1, "on disk");
    ed.finish().await;
}
