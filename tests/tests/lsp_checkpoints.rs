//! Checkpoints over LSP (issue 20): `stepwise/checkpoint` before every round, `stepwise.checkpoints`,
//! `stepwise.rewind` putting an open document back through `workspace/applyEdit` and the rest on disk,
//! refused while a run goes on, and the conversation the next run continues; no run starts while a
//! rewind waits on the editor; a file the user saves while a command runs is not taken for the command's.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_checkpoints_are_listed_and_a_rewind_puts_back_buffers_files_and_the_conversation() {
    let (dir, state) = folder_and_state("cp-lsp");
    dir.write("a.txt", "one\n");
    dir.write("sub/b.txt", "bee\n");
    let mock = MockModel::start(vec![
        Step::tool("edit_file", json!({"path": "a.txt", "old_text": "one", "new_text": "two"})),
        Step::tool("bash", json!({"command": "echo changed > sub/b.txt && mkdir -p gen && echo new > gen/c.txt"})),
        Step::text("Done."),
        // The second run hangs in its request: a rewind meanwhile is refused.
        Step::Hang,
        // The third run, after the rewind.
        Step::text("Again."),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let a = ed.open("a.txt", "one\n");

    let run = ed.start_run(&ws, "change things").await;
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    let taken = log.of("stepwise/checkpoint");
    let rounds: Vec<(Value, Value, Value)> =
        taken.iter().map(|c| (c["id"].clone(), c["round"].clone(), c["runId"].clone())).collect();
    assert_eq!(
        rounds,
        vec![
            (json!("1"), json!(1), json!(run)),
            (json!("2"), json!(2), json!(run)),
            (json!("3"), json!(3), json!(run))
        ]
    );
    assert!(taken.iter().all(|c| c["workspace"] == ws.as_str()));
    assert_eq!(ed.text(&a).as_deref(), Some("two\n"));

    let listed = ed.execute("stepwise.checkpoints", json!({"workspace": ws})).await.unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(3), "{listed}");
    assert_eq!(listed[0]["files"], json!(["a.txt", "gen/c.txt", "sub/b.txt"]));
    assert_eq!(listed[0]["prompt"], "change things");
    assert_eq!(listed[1]["files"], json!(["gen/c.txt", "sub/b.txt"]));
    assert_eq!(listed[2]["files"], json!([]));

    // Refused while a run goes on; nothing changes.
    let hanging = ed.start_run(&ws, "hang").await;
    mock.wait_for_requests(4, T).await;
    let refused = ed.execute("stepwise.rewind", json!({"workspace": ws, "checkpoint": "1"})).await.unwrap_err();
    assert!(refused.message.contains("a run is in progress"), "{}", refused.message);
    assert_eq!(dir.read("sub/b.txt"), "changed\n");
    ed.execute("stepwise.cancel", json!({"workspace": ws})).await.unwrap();
    ed.await_run(&ws, &hanging, T).await;

    let done = ed.execute("stepwise.rewind", json!({"workspace": ws, "checkpoint": "1"})).await.unwrap();
    assert_eq!(done["files"], json!(["a.txt", "gen/c.txt", "sub/b.txt"]), "{done}");
    assert_eq!((done["conversation"].clone(), done["conflicts"].clone()), (json!(true), json!([])));
    // The open document went back through the editor (undoable there), the rest on disk.
    let edits = ed.handled("workspace/applyEdit");
    assert_eq!(
        edits.last().map(|h| h.params["label"].clone()),
        Some(json!("stepwise: rewind a.txt — rewind to checkpoint 1"))
    );
    assert_eq!(ed.text(&a).as_deref(), Some("one\n"));
    assert_eq!(dir.read("sub/b.txt"), "bee\n");
    assert!(!dir.join("gen").exists());
    let listed = ed.execute("stepwise.checkpoints", json!({})).await.unwrap();
    assert_eq!(listed, json!([]), "checkpoint 1 and later are dropped");

    // The next run continues the conversation as it was before the first run's prompt.
    let again = ed.start_run(&ws, "once more").await;
    ed.await_run(&ws, &again, T).await;
    let reqs = mock.requests();
    let sent = reqs.last().unwrap().body["messages"].to_string();
    assert!(sent.contains("once more") && !sent.contains("change things") && !sent.contains("hang"), "{sent}");

    // A new conversation drops the checkpoints with it.
    let listed = ed.execute("stepwise.checkpoints", json!({})).await.unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    ed.execute("stepwise.reset", json!({})).await.unwrap();
    assert_eq!(ed.await_notification("stepwise/plan").await["items"], json!([]));
    assert_eq!(ed.execute("stepwise.checkpoints", json!({})).await.unwrap(), json!([]));

    let bad = ed.execute("stepwise.rewind", json!({"checkpoint": "1", "restore": "everything"})).await.unwrap_err();
    assert!(bad.message.contains("\"files\""), "{}", bad.message);
    let gone = ed.execute("stepwise.rewind", json!({"checkpoint": "1"})).await.unwrap_err();
    assert!(gone.message.contains("No checkpoint 1"), "{}", gone.message);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_no_run_starts_while_a_rewind_waits_on_the_editor() {
    let (dir, state) = folder_and_state("cp-lsp-hold");
    dir.write("a.txt", "one\n");
    let mock = MockModel::start(vec![
        Step::tool("edit_file", json!({"path": "a.txt", "old_text": "one", "new_text": "two"})),
        Step::text("Done."),
        Step::text("After the rewind."),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let a = ed.open("a.txt", "one\n");
    let run = ed.start_run(&ws, "change a").await;
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");
    assert_eq!(ed.text(&a).as_deref(), Some("two\n"));

    // The rewind's edit of the open document waits for the editor; a run asked for meanwhile is refused
    // (it would find its files put back under it).
    ed.set_policy("workspace/applyEdit", Policy::Queue);
    let rewind = ed.execute("stepwise.rewind", json!({"workspace": ws, "checkpoint": "1"}));
    let meanwhile = async {
        let (id, params) = ed.await_request("workspace/applyEdit", T).await;
        assert!(params["label"].as_str().is_some_and(|l| l.contains("rewind")), "{params}");
        let refused = ed.execute("stepwise.run", json!({"workspace": ws, "prompt": "sneak in"})).await.unwrap_err();
        assert!(refused.message.contains("in progress"), "{}", refused.message);
        ed.respond(&id, json!({"applied": false, "failureReason": "the user closed it"}));
    };
    let (done, ()) = tokio::join!(rewind, meanwhile);
    let done = done.unwrap();
    assert_eq!(done["failed"][0]["path"], "a.txt", "{done}");
    assert_eq!(done["conversation"], true, "{done}");
    assert_eq!(mock.requests().len(), 2, "the refused run sent nothing");

    // The rewind is over: runs start again, from the conversation before the first prompt.
    ed.set_policy("workspace/applyEdit", Policy::ApplyEdits);
    let again = ed.start_run(&ws, "once more").await;
    assert_eq!(ed.await_run(&ws, &again, T).await.reason(), "end_turn");
    let sent = mock.requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("once more") && !sent.contains("change a") && !sent.contains("sneak in"), "{sent}");
    ed.finish().await;
}

fn fifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_file_the_user_saves_while_a_command_runs_is_theirs_not_the_commands() {
    let (dir, state) = folder_and_state("cp-lsp-usersave");
    dir.write("notes.txt", "mine 1\n");
    let pipes = stepwise_tests::TempDir::new("cp-lsp-pipes");
    let (started, go) = (pipes.join("started"), pipes.join("go"));
    fifo(&started);
    fifo(&go);
    let command = format!("echo made > made.txt && echo up > {} && cat {}", started.display(), go.display());
    let mock = MockModel::start(vec![Step::tool("bash", json!({ "command": command })), Step::text("Done.")]).await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let notes = ed.open("notes.txt", "mine 1\n");
    let run = ed.start_run(&ws, "make a file").await;

    // While the command runs, the user edits and saves a file of theirs.
    let up = tokio::task::spawn_blocking(move || std::fs::read_to_string(started).unwrap());
    assert_eq!(up.await.unwrap(), "up\n");
    ed.change_full(&notes, "mine 2\n");
    ed.save(&notes);
    // A request answered after the didSave: the server has taken it in.
    ed.execute("stepwise.plan", json!({"workspace": ws})).await.unwrap();
    tokio::task::spawn_blocking(move || std::fs::write(go, "go\n")).await.unwrap().unwrap();
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");

    let listed = ed.execute("stepwise.checkpoints", json!({"workspace": ws})).await.unwrap();
    assert_eq!(listed[0]["files"], json!(["made.txt"]), "the user's save is not the command's: {listed}");
    let done = ed.execute("stepwise.rewind", json!({"workspace": ws, "checkpoint": "1"})).await.unwrap();
    assert_eq!(done["files"], json!(["made.txt"]), "{done}");
    assert!(!dir.join("made.txt").exists());
    assert_eq!(dir.read("notes.txt"), "mine 2\n", "the rewind left the user's save alone");
    assert_eq!(ed.text(&notes).as_deref(), Some("mine 2\n"));
    assert_eq!(ed.await_notification("stepwise/plan").await["by"], "user", "the plan as it was, announced");
    assert_eq!(ed.await_notification("stepwise/review").await["pending"], json!([]), "nothing left to review");
    ed.finish().await;
}

/// A FIFO named `.gitignore` (a hostile workspace) is not opened: the checkpoint's scan, which reads the
/// workspace's ignore files, waited on it for ever, and the run with it.
#[test]
fn lsp_a_fifo_named_gitignore_does_not_hold_up_a_run() {
    let (dir, state) = folder_and_state("cp-lsp-fifo-ignore");
    dir.write("notes.txt", "one\n");
    fifo(&dir.join(".gitignore"));
    // The session on a runtime of its own: a server stuck on the FIFO blocks the threads it runs on, and
    // this thread still sees the time run out.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let listed = rt.block_on(async {
            let bash = Step::tool("bash", json!({"command": "echo made > made.txt"}));
            let mock = MockModel::start(vec![bash, Step::text("Done.")]).await;
            let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
            let ws = ed.folder_uri(0);
            let run = ed.start_run(&ws, "make a file").await;
            assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");
            let listed = ed.execute("stepwise.checkpoints", json!({"workspace": ws})).await.unwrap();
            ed.finish().await;
            listed
        });
        let _ = tx.send(listed);
    });
    let listed = rx.recv_timeout(Duration::from_secs(60)).expect("the run waited on the FIFO");
    assert_eq!(listed[0]["files"], json!(["made.txt"]), "{listed}");
}
