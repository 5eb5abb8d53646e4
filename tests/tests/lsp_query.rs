//! The editor as the source of code intelligence (issue 36): a client that declares
//! `experimental.stepwise.query` is asked `stepwise/query` for the diagnostics of the documents the agent
//! wrote, naming the versions its edits gave them; its answer reaches the model as a `<diagnostics>` block
//! (and the editor as `stepwise/diagnostics`); an editor that does not answer in time reads as `not checked`,
//! never as clean.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::sent::last_user_text;

const T: Duration = Duration::from_secs(60);
const BEFORE: &str = "const total: number = 1;\nexport { total };\n";
const ERROR: &str = "Type 'string' is not assignable to type 'number'.";

fn script() -> Vec<Step> {
    vec![
        Step::tool("edit_file", json!({"path": "a.ts", "old_text": "= 1;", "new_text": "= 'one';"})),
        Step::text("done"),
    ]
}

/// The capability that makes the editor the source: `experimental.stepwise.query`.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_the_editors_diagnostics_of_the_version_the_agent_wrote_reach_the_model() {
    let (dir, state) = folder_and_state("query-diagnostics");
    std::fs::write(dir.path().join("a.ts"), BEFORE).unwrap();
    let mock = MockModel::start(script()).await;
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = asked.clone();
    // The editor's TypeScript reports the error once the document reached the version with the edit.
    let answer: Answer = Arc::new(move |params: &Value| {
        seen.lock().unwrap().push(params.clone());
        if params["kind"] != "diagnostics" {
            return Ok(Value::Null);
        }
        let items: Vec<Value> = params["documents"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|d| {
                let wrote = d["version"].as_i64().unwrap_or(0) >= 2;
                let diagnostics = if wrote {
                    json!([{"range": {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 11}},
                            "severity": 1, "message": ERROR, "source": "ts", "code": 2322}])
                } else {
                    json!([])
                };
                json!({"uri": d["uri"], "diagnostics": diagnostics, "settled": true})
            })
            .collect();
        Ok(json!({"items": items}))
    });
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::With(answer)).timeout(T).start().await;
    let uri = ed.open(dir.path().join("a.ts"), BEFORE);
    let log = ed.run("make total a string").await;
    assert_eq!(log.reason(), "end_turn");

    // Asked about the document the agent wrote, at the version its edit gave it (opened at 1, edited: 2).
    let queries = asked.lock().unwrap().clone();
    let diag: Vec<&Value> =
        queries.iter().filter(|q| q["kind"] == "diagnostics" && q["documents"].is_array()).collect();
    assert!(!diag.is_empty(), "no stepwise/query for diagnostics: {queries:?}");
    let last = diag.last().unwrap();
    assert_eq!(last["documents"], json!([{"uri": uri, "version": 2}]), "{last}");
    let wait = last["waitMs"].as_u64().expect("waitMs");
    assert!(wait > 0 && wait <= 10_000, "waitMs within the first wait's 10 s: {wait}");

    // The model's next request carries the error with file and line (1-based), after the tool result.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let told = last_user_text(&requests[1].body);
    assert!(told.contains("<diagnostics>") && told.contains("</diagnostics>"), "{told}");
    assert!(told.contains(&format!("a.ts:1:7: error: {ERROR}")), "{told}");

    // The editor hears what the model was told, under the round's call.
    let notes = log.of("stepwise/diagnostics");
    assert_eq!(notes.len(), 1, "{notes:?}");
    let calls = log.tool_calls();
    let call_id = calls[0]["id"].clone();
    assert_eq!(notes[0]["calls"], json!([call_id]));
    assert_eq!(notes[0]["lines"][0]["path"], "a.ts");
    assert_eq!(notes[0]["lines"][0]["line"], 1);
    assert_eq!(notes[0]["lines"][0]["column"], 7);

    // After a reload the block is a diagnostics entry, not the user's words.
    let conv = ed.execute("stepwise.conversation", json!({})).await.unwrap();
    let kinds: Vec<&str> = conv["entries"].as_array().unwrap().iter().filter_map(|e| e["kind"].as_str()).collect();
    assert!(kinds.contains(&"diagnostics"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "user").count(), 1, "{kinds:?}");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_editor_that_does_not_answer_the_query_in_time_reads_as_not_checked() {
    let (dir, state) = folder_and_state("query-late");
    std::fs::write(dir.path().join("a.ts"), BEFORE).unwrap();
    let mock = MockModel::start(script()).await;
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::NeverAnswer).timeout(T).start().await;
    ed.open(dir.path().join("a.ts"), BEFORE);
    let started = std::time::Instant::now();
    let log = ed.run("make total a string").await;
    assert_eq!(log.reason(), "end_turn", "the session goes on");
    assert!(started.elapsed() < Duration::from_secs(30), "bounded by the wait: {:?}", started.elapsed());
    let requests = mock.requests();
    let told = last_user_text(&requests[1].body);
    let line = told
        .lines()
        .find(|l| l.starts_with("a.ts: not checked (the editor did not answer in "))
        .unwrap_or_else(|| panic!("{told}"));
    assert!(line.ends_with(" ms)"), "{line}");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_editor_that_gives_up_early_is_said_with_the_time_really_waited() {
    let (dir, state) = folder_and_state("query-gave-up");
    std::fs::write(dir.path().join("a.ts"), BEFORE).unwrap();
    let mock = MockModel::start(script()).await;
    let allowed: Arc<Mutex<Option<u64>>> = Arc::default();
    let seen = allowed.clone();
    // The editor knows at once that none of its servers will check the document (VS Code: a language whose
    // server never showed up) and answers unsettled long before the wait it was allowed.
    let answer = unsettled(move |params| *seen.lock().unwrap() = params["waitMs"].as_u64());
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::With(answer)).timeout(T).start().await;
    ed.open(dir.path().join("a.ts"), BEFORE);
    let log = ed.run("make total a string").await;
    assert_eq!(log.reason(), "end_turn");
    let allowed = allowed.lock().unwrap().expect("asked for the diagnostics of the round's change");
    let told = last_user_text(&mock.requests()[1].body);
    let line = told
        .lines()
        .find(|l| l.starts_with("a.ts: not checked (the editor did not answer in "))
        .unwrap_or_else(|| panic!("never silence: {told}"));
    let ms: u64 = line
        .trim_start_matches("a.ts: not checked (the editor did not answer in ")
        .trim_end_matches(" ms)")
        .parse()
        .unwrap_or_else(|_| panic!("{line}"));
    assert!(ms < allowed, "the time really waited ({ms} ms), not the {allowed} ms the editor was allowed: {line}");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_command_that_changed_many_files_nobody_checked_is_told_capped() {
    let (dir, state) = folder_and_state("query-unchecked-capped");
    for i in 0..60 {
        std::fs::write(dir.path().join(format!("f{i:02}.ts")), "export const x = 1;\n").unwrap();
    }
    let steps = vec![Step::tool("bash", json!({"command": "sed -i 's/1/2/' f*.ts"})), Step::text("done")];
    let mock = MockModel::start(steps).await;
    // An editor none of whose servers checks anything: every document unsettled at once.
    let answer = unsettled(|_| {});
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::With(answer)).timeout(T).start().await;
    let log = ed.run("bump them").await;
    assert_eq!(log.reason(), "end_turn");
    let told = last_user_text(&mock.requests()[1].body);
    let unchecked = told.lines().filter(|l| l.contains(": not checked (")).count();
    assert_eq!(unchecked, 50, "at most 50 such lines: {told}");
    assert!(told.contains("(10 more unchecked files not shown; at most 50 are shown)"), "the cap said: {told}");
    ed.finish().await;
}

