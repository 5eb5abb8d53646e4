//! Errors from before the agent's first change of a file, in an editor (issue 36): the editor cannot check
//! the text from before, so stepwise asks it for the file's diagnostics before the change: in the
//! background when the agent reads the file, or, bounded, before a file tool first writes it. An error that
//! was there before is not claimed as new; where the editor does not say in time, the file's errors are
//! listed under a line saying they were not compared, never as new. A file the editor has not open: see
//! lsp_query.rs.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::sent::last_user_text;

const T: Duration = Duration::from_secs(60);
const BEFORE: &str = "const total: number = 'one';\nexport { total };\n";
const OLD: &str = "Type 'string' is not assignable to type 'number'.";
const NEW: &str = "Cannot find name 'missing'.";
const NOT_COMPARED: &str =
    "(not compared with before: the errors below are in files the round changed whose errors before it are not known)";

/// The lines of the `<diagnostics>` block in what the model was told.
fn block(told: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = told.lines().skip_while(|l| *l != "<diagnostics>").collect();
    let end = lines.iter().position(|l| *l == "</diagnostics>").unwrap_or_else(|| panic!("no block end: {told}"));
    lines.truncate(end + 1);
    lines
}

fn error(line: u32, character: u32, message: &str) -> Value {
    json!({"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": character + 5}},
           "severity": 1, "message": message, "source": "ts"})
}

/// The edit that adds a second error on a new first line, so the old one moves down a line.
fn edit() -> Step {
    Step::tool("edit_file", json!({"path": "a.ts", "old_text": "const total", "new_text": "missing;\nconst total"}))
}

/// An editor whose TypeScript reports the old error at version 1 (the document as opened) and both at
/// the agent's version 2. Only the first question about version 1 is answered settled: a second one
/// would read as not settled, so a test that passes was told the before by that one question.
fn editor_answer(asked: Arc<Mutex<Vec<Value>>>) -> Answer {
    Arc::new(move |params: &Value| {
        let mut asked = asked.lock().unwrap();
        asked.push(params.clone());
        if params["kind"] != "diagnostics" {
            return Ok(Value::Null);
        }
        let earlier_v1 = asked[..asked.len() - 1]
            .iter()
            .filter(|q| q["kind"] == "diagnostics")
            .any(|q| q["documents"].as_array().is_some_and(|d| d.iter().any(|d| d["version"] == 1)));
        let items: Vec<Value> = params["documents"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|d| match d["version"].as_i64() {
                Some(v) if v >= 2 => json!({"uri": d["uri"], "settled": true,
                    "diagnostics": [error(0, 0, NEW), error(1, 6, OLD)]}),
                _ => json!({"uri": d["uri"], "settled": !earlier_v1, "diagnostics": [error(0, 6, OLD)]}),
            })
            .collect();
        Ok(json!({"items": items}))
    })
}

/// The questions about version 1 of the document (the before).
fn before_questions(asked: &[Value]) -> usize {
    asked
        .iter()
        .filter(|q| q["kind"] == "diagnostics")
        .filter(|q| q["documents"].as_array().is_some_and(|d| d.iter().any(|d| d["version"] == 1)))
        .count()
}

