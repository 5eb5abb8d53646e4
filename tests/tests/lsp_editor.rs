//! The editor's buffers and edits: unsaved text read by the agent, rejected and unanswered edits,
//! bursts of incremental changes, and clients that cannot apply edits or save documents.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_the_agent_reads_the_unsaved_buffer() {
    let (dir, state) = folder_and_state("unsaved");
    dir.write("a.txt", "on disk\n");
    let mock = MockModel::start(vec![Step::tool("read_file", json!({"path": "a.txt"})), Step::text("read it")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let uri = ed.open("a.txt", "opened buffer\n");
    ed.change_full(&uri, "typed, not saved: ünïcödé 😀\nsecond line\n");
    let log = ed.run("read a.txt").await;
    assert_eq!(log.reason(), "end_turn");
    let reqs = mock.wait_for_requests(2, T).await;
    assert_eq!(tool_results(&reqs[1].body), vec![("typed, not saved: ünïcödé 😀\nsecond line".to_string(), false)]);
    assert_eq!(dir.read("a.txt"), "on disk\n");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_rejected_edit_reaches_the_model_and_the_run_goes_on() {
    let (dir, state) = folder_and_state("reject");
    dir.write("a.txt", "alpha\n");
    let mock = MockModel::start(vec![
        Step::tool("edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"})),
        Step::tool("read_file", json!({"path": "a.txt"})),
        Step::text("gave up"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .ignore(&TRANSCRIPT)
        .policy("workspace/applyEdit", Policy::RejectEdits("the file is read-only".into()))
        .start()
        .await;
    let uri = ed.open("a.txt", "alpha\n");
    let log = ed.run("change alpha").await;
    assert_eq!(log.reason(), "end_turn");
    let reqs = mock.wait_for_requests(3, T).await;
    let results = tool_results(&reqs[1].body);
    assert_eq!(results.len(), 1);
    assert!(results[0].1, "an error result: {results:?}");
    assert!(results[0].0.starts_with("Error: "), "{results:?}");
    assert!(results[0].0.contains("the file is read-only"), "{results:?}");
    // Nothing changed, and the model reads the unchanged buffer.
    assert_eq!(tool_results(&reqs[2].body), vec![("alpha".to_string(), false)]);
    assert_eq!(ed.text(&uri).unwrap(), "alpha\n");
    assert_eq!(ed.handled("workspace/applyEdit").len(), 1);
    // No edit lens for an edit that did not happen.
    assert!(ed.lens_titles(&uri).await.iter().all(|(_, t)| !t.starts_with("✎")));
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_unanswered_edit_times_out_while_the_server_keeps_serving() {
    let (dir, state) = folder_and_state("noanswer");
    dir.write("a.txt", "alpha\n");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [{"id": "1", "text": "Edit a", "status": "in_progress"}]})),
        Step::tool("edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"})),
        Step::text("the editor is stuck"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("requestTimeoutSecs", json!(1))
        .ignore(&TRANSCRIPT)
        .policy("workspace/applyEdit", Policy::NeverAnswer)
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let uri = ed.open("a.txt", "alpha\n");
    let run = ed.start_run(&ws, "edit a").await;
    ed.await_handled("workspace/applyEdit", T).await;
    let asked = Instant::now();
    // While the edit is unanswered, lenses are served: the answer comes before the edit gives up.
    let lens_id = ed.send_request("textDocument/codeLens", json!({"textDocument": {"uri": uri}}));
    let lenses = ed.await_response(&lens_id, T).await.unwrap();
    assert_eq!(lenses[0]["command"]["title"], "stepwise 0/1 · Edit a");
    let log = ed.await_run(&ws, &run, T).await;
    assert!(asked.elapsed() >= Duration::from_millis(900), "gave up after {:?}", asked.elapsed());
    let transcript = ed.transcript();
    let lens_at = transcript.iter().position(|m| matches!(m, Incoming::Response { id, .. } if *id == lens_id)).unwrap();
    let gave_up_at = transcript
        .iter()
        .position(|m| {
            matches!(m, Incoming::Notification { method, params }
                if method == "stepwise/toolCall" && params["name"] == "edit_file" && params["phase"] == "finished")
        })
        .unwrap();
    assert!(lens_at < gave_up_at, "the code lens was answered only after the edit timed out");
    assert_eq!(log.reason(), "end_turn");
    let reqs = mock.wait_for_requests(3, T).await;
    let results = tool_results(&reqs[2].body);
    assert_eq!(results.len(), 1);
    assert!(results[0].1);
    assert!(results[0].0.starts_with("Error: ") && results[0].0.contains("did not answer"), "{results:?}");
    assert!(results[0].0.contains("1s"), "{results:?}");
    ed.finish().await;
}

