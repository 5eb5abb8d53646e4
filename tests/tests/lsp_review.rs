//! The conversation and review of changes over LSP (issue 28): `stepwise.conversation` (also after a
//! restart), `stepwise.changes`, `stepwise.review` keep / undo / comment, conflicts, the review state
//! after a restart, the `stepwise/review` notification and the `Keep` / `Undo` code lenses.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step, Turn};

const T: Duration = Duration::from_secs(10);

/// `(kind, text or tool summary)` of each entry.
fn kinds(conv: &Value) -> Vec<(String, String)> {
    conv["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let what = e["text"].as_str().or(e["tool"]["summary"].as_str()).unwrap_or("").to_string();
            (e["kind"].as_str().unwrap().to_string(), what)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_the_conversation_is_shown_as_saved_and_again_after_a_restart() {
    let (dir, state) = folder_and_state("review-conv");
    dir.write("a.txt", "one\n");
    let items = json!([{"id": "1", "text": "Change a", "status": "in_progress"}]);
    let mock = MockModel::start(vec![
        Step::Turn(Turn::text("Planning.").with_tool("todo", json!({ "items": items }))),
        Step::tool("edit_file", json!({"path": "a.txt", "old_text": "one", "new_text": "two"})),
        Step::tool("bash", json!({"command": "exit 3"})),
        Step::text("Done **now**."),
        Step::text("Again."),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "change a").await;
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");

    let conv = ed.execute("stepwise.conversation", json!({"workspace": ws})).await.unwrap();
    assert_eq!(conv["workspace"], ws.as_str());
    let k = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        kinds(&conv),
        [
            k("user", "change a"),
            k("assistant", "Planning."),
            k("tool", "1 item"),
            k("tool", "a.txt"),
            k("tool", "exit 3"),
            k("assistant", "Done **now**."),
        ]
    );
    let entries = conv["entries"].as_array().unwrap();
    assert!(entries.iter().all(|e| e["runId"] == run.as_str()), "{conv}");
    let edit = &entries[3]["tool"];
    assert_eq!(edit["name"], "edit_file");
    assert_eq!(edit["output"], "Edited a.txt");
    assert_eq!((edit["isError"].clone(), edit["step"].clone()), (json!(false), json!("Change a")));
    let bash = &entries[4]["tool"];
    assert_eq!(bash["isError"], true, "{bash}");
    assert!(bash["output"].as_str().unwrap().contains("[exit code: 3]"), "{bash}");

    // The change served the step in progress.
    let changes = ed.execute("stepwise.changes", json!({})).await.unwrap();
    assert_eq!(changes["files"][0]["path"], "a.txt");
    assert_eq!(changes["files"][0]["steps"], json!(["Change a"]), "{changes}");

    // The same prompt again is another run's.
    let second = ed.start_run(&ws, "change a").await;
    assert_eq!(ed.await_run(&ws, &second, T).await.reason(), "end_turn");
    let conv = ed.execute("stepwise.conversation", json!({"workspace": ws})).await.unwrap();
    let tail: Vec<(Value, Value, Value)> = conv["entries"].as_array().unwrap()[6..]
        .iter()
        .map(|e| (e["kind"].clone(), e["text"].clone(), e["runId"].clone()))
        .collect();
    assert_eq!(
        tail,
        [(json!("user"), json!("change a"), json!(second)), (json!("assistant"), json!("Again."), json!(second))]
    );
    assert_eq!(conv["entries"][0]["runId"], run.as_str());
    ed.finish().await;

    // A new server on the same state shows the same conversation.
    let again = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    assert_eq!(again.await_notification("stepwise/plan").await["items"], items);
    let pending = again.await_notification("stepwise/review").await;
    assert_eq!(pending["pending"], json!([{"path": "a.txt", "hunks": 1}]), "{pending}");
    let restored = again.execute("stepwise.conversation", json!({})).await.unwrap();
    assert_eq!(restored, conv);
    again.finish().await;
}

/// The pending set of the latest `stepwise/review` in `notes`.
fn last_pending(notes: &[Value]) -> Value {
    notes.last().map(|n| n["pending"].clone()).unwrap_or(Value::Null)
}

/// The `Keep` / `Undo` lenses of a document: `(line, title, arguments)`.
async fn review_lenses(ed: &TestEditor, uri: &str) -> Vec<(u64, String, Value)> {
    ed.code_lens(uri)
        .await
        .into_iter()
        .filter(|l| l["command"]["command"] == "stepwise.review")
        .map(|l| {
            let line = l["range"]["start"]["line"].as_u64().unwrap();
            (line, l["command"]["title"].as_str().unwrap().to_string(), l["command"]["arguments"][0].clone())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_keep_and_undo_per_hunk_created_and_deleted_files_and_the_lenses() {
    let (dir, state) = folder_and_state("review-hunks");
    let before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    let after = "1\nTWO\n3\n4\nFIVE\n6\n7\nEIGHT\n9\n";
    dir.write("a.txt", before);
    dir.write("gone.txt", "old\ntext\n");
    let mock = MockModel::start(vec![
        Step::tool("write_file", json!({"path": "a.txt", "content": after})),
        Step::tool("bash", json!({"command": "printf 'new\\n' > made.txt && rm gone.txt"})),
        Step::text("Done."),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let a = ed.open("a.txt", before);
    assert!(review_lenses(&ed, &a).await.is_empty(), "nothing to review before the run");
    let run = ed.start_run(&ws, "change things").await;
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(ed.text(&a).as_deref(), Some(after));
    // Announced before the run's end.
    let all3 =
        json!([{"path": "a.txt", "hunks": 3}, {"path": "gone.txt", "hunks": 1}, {"path": "made.txt", "hunks": 1}]);
    assert_eq!(last_pending(&log.of("stepwise/review")), all3);

    let changes = ed.execute("stepwise.changes", json!({"workspace": ws})).await.unwrap();
    assert_eq!(changes["runId"], run.as_str());
    let files = changes["files"].as_array().unwrap();
    let summary: Vec<(Value, Value, Value, Value)> = files
        .iter()
        .map(|f| (f["path"].clone(), f["status"].clone(), f["before"].clone(), f["after"].clone()))
        .collect();
    assert_eq!(
        summary,
        [
            (json!("a.txt"), json!("modified"), json!(before), json!(after)),
            (json!("gone.txt"), json!("deleted"), json!("old\ntext\n"), Value::Null),
            (json!("made.txt"), json!("created"), Value::Null, json!("new\n")),
        ]
    );
    let spans: Vec<(u64, u64)> = files[0]["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["start"].as_u64().unwrap(), h["end"].as_u64().unwrap()))
        .collect();
    assert_eq!(spans, [(1, 2), (4, 5), (7, 8)]);
    assert!(files.iter().all(|f| f["reviewed"] == false));
    // From checkpoint 2 on (the second round's command), a.txt (changed in round 1) is not listed.
    let since = ed.execute("stepwise.changes", json!({"checkpoint": "2"})).await.unwrap();
    let paths: Vec<&str> = since["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["gone.txt", "made.txt"], "{since}");

    // Lenses above each hunk of the open document, whose command is the review itself.
    let lenses = review_lenses(&ed, &a).await;
    let at: Vec<(u64, &str)> = lenses.iter().map(|(l, t, _)| (*l, t.as_str())).collect();
    assert_eq!(at, [(1, "Keep"), (1, "Undo"), (4, "Keep"), (4, "Undo"), (7, "Keep"), (7, "Undo")]);
    assert_eq!(
        lenses[0].2,
        json!({"workspace": ws, "session": "main", "path": "a.txt", "action": "keep", "hunks": [0]})
    );

    // Keep the first hunk through its lens.
    let kept = ed.execute("stepwise.review", lenses[0].2.clone()).await.unwrap();
    assert_eq!(kept, json!({"undone": [], "conflicts": [], "failed": []}));
    let note = ed.await_notification("stepwise/review").await;
    assert_eq!(note["pending"][0], json!({"path": "a.txt", "hunks": 2}), "{note}");
    let at: Vec<u64> = review_lenses(&ed, &a).await.iter().map(|(l, _, _)| *l).collect();
    assert_eq!(at, [4, 4, 7, 7], "the kept hunk's lenses went");

    // Undo the middle hunk through its lens: through the editor, the other two stay.
    let undo = review_lenses(&ed, &a).await.into_iter().find(|(l, t, _)| *l == 4 && t == "Undo").unwrap().2;
    assert_eq!(undo["hunks"], json!([1]));
    let undone = ed.execute("stepwise.review", undo).await.unwrap();
    assert_eq!(undone["undone"], json!(["a.txt"]), "{undone}");
    let label = ed.handled("workspace/applyEdit").last().map(|h| h.params["label"].clone());
    assert_eq!(label, Some(json!("stepwise: undo a.txt — review")));
    assert_eq!(ed.text(&a).as_deref(), Some("1\nTWO\n3\n4\n5\n6\n7\nEIGHT\n9\n"));
    let note = ed.await_notification("stepwise/review").await;
    assert_eq!(note["pending"][0], json!({"path": "a.txt", "hunks": 1}), "{note}");
    let changes = ed.execute("stepwise.changes", json!({})).await.unwrap();
    let hunks = &changes["files"][0]["hunks"];
    assert_eq!(hunks.as_array().map(Vec::len), Some(2), "{hunks}");
    assert_eq!((hunks[0]["reviewed"].clone(), hunks[1]["reviewed"].clone()), (json!(true), json!(false)));

    // A created file undone is removed, a deleted one comes back; on disk (not open).
    let r = ed.execute("stepwise.review", json!({"path": "made.txt", "action": "undo"})).await.unwrap();
    assert_eq!(r["undone"], json!(["made.txt"]));
    assert!(!dir.join("made.txt").exists());
    ed.await_notification("stepwise/review").await;
    let r = ed.execute("stepwise.review", json!({"path": "gone.txt", "action": "undo", "hunks": [0]})).await.unwrap();
    assert_eq!(r["undone"], json!(["gone.txt"]));
    assert_eq!(dir.read("gone.txt"), "old\ntext\n");
    ed.await_notification("stepwise/review").await;

    // The last hunk kept by the whole file: nothing left, no lenses.
    ed.execute("stepwise.review", json!({"path": "a.txt", "action": "keep"})).await.unwrap();
    assert_eq!(ed.await_notification("stepwise/review").await["pending"], json!([]));
    assert!(review_lenses(&ed, &a).await.is_empty());
    let changes = ed.execute("stepwise.changes", json!({})).await.unwrap();
    assert_eq!(changes["files"].as_array().map(Vec::len), Some(1), "{changes}");
    assert_eq!(changes["files"][0]["reviewed"], true);

    // Bad requests are errors that change nothing.
    let e = ed.execute("stepwise.review", json!({"path": "a.txt", "action": "undo", "hunks": [5]})).await.unwrap_err();
    assert!(e.message.contains("no hunk 5"), "{}", e.message);
    let e = ed.execute("stepwise.review", json!({"path": "other.txt", "action": "keep"})).await.unwrap_err();
    assert!(e.message.contains("did not change other.txt"), "{}", e.message);
    let e = ed.execute("stepwise.review", json!({"path": "a.txt", "action": "redo"})).await.unwrap_err();
    assert_eq!(e.code, codes::INVALID_PARAMS, "{}", e.message);
    let e = ed.execute("stepwise.changes", json!({"runId": "nope"})).await.unwrap_err();
    assert!(e.message.contains("No run nope"), "{}", e.message);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_conflict_is_left_alone_and_the_review_survives_a_restart() {
    let (dir, state) = folder_and_state("review-conflict");
    dir.write("a.txt", "a1\na2\n");
    dir.write("b.txt", "b1\nb2\n");
    let mock = MockModel::start(vec![
        Step::tool("bash", json!({"command": "printf 'a1\\nA2\\n' > a.txt && printf 'B1\\nb2\\n' > b.txt"})),
        Step::text("Done."),
        Step::Hang,
        Step::text("Noted."),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "change both").await;
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");

    // Someone else changes a.txt after the agent: undoing it is a conflict, and the file stays theirs.
    dir.write("a.txt", "a1\nmine\n");
    let r = ed.execute("stepwise.review", json!({"path": "a.txt", "action": "undo"})).await.unwrap();
    assert_eq!(r, json!({"undone": [], "conflicts": ["a.txt"], "failed": []}));
    assert_eq!(dir.read("a.txt"), "a1\nmine\n");

    // Undo waits for no run: refused while one goes on.
    let hanging = ed.start_run(&ws, "hang").await;
    mock.wait_for_requests(3, T).await;
    let e = ed.execute("stepwise.review", json!({"path": "b.txt", "action": "undo"})).await.unwrap_err();
    assert!(e.message.contains("a run is in progress"), "{}", e.message);
    assert_eq!(dir.read("b.txt"), "B1\nb2\n");
    ed.execute("stepwise.cancel", json!({})).await.unwrap();
    ed.await_run(&ws, &hanging, T).await;

    // Keep b.txt (of the first run: the hanging one changed nothing).
    ed.execute("stepwise.review", json!({"path": "b.txt", "action": "keep", "runId": run})).await.unwrap();
    let note = ed.await_notification("stepwise/review").await;
    assert_eq!(note["pending"], json!([{"path": "a.txt", "hunks": 1}]), "{note}");
    let before_restart = ed.execute("stepwise.changes", json!({})).await.unwrap();
    ed.finish().await;

    let again = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let note = again.await_notification("stepwise/review").await;
    assert_eq!(note["pending"], json!([{"path": "a.txt", "hunks": 1}]), "{note}");
    let after_restart = again.execute("stepwise.changes", json!({})).await.unwrap();
    assert_eq!(after_restart, before_restart);
    let reviewed: Vec<(Value, Value)> =
        after_restart["files"].as_array().unwrap().iter().map(|f| (f["path"].clone(), f["reviewed"].clone())).collect();
    assert_eq!(reviewed, [(json!("a.txt"), json!(false)), (json!("b.txt"), json!(true))]);

    // A comment on a hunk goes to the agent as a steer naming the file and lines (here it starts a run).
    let r = again
        .execute("stepwise.review", json!({"path": "a.txt", "action": "comment", "hunks": [0], "text": "keep mine"}))
        .await
        .unwrap();
    assert_eq!(r["undone"], json!([]));
    let status = again.await_notification_matching("stepwise/status", |s| s["state"] == "idle", T).await;
    assert_eq!(status["reason"], "end_turn");
    let sent = mock.requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("Review comment on a.txt (line 2): keep mine"), "{sent}");
    again.drain("stepwise/status");
    again.drain("stepwise/checkpoint");
    again.drain("stepwise/review");
    again.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_the_conversation_during_a_run_is_as_of_its_latest_round() {
    let (dir, state) = folder_and_state("review-conv-live");
    let mock = MockModel::start(vec![
        Step::tool("write_file", json!({"path": "n.txt", "content": "n\n"})),
        // The second request hangs: the conversation is asked for meanwhile.
        Step::Hang,
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "write n").await;
    mock.wait_for_requests(2, T).await;
    let conv = ed.execute("stepwise.conversation", json!({})).await.unwrap();
    let k = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(kinds(&conv), [k("user", "write n"), k("tool", "n.txt")], "{conv}");
    assert_eq!(conv["entries"][1]["tool"]["output"], "Wrote 2 bytes");
    assert!(conv["entries"].as_array().unwrap().iter().all(|e| e["runId"] == run.as_str()), "{conv}");
    ed.execute("stepwise.cancel", json!({})).await.unwrap();
    ed.await_run(&ws, &run, T).await;
    ed.finish().await;
}