/// An editor that answers every listed document of a diagnostics question at once, unsettled (none of its
/// servers will check it); `asked` sees each such question.
fn unsettled(asked: impl Fn(&Value) + Send + Sync + 'static) -> Answer {
    answer_all(false, json!([]), asked)
}

/// A TypeScript file with an error already there, in no tab of the editor (issue 46).
const CLOSED: &str = "const total: number = 'one';\nexport { total };\n";
const OLD: &str = "Type 'string' is not assignable to type 'number'.";
const NEW: &str = "Cannot find name 'missing'.";

fn error(line: u32, character: u32, message: &str) -> Value {
    json!({"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": character + 5}},
           "severity": 1, "message": message, "source": "ts"})
}

/// The edit that adds a second error on a new first line (the old one moves down a line).
fn add_missing() -> Step {
    Step::tool("edit_file", json!({"path": "a.ts", "old_text": "const total", "new_text": "missing;\nconst total"}))
}

/// What a test editor that answers only for the documents it is asked about says (`asked` sees each question):
/// for the first question, its servers' check of the file as it was before the write (`before`, settled or
/// not); for every later one, that of the text the agent wrote (`after`, settled).
fn first_then(before: (bool, Value), after: Value, asked: Arc<Mutex<Vec<Value>>>) -> Answer {
    Arc::new(move |params: &Value| {
        let first = {
            let mut asked = asked.lock().unwrap();
            asked.push(params.clone());
            asked.len() == 1
        };
        let (settled, diagnostics) = if first { before.clone() } else { (true, after.clone()) };
        Ok(diagnostics_answer(params, settled, &diagnostics))
    })
}