async fn told_after(steps: Vec<Step>, name: &str) -> (String, Vec<Value>) {
    let (dir, state) = folder_and_state(name);
    std::fs::write(dir.path().join("a.ts"), BEFORE).unwrap();
    let mock = MockModel::start(steps).await;
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::With(editor_answer(asked.clone())))
        .timeout(T)
        .start()
        .await;
    ed.open(dir.path().join("a.ts"), BEFORE);
    let log = ed.run("add a line").await;
    assert_eq!(log.reason(), "end_turn");
    let requests = mock.requests();
    let told = last_user_text(&requests.last().expect("a request").body);
    ed.finish().await;
    let asked = asked.lock().unwrap().clone();
    (told, asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_a_file_read_then_edited_is_told_only_the_new_error() {
    let steps = vec![Step::tool("read_file", json!({"path": "a.ts"})), edit(), Step::text("done")];
    let (told, asked) = told_after(steps, "before-read").await;
    assert!(told.contains(&format!("a.ts:1:1: error: {NEW}")), "{told}");
    assert!(!told.contains(OLD), "the error from before is not new: {told}");
    assert!(!told.contains("not compared"), "{told}");
    // The read asked; the write used that answer rather than a second question.
    assert_eq!(before_questions(&asked), 1, "{asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_a_file_edited_unread_is_asked_before_the_write() {
    let (told, asked) = told_after(vec![edit(), Step::text("done")], "before-write").await;
    assert!(told.contains(&format!("a.ts:1:1: error: {NEW}")), "{told}");
    assert!(!told.contains(OLD), "the error from before is not new: {told}");
    assert!(!told.contains("not compared"), "{told}");
    assert_eq!(before_questions(&asked), 1, "{asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_that_never_says_the_before_leaves_the_errors_not_compared_and_the_write_goes_on() {
    let (dir, state) = folder_and_state("before-never");
    std::fs::write(dir.path().join("a.ts"), BEFORE).unwrap();
    let mock = MockModel::start(vec![edit(), Step::text("done")]).await;
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::Queue).timeout(T).start().await;
    let uri = ed.open(dir.path().join("a.ts"), BEFORE);
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "add a line").await;
    // The question before the write, about the document as opened: never answered.
    let (_, first) = ed.await_request("stepwise/query", T).await;
    let asked_at = Instant::now();
    assert_eq!(first["documents"], json!([{"uri": uri, "version": 1}]), "{first}");
    // The write went on within the bound: the next question is the round's, about the version it made.
    let (id, second) = ed.await_request("stepwise/query", T).await;
    let waited = asked_at.elapsed();
    assert!(waited < Duration::from_secs(10), "the write waited {waited:?}");
    assert_eq!(second["documents"], json!([{"uri": uri, "version": 2}]), "{second}");
    ed.respond(
        &id,
        json!({"items": [{"uri": uri, "settled": true, "diagnostics": [error(0, 0, NEW), error(1, 6, OLD)]}]}),
    );
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    let told = last_user_text(&mock.requests().last().expect("a request").body);
    // Nothing claimed as new: every error listed under the line that says they were not compared.
    let listed = [&format!("a.ts:1:1: error: {NEW} (ts)"), &format!("a.ts:2:7: error: {OLD} (ts)")];
    assert_eq!(block(&told), ["<diagnostics>", NOT_COMPARED, listed[0], listed[1], "</diagnostics>"], "{told}");
    ed.finish().await;
}

/// A command that adds the second error on a new first line.
fn command() -> Step {
    Step::tool("bash", json!({"command": "printf 'missing;\\n' | cat - a.ts > b && mv b a.ts"}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_a_file_read_then_changed_by_a_command_is_told_only_the_new_error() {
    let steps = vec![Step::tool("read_file", json!({"path": "a.ts"})), command(), Step::text("done")];
    let (told, asked) = told_after(steps, "before-read-command").await;
    // The command waited for the answer the read asked for, so the errors are compared with it.
    assert!(told.contains(&format!("a.ts:1:1: error: {NEW}")), "{told}");
    assert!(!told.contains(OLD), "the error from before is not new: {told}");
    assert!(!told.contains("not compared"), "{told}");
    assert_eq!(before_questions(&asked), 1, "{asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_a_file_a_command_changed_unseen_is_not_compared() {
    let steps = vec![command(), Step::text("done")];
    let (told, asked) = told_after(steps, "before-command").await;
    // The editor cannot check the text from before the command: no error is claimed as new, each is listed
    // under the line that says so.
    let listed = [&format!("a.ts:1:1: error: {NEW} (ts)"), &format!("a.ts:2:7: error: {OLD} (ts)")];
    assert_eq!(block(&told), ["<diagnostics>", NOT_COMPARED, listed[0], listed[1], "</diagnostics>"], "{told}");
    assert!(asked.iter().any(|q| q["kind"] == "diagnostics"), "the round asked the editor: {asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_a_read_does_not_wait_for_the_question_and_a_round_that_changes_nothing_has_no_block() {
    let (dir, state) = folder_and_state("before-read-no-wait");
    std::fs::write(dir.path().join("a.ts"), BEFORE).unwrap();
    let mock = MockModel::start(vec![Step::tool("read_file", json!({"path": "a.ts"})), Step::text("done")]).await;
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::Queue).timeout(T).start().await;
    let uri = ed.open(dir.path().join("a.ts"), BEFORE);
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "look at a.ts").await;
    // The read asks about the document as it is, in the background: never answered here.
    let (_, asked) = ed.await_request("stepwise/query", T).await;
    let asked_at = Instant::now();
    assert_eq!(asked["documents"], json!([{"uri": uri, "version": 1}]), "{asked}");
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    // The run ended before the question's own 2 s ran out: the read did not wait for it.
    let waited = asked_at.elapsed();
    assert!(waited < Duration::from_millis(1900), "the run waited {waited:?} after the question");
    let told = last_user_text(&mock.requests().last().expect("a request").body);
    assert!(!told.contains("<diagnostics>"), "nothing changed: no block: {told}");
    assert!(ed.try_request("stepwise/query", Duration::ZERO).await.is_none(), "no other question");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_a_file_a_command_made_had_no_errors_before_so_its_errors_are_new() {
    let (dir, state) = folder_and_state("before-command-made");
    let steps = vec![Step::tool("bash", json!({"command": "printf 'missing;\\n' > b.ts"})), Step::text("done")];
    let mock = MockModel::start(steps).await;
    // The editor's TypeScript reports the new file's error for whatever version is asked.
    let answer = answer_all(true, json!([error(0, 0, NEW)]), |_| {});
    let ed = querying_editor(ClientPreset::VsCode, &dir, &state, &mock, Policy::With(answer)).timeout(T).start().await;
    let log = ed.run("make b.ts").await;
    assert_eq!(log.reason(), "end_turn");
    let told = last_user_text(&mock.requests().last().expect("a request").body);
    // The checkpoints say nothing was there: its error is the command's, not one of unknown age.
    assert!(told.contains(&format!("b.ts:1:1: error: {NEW}")), "{told}");
    assert!(!told.contains("not compared"), "{told}");
    ed.finish().await;
}