/// A deterministic pseudo-random sequence (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_burst_of_incremental_changes_in_utf8_then_a_read() {
    let (dir, state) = folder_and_state("burst");
    let initial = "fn main() {\n    println!(\"héllo wörld\");\n}\n// 中文 😀 end\n";
    dir.write("src/main.rs", initial);
    let mock =
        MockModel::start(vec![Step::tool("read_file", json!({"path": "src/main.rs"})), Step::text("read")]).await;
    let ed = editor(ClientPreset::Neovim, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    assert_eq!(ed.encoding(), PosEncoding::Utf8);
    assert_eq!(ed.initialize_result()["capabilities"]["positionEncoding"], "utf-8");
    let uri = ed.open("src/main.rs", initial);
    let inserts = ["é", "😀", "中", "x", "\n", "ab", "ü\n😀", ""];
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for i in 0..200 {
        let text = ed.text(&uri).unwrap();
        let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
        let a = bounds[rng.below(bounds.len())];
        // Mostly insertions; some replacements of a few characters.
        let b = if i % 3 == 0 {
            let k = bounds.iter().position(|x| *x == a).unwrap();
            bounds[(k + rng.below(4)).min(bounds.len() - 1)]
        } else {
            a
        };
        let start = position_at(&text, a, PosEncoding::Utf8);
        let end = position_at(&text, b, PosEncoding::Utf8);
        let ins = inserts[rng.below(inserts.len())];
        ed.change_incremental(&uri, start, end, ins);
    }
    assert_eq!(ed.doc(&uri).unwrap().version, 201);
    let expected = ed.text(&uri).unwrap();
    let log = ed.run("read main").await;
    assert_eq!(log.reason(), "end_turn");
    let reqs = mock.wait_for_requests(2, T).await;
    let want = expected.lines().collect::<Vec<_>>().join("\n");
    assert_eq!(tool_results(&reqs[1].body), vec![(want, false)]);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_client_without_apply_edit_gets_changes_on_disk() {
    let (dir, state) = folder_and_state("noapply");
    dir.write("a.txt", "one\ntwo\n");
    let mock = MockModel::start(vec![
        Step::tool("edit_file", json!({"path": "a.txt", "old_text": "two", "new_text": "zwei"})),
        Step::tool("write_file", json!({"path": "sub/b.txt", "content": "new file\n"})),
        Step::tool("read_file", json!({"path": "a.txt"})),
        Step::text("done"),
    ])
    .await;
    let ed = editor(ClientPreset::Bare, &dir, &state, &mock)
        .ignore(&["stepwise/usage", "stepwise/assistantText", "stepwise/toolCall"])
        .start()
        .await;
    let log = ed.run("edit").await;
    assert_eq!(log.reason(), "end_turn");
    assert!(log.progress().is_empty(), "no work-done progress for a client without it");
    assert_eq!(dir.read("a.txt"), "one\nzwei\n");
    assert_eq!(dir.read("sub/b.txt"), "new file\n");
    let reqs = mock.wait_for_requests(4, T).await;
    assert_eq!(tool_results(&reqs[1].body), vec![("Edited a.txt".to_string(), false)]);
    assert_eq!(tool_results(&reqs[3].body), vec![("one\nzwei".to_string(), false)]);
    // The server asked the editor nothing.
    assert!(ed.transcript().iter().all(|m| !matches!(m, Incoming::Request { .. })), "{:?}", ed.transcript());
    ed.finish().await;
}

/// The agent edits a document, then runs `cat` on it: the shell must see the edit. Writes `a.txt`
/// ("alpha") into `dir` and starts the model.
async fn edit_then_cat(dir: &TempDir) -> MockModel {
    dir.write("a.txt", "alpha\n");
    MockModel::start(vec![
        Step::tool("edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"})),
        Step::tool("bash", json!({"command": "cat a.txt"})),
        Step::text("done"),
    ])
    .await
}

