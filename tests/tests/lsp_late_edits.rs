//! Editors that report the agent's edits late or never (issue: "edits are lost when an editor confirms
//! late"): once the editor says `applied: true`, the server's copy has the edit; the report, when it
//! comes, is not applied twice; the text written before a shell command has every applied edit; lenses
//! follow the user's typing.

use std::time::Duration;

use serde_json::json;
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(30);
const START: &str = "alpha\nbeta\ngamma\n";
const DONE: &str = "ALPHA\nBETA\nGAMMA\n";

fn edit(old: &str, new: &str) -> Step {
    Step::tool("edit_file", json!({"path": "notes.txt", "old_text": old, "new_text": new}))
}

/// Two edits in a row, a shell command that must see both on disk, a third edit, a read.
fn script() -> Vec<Step> {
    vec![
        edit("alpha", "ALPHA"),
        edit("beta", "BETA"),
        Step::tool("bash", json!({"command": "cat notes.txt"})),
        edit("gamma", "GAMMA"),
        Step::tool("read_file", json!({"path": "notes.txt"})),
        Step::text("done"),
        Step::tool("read_file", json!({"path": "notes.txt"})),
        Step::text("read again"),
    ]
}

async fn late_or_never(report: Report, tag: &str) {
    let (dir, state) = folder_and_state(tag);
    std::fs::write(dir.path().join("notes.txt"), START).unwrap();
    let mock = MockModel::start(script()).await;
    // Neovim's capabilities: no `stepwise/saveDocuments`, so the server writes the buffer itself.
    let ed = auto_editor(ClientPreset::Neovim, &dir, &state, &mock).report_edits(report).timeout(T).start().await;
    let uri = ed.open(dir.path().join("notes.txt"), START);
    let log = ed.run("shout the words").await;
    assert_eq!(log.reason(), "end_turn");
    let results = log.results();
    assert!(results.iter().all(|r| !r.2), "{results:?}");
    assert_eq!(results[2].1, "ALPHA\nBETA\ngamma", "the command saw both edits on disk");
    assert_eq!(results[4].1, DONE.trim_end(), "the read has every applied edit");
    assert_eq!(ed.text(&uri).unwrap(), DONE, "the editor's buffer");

    if report != Report::Never {
        // The late reports arrive now; they are recognised, not applied twice.
        eventually("the late reports", T, || ed.late_reports_sent() == 3).await;
    }
    // The user types a line at the top: the server's copy follows, whatever it heard before.
    // (An editor that never reports its edits still reports the user's typing: the server puts its
    // pending edits back on top of that.)
    ed.change_incremental(&uri, (0, 0), (0, 0), "# notes\n");
    let log = ed.run("read it again").await;
    assert_eq!(log.results()[0].1, format!("# notes\n{}", DONE.trim_end()));
    assert_eq!(ed.text(&uri).unwrap(), format!("# notes\n{DONE}"));
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_editor_reporting_edits_4s_late_loses_nothing() {
    late_or_never(Report::After(Duration::from_secs(4)), "late-4s").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_editor_that_never_reports_its_edits_loses_nothing() {
    late_or_never(Report::Never, "never-reported").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_edit_lenses_follow_typing_and_go_with_their_lines() {
    let (dir, state) = folder_and_state("lens-follow");
    std::fs::write(dir.path().join("notes.txt"), START).unwrap();
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [{"id": "1", "text": "Shout", "status": "in_progress"}]})),
        edit("gamma", "GAMMA"),
        Step::text("done"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let uri = ed.open(dir.path().join("notes.txt"), START);
    assert_eq!(ed.run("shout").await.reason(), "end_turn");
    let marks = |lenses: Vec<(u32, String)>| -> Vec<u32> {
        lenses.into_iter().filter(|(_, t)| t.starts_with("✎")).map(|(l, _)| l).collect()
    };
    assert_eq!(marks(ed.lens_titles(&uri).await), vec![2]);
    // Two lines typed above the edit: its lens moves down with it.
    ed.change_incremental(&uri, (0, 0), (0, 0), "one\ntwo\n");
    assert_eq!(marks(ed.lens_titles(&uri).await), vec![4]);
    // A line deleted above: up again.
    ed.change_incremental(&uri, (0, 0), (1, 0), "");
    assert_eq!(marks(ed.lens_titles(&uri).await), vec![3]);
    // Typing below the edit moves nothing.
    ed.change_incremental(&uri, (4, 0), (4, 0), "tail\n");
    assert_eq!(marks(ed.lens_titles(&uri).await), vec![3]);
    // The edited line deleted: its lens goes.
    ed.change_incremental(&uri, (3, 0), (4, 0), "");
    assert_eq!(marks(ed.lens_titles(&uri).await), Vec::<u32>::new());
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_edit_answered_after_a_cancel_is_still_recorded() {
    let (dir, state) = folder_and_state("cancel-edit");
    std::fs::write(dir.path().join("notes.txt"), START).unwrap();
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [{"id": "1", "text": "Shout", "status": "in_progress"}]})),
        edit("beta", "BETA"),
        Step::tool("bash", json!({"command": "cat notes.txt"})),
        Step::text("checked"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock)
        .policy("workspace/applyEdit", Policy::Queue)
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let uri = ed.open(dir.path().join("notes.txt"), START);
    let run = ed.start_run(&ws, "shout").await;
    // The edit is out; the user cancels before the editor answers.
    let (id, params) = ed.await_request("workspace/applyEdit", T).await;
    assert_eq!(ed.execute("stepwise.cancel", json!({})).await, Ok(serde_json::Value::Null));
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "cancelled");
    // The editor applies it after all: the server records it (lens, unsaved set, its copy).
    ed.accept_edit(&id, &params);
    // Recorded when the answer arrives: the edit's lens shows (asked until it does; a refresh the plan
    // asked for earlier could be mistaken for the edit's).
    let deadline = std::time::Instant::now() + T;
    loop {
        let lenses = ed.lens_titles(&uri).await;
        if lenses.iter().any(|(l, t)| *l == 1 && t.starts_with("✎")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the edit's lens never showed: {lenses:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The next command sees the edit on disk: the editor was asked to save the document.
    let log = ed.run("check").await;
    assert_eq!(log.results().last().unwrap().1, "alpha\nBETA\ngamma");
    let saves = ed.handled("stepwise/saveDocuments");
    assert_eq!(saves.len(), 1);
    assert_eq!(saves[0].params["uris"], json!([uri]));
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_edit_answered_after_its_file_was_opened_is_read_and_saved() {
    let (dir, state) = folder_and_state("opened-meanwhile");
    std::fs::write(dir.path().join("notes.txt"), START).unwrap();
    let mock = MockModel::start(vec![
        edit("beta", "BETA"),
        Step::tool("read_file", json!({"path": "notes.txt"})),
        Step::tool("bash", json!({"command": "cat notes.txt"})),
        Step::text("checked"),
    ])
    .await;
    // An editor that opens the file to apply the edit (VS Code does), reports the opening with the text
    // from disk, and never reports the edit itself.
    let ed = auto_editor(ClientPreset::Neovim, &dir, &state, &mock)
        .report_edits(Report::Never)
        .policy("workspace/applyEdit", Policy::Queue)
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "shout").await;
    let (id, params) = ed.await_request("workspace/applyEdit", T).await;
    let uri = ed.open(dir.path().join("notes.txt"), START);
    // A round trip after didOpen: the server has the opening before the answer (an answer is not
    // ordered with notifications).
    ed.code_lens(&uri).await;
    ed.accept_edit(&id, &params);
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    let results = log.results();
    assert_eq!(results[1].1, "alpha\nBETA\ngamma", "the read has the edit the opened document took");
    assert_eq!(results[2].1, "alpha\nBETA\ngamma", "the command saw it on disk");
    assert_eq!(ed.text(&uri).unwrap(), "alpha\nBETA\ngamma\n", "applied once in the editor");
    ed.finish().await;
}
