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
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("approval", json!("auto"))
        .ignore(&TRANSCRIPT)
        .start()
        .await;
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
            k("tool", "1 items"),
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