/// The `cat` of [`edit_then_cat`] printed the edited text (the tool result of the third request).
async fn assert_cat_saw_the_edit(mock: &MockModel) {
    let reqs = mock.wait_for_requests(3, T).await;
    assert_eq!(tool_results(&reqs[2].body), vec![("beta".to_string(), false)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_without_save_documents_the_server_writes_edited_buffers_before_a_command() {
    let (dir, state) = folder_and_state("nosave");
    let mock = edit_then_cat(&dir).await;
    let ed = auto_editor(ClientPreset::Neovim, &dir, &state, &mock).start().await;
    let uri = ed.open("a.txt", "alpha\n");
    let log = ed.run("edit and show").await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(ed.text(&uri).unwrap(), "beta\n");
    assert_cat_saw_the_edit(&mock).await;
    assert_eq!(dir.read("a.txt"), "beta\n");
    assert!(ed.handled("stepwise/saveDocuments").is_empty());
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_with_save_documents_the_editor_is_asked_to_save() {
    let (dir, state) = folder_and_state("save");
    let mock = edit_then_cat(&dir).await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock)
        .policy("stepwise/saveDocuments", Policy::Queue)
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let uri = ed.open("a.txt", "alpha\n");
    let run = ed.start_run(&ws, "edit and show").await;
    let (id, params) = ed.await_request("stepwise/saveDocuments", T).await;
    assert_eq!(params, json!({"uris": [uri]}));
    // The buffer holds the edit, the disk does not yet: the editor saves it now.
    assert_eq!(ed.text(&uri).unwrap(), "beta\n");
    assert_eq!(dir.read("a.txt"), "alpha\n");
    ed.save(&uri);
    ed.respond(&id, json!({"saved": [uri]}));
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_cat_saw_the_edit(&mock).await;
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_documents_the_editor_did_not_save_are_written_by_the_server() {
    let (dir, state) = folder_and_state("declined");
    let mock = edit_then_cat(&dir).await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock)
        .policy("stepwise/saveDocuments", Policy::Respond(json!({"saved": []})))
        .start()
        .await;
    let uri = ed.open("a.txt", "alpha\n");
    let log = ed.run("edit and show").await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(ed.handled("stepwise/saveDocuments").len(), 1);
    assert_eq!(ed.handled("stepwise/saveDocuments")[0].params, json!({"uris": [uri]}));
    assert_cat_saw_the_edit(&mock).await;
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_edits_in_a_row_wait_for_the_editors_new_version() {
    // Neovim: utf-8 positions, no code lens refresh; the editor answers applyEdit before its didChange.
    let (dir, state) = folder_and_state("in-a-row");
    let initial = "a😀 = 1;\nb = 2;\nc = 3;\n";
    dir.write("v.rs", initial);
    let mock = MockModel::start(vec![
        Step::tool("edit_file", json!({"path": "v.rs", "old_text": "= 1", "new_text": "= 10"})),
        Step::tool("edit_file", json!({"path": "v.rs", "old_text": "b = 2", "new_text": "b = 20"})),
        Step::tool("write_file", json!({"path": "v.rs", "content": "a😀 = 10;\nb = 20;\nc = 30;\n"})),
        Step::tool("read_file", json!({"path": "v.rs"})),
        Step::text("done"),
    ])
    .await;
    let ed =
        editor(ClientPreset::Neovim, &dir, &state, &mock).change_before_reply(false).ignore(&TRANSCRIPT).start().await;
    let uri = ed.open("v.rs", initial);
    let log = ed.run("bump the numbers").await;
    assert_eq!(log.reason(), "end_turn");
    let edits: Vec<Value> =
        ed.handled("workspace/applyEdit").iter().map(|h| h.params["edit"]["documentChanges"][0].clone()).collect();
    assert_eq!(edits.len(), 3);
    let versions: Vec<Value> = edits.iter().map(|e| e["textDocument"]["version"].clone()).collect();
    assert_eq!(versions, vec![json!(1), json!(2), json!(3)]);
    assert!(ed.handled("workspace/applyEdit").iter().all(|h| h.answer == Some(Ok(json!({"applied": true})))));
    // UTF-8 columns: the emoji is four bytes.
    assert_eq!(edits[0]["edits"], json!([{"range": range((0, 6), (0, 9)), "newText": "= 10"}]));
    // write_file sends only the difference: a "0" inserted after the 3.
    assert_eq!(edits[2]["edits"], json!([{"range": range((2, 5), (2, 5)), "newText": "0"}]));
    assert_eq!(ed.text(&uri).unwrap(), "a😀 = 10;\nb = 20;\nc = 30;\n");
    let reqs = mock.wait_for_requests(5, T).await;
    assert_eq!(tool_results(&reqs[4].body), vec![("a😀 = 10;\nb = 20;\nc = 30;".to_string(), false)]);
    // No code lens refresh for a client that does not support it.
    assert!(ed.transcript().iter().all(|m| m.method() != Some("workspace/codeLens/refresh")));
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_paths_with_spaces_and_unicode() {
    let dir = TempDir::new("with space ü");
    let state = TempDir::new("space-state");
    dir.write("src/ä b.rs", "old\n");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [{"id": "1", "text": "Rename", "status": "in_progress"}]})),
        Step::tool("edit_file", json!({"path": "src/ä b.rs", "old_text": "old", "new_text": "new"})),
        Step::tool("write_file", json!({"path": "docs/nöte 1.md", "content": "hi\n"})),
        Step::text("done"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let ws = ed.folder_uri(0);
    assert!(ws.contains("%20") && ws.contains("%C3%BC"), "{ws}");
    let doc = ed.uri("src/ä b.rs");
    ed.open("src/ä b.rs", "old\n");
    let log = ed.run("rename").await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(log.plans()[0]["workspace"], ws.as_str());
    assert_eq!(ed.text(&doc).unwrap(), "new\n");
    let created =
        ed.handled("workspace/applyEdit")[1].params["edit"]["documentChanges"][0]["uri"].as_str().unwrap().to_string();
    assert_eq!(uri_path(&created).unwrap(), dir.join("docs/nöte 1.md"));
    assert!(dir.join("docs/nöte 1.md").exists());
    assert_eq!(ed.text(&created).unwrap(), "hi\n");
    // The plan lens counts the hunks to review; Keep / Undo sit above the document's one (issue 28).
    assert_eq!(
        ed.lens_titles(&doc).await,
        vec![
            (0, "stepwise 0/1 · Rename · 2 hunks to review".into()),
            (0, "Keep".into()),
            (0, "Undo".into()),
            (0, "✎ stepwise: Rename".into())
        ]
    );
    // A document outside every folder has no lenses.
    let outside = TempDir::new("outside");
    let other = ed.open(outside.join("x.txt"), "x\n");
    assert_eq!(ed.code_lens(&other).await, Vec::<Value>::new());
    ed.finish().await;
}