/// The model was told the edit's new error in a.ts with its place, and nothing else of a.ts's.
fn assert_told_only_the_new_error(told: &str) {
    assert!(told.contains(&format!("a.ts:1:1: error: {NEW} (ts)")), "{told}");
    assert!(!told.contains(OLD), "the error from before is not new: {told}");
    assert!(!told.contains("not compared"), "{told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_file_the_editor_has_not_open_is_asked_before_the_write_and_only_its_new_error_reaches_the_model() {
    let (dir, state) = folder_and_state("query-closed");
    let path = dir.path().join("a.ts");
    std::fs::write(&path, CLOSED).unwrap();
    let mock = MockModel::start(vec![add_missing(), Step::text("done")]).await;
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::Queue).timeout(T).start().await;
    let ws = ed.folder_uri(0);
    let uri = ed.uri(&path);
    let run = ed.start_run(&ws, "add a line").await;
    // Before the write: the document, which the editor has not open, named without a version.
    let (id, before) = ed.await_request("stepwise/query", T).await;
    assert_eq!(before["documents"], json!([{"uri": uri}]), "no version: {before}");
    let wait = before["waitMs"].as_u64().expect("waitMs");
    assert!(
        wait > 2_000 && wait <= 10_000,
        "a closed document's first wait: more than an open one's, within 10 s: {wait}"
    );
    // The editor opens it unshown (its didOpen, as VS Code's client sends it) and answers for the text on disk.
    ed.open(&path, CLOSED);
    ed.respond(&id, json!({"items": [{"uri": uri, "settled": true, "diagnostics": [error(0, 6, OLD)]}]}));
    // The write goes to the document the editor opened; the round asks about the version it gave.
    let (id, after) = ed.await_request("stepwise/query", T).await;
    assert_eq!(after["documents"], json!([{"uri": uri, "version": 2}]), "{after}");
    ed.respond(
        &id,
        json!({"items": [{"uri": uri, "settled": true, "diagnostics": [error(0, 0, NEW), error(1, 6, OLD)]}]}),
    );
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    let edits = ed.handled("workspace/applyEdit");
    assert_eq!(edits.len(), 1, "{edits:?}");
    // Named at the version it opened with, or none while its didOpen had not reached the sidecar yet.
    let version = &edits[0].params["edit"]["documentChanges"][0]["textDocument"]["version"];
    assert!(version.is_null() || *version == 1, "{:?}", edits[0].params);
    assert_told_only_the_new_error(&last_user_text(&mock.requests().last().expect("a request").body));
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_editor_answering_only_for_the_documents_asked_about_is_told_the_new_error_of_a_file_it_has_not_open() {
    let (dir, state) = folder_and_state("query-closed-any");
    std::fs::write(dir.path().join("a.ts"), CLOSED).unwrap();
    std::fs::write(dir.path().join("b.ts"), "export const b: number = 'b';\n").unwrap();
    let mock = MockModel::start(vec![add_missing(), Step::text("done")]).await;
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    // Any client that answers `stepwise/query`: only for the documents listed, never others (b.ts has an error
    // it is never asked about); first the file as it was, then with the agent's line.
    let after = json!([error(0, 0, NEW), error(1, 6, OLD)]);
    let answer = first_then((true, json!([error(0, 6, OLD)])), after, asked.clone());
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::With(answer)).timeout(T).start().await;
    let log = ed.run("add a line").await;
    assert_eq!(log.reason(), "end_turn");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "before the write, and the round's: {asked:?}");
    assert!(asked.iter().all(|q| q["documents"].as_array().is_some_and(|d| d.len() == 1)), "{asked:?}");
    assert_eq!(asked[0]["documents"][0]["version"], Value::Null, "{asked:?}");
    let told = last_user_text(&mock.requests().last().expect("a request").body);
    assert_told_only_the_new_error(&told);
    assert!(!told.contains("b.ts"), "{told}");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_errors_whose_past_the_editor_did_not_say_are_listed_under_a_line_saying_so_never_counted() {
    let (dir, state) = folder_and_state("query-closed-unknown");
    std::fs::write(dir.path().join("a.ts"), CLOSED).unwrap();
    let mock = MockModel::start(vec![add_missing(), Step::text("done")]).await;
    // The question before the write is never settled (the editor's servers did not check it in time); the round's is.
    let answer = first_then((false, json!([])), json!([error(0, 0, NEW), error(1, 6, OLD)]), Arc::default());
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::With(answer)).timeout(T).start().await;
    let log = ed.run("add a line").await;
    assert_eq!(log.reason(), "end_turn");
    let told = last_user_text(&mock.requests().last().expect("a request").body);
    let block: Vec<&str> = told.lines().skip_while(|l| *l != "<diagnostics>").take(5).collect();
    assert_eq!(
        block,
        [
            "<diagnostics>",
            "(not compared with before: the errors below are in files the round changed whose errors before it are not known)",
            &format!("a.ts:1:1: error: {NEW} (ts)"),
            &format!("a.ts:2:7: error: {OLD} (ts)"),
            "</diagnostics>",
        ],
        "{told}"
    );
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_rename_into_files_the_editor_has_not_open_asks_each_ones_errors_before_its_write() {
    let (dir, state) = folder_and_state("query-closed-rename");
    std::fs::write(dir.path().join("a.ts"), "export const total = 1;\n").unwrap();
    let b_text = "import { total } from './a';\nconst x: string = total;\nconst y: number = 'y';\n";
    std::fs::write(dir.path().join("b.ts"), b_text).unwrap();
    let steps = vec![
        Step::tool("rename_symbol", json!({"path": "a.ts", "symbol": "total", "new_name": "sum"})),
        Step::text("done"),
    ];
    let mock = MockModel::start(steps).await;
    let (a, b) = (dir.path().join("a.ts"), dir.path().join("b.ts"));
    let range = |line: u32, from: u32| json!({"start": {"line": line, "character": from}, "end": {"line": line, "character": from + 5}});
    let (a_uri, b_uri) = (file_uri(&a), file_uri(&b));
    let edit = json!({"changes": {
        a_uri.clone(): [{"range": range(0, 13), "newText": "sum"}],
        b_uri.clone(): [{"range": range(0, 9), "newText": "sum"}, {"range": range(1, 18), "newText": "sum"}],
    }});
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = asked.clone();
    // b.ts has an error before the rename (OLD, on a line it does not touch) and one more after it (NEW); a.ts none.
    // Each document's first
    // question is about the text before the write; later ones about the text after.
    let b_doc = b_uri.clone();
    let answer: Answer = Arc::new(move |params: &Value| {
        let mut seen = seen.lock().unwrap();
        seen.push(params.clone());
        if params["kind"] == "rename" {
            return Ok(edit.clone());
        }
        let docs = params["documents"].as_array().cloned().unwrap_or_default();
        let items: Vec<Value> = docs
            .iter()
            .map(|d| {
                let earlier = seen[..seen.len() - 1]
                    .iter()
                    .any(|q| q["documents"].as_array().is_some_and(|l| l.iter().any(|e| e["uri"] == d["uri"])));
                let diagnostics = match (d["uri"] == b_doc, earlier) {
                    (false, _) => json!([]),
                    (true, false) => json!([error(2, 6, OLD)]),
                    (true, true) => json!([error(2, 6, OLD), error(0, 9, NEW)]),
                };
                json!({"uri": d["uri"], "settled": true, "diagnostics": diagnostics})
            })
            .collect();
        Ok(json!({"items": items}))
    });
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::With(answer)).timeout(T).start().await;
    let log = ed.run("rename total").await;
    assert_eq!(log.reason(), "end_turn");
    let asked = asked.lock().unwrap().clone();
    // Each file asked about without a version before its write, then both in the round's question.
    let befores: Vec<&Value> = asked
        .iter()
        .filter(|q| q["kind"] == "diagnostics")
        .filter(|q| q["documents"].as_array().is_some_and(|d| d.len() == 1 && d[0].get("version").is_none()))
        .collect();
    let named: Vec<&Value> = befores.iter().map(|q| &q["documents"][0]["uri"]).collect();
    assert!(named.contains(&&json!(a_uri)) && named.contains(&&json!(b_uri)), "{asked:?}");
    let told = last_user_text(&mock.requests().last().expect("a request").body);
    assert!(told.contains(&format!("b.ts:1:10: error: {NEW} (ts)")), "{told}");
    assert!(!told.contains(OLD) && !told.contains("not compared"), "{told}");
    ed.finish().await;
}
