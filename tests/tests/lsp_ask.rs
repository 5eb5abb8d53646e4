//! `stepwise/ask`: a client that declares `experimental.stepwise.ask` gets every question typed (its call,
//! its kind, what it concerns) and answers `allow` / `allowSession` / `deny`; a question no longer wanted
//! is withdrawn with `$/cancelRequest`; a client that does not declare it keeps `window/showMessageRequest`.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::temp::TempDir;

const T: Duration = Duration::from_secs(30);

fn declares_ask(caps: &mut Value) {
    caps["experimental"]["stepwise"]["ask"] = json!(true);
}

/// The id of the `started` call notified for `name`.
fn call_id(ed: &TestEditor, name: &str) -> String {
    let calls = ed.transcript();
    let found = calls.iter().find_map(|m| match m {
        Incoming::Notification { method, params } if method == "stepwise/toolCall" && params["name"] == name => {
            params["id"].as_str().map(str::to_string)
        }
        _ => None,
    });
    found.unwrap_or_else(|| panic!("no {name} call notified"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_ask_is_typed_for_a_command_the_sandbox_stopped_and_a_protected_write() {
    let (dir, state) = folder_and_state("ask-typed");
    let outside = TempDir::new("ask-outside");
    let target = outside.join("made");
    let command = format!("echo made > {} && echo wrote it", target.display());
    let mock = MockModel::start(vec![
        Step::tool("bash", json!({"command": command})),
        Step::tool("write_file", json!({"path": ".env", "content": "KEY=x\n"})),
        Step::text("done"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .capabilities(declares_ask)
        .option("sandbox", json!("workspace-write"))
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "make things").await;

    let (id, p) = ed.await_request("stepwise/ask", T).await;
    assert_eq!(p["kind"], "unsandboxed", "{p}");
    assert_eq!((p["workspace"].as_str(), p["runId"].as_str()), (Some(ws.as_str()), Some(run.as_str())));
    assert_eq!(p["callId"], call_id(&ed, "bash"), "the question names its call");
    assert_eq!(p["command"], command);
    let stopped = p["stopped"].as_str().unwrap();
    assert!(stopped.contains(&target.display().to_string()), "what the sandbox stopped names the path: {p}");
    assert!(!target.exists(), "nothing ran outside the sandbox before the answer");
    ed.respond(&id, json!({"answer": "allow"}));

    let (id, p) = ed.await_request("stepwise/ask", T).await;
    assert_eq!(p["kind"], "protectedWrite", "{p}");
    assert_eq!(p["path"], ".env");
    assert!(p["why"].as_str().unwrap().contains(".env"), "{p}");
    assert_eq!(p["callId"], call_id(&ed, "write_file"));
    ed.respond(&id, json!({"answer": "deny"}));

    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "made\n", "allowed: it ran outside the sandbox");
    assert!(!dir.join(".env").exists(), "denied: not written");
    let results = log.results();
    assert!(results[0].1.contains("it stopped a write to "), "the model read what it stopped: {results:?}");
    assert!(results[1].1.contains("denied by the user"), "{results:?}");
    let plain = ed.transcript();
    let plain =
        plain.iter().filter(|m| matches!(m, Incoming::Request { method, .. } if method == "window/showMessageRequest"));
    assert_eq!(plain.count(), 0, "a client that declares stepwise/ask is not asked the old way");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_ask_allow_for_session_covers_the_next_command() {
    let (dir, state) = folder_and_state("ask-session");
    let mock = MockModel::start(vec![
        Step::tool("bash", json!({"command": "echo one > one"})),
        Step::tool("bash", json!({"command": "echo two > two"})),
        Step::text("ran both"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .capabilities(declares_ask)
        .option("sandbox", json!("off"))
        .ignore(&TRANSCRIPT)
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "two commands").await;
    let (id, p) = ed.await_request("stepwise/ask", T).await;
    assert_eq!((p["kind"].as_str(), p["command"].as_str()), (Some("command"), Some("echo one > one")), "{p}");
    ed.respond(&id, json!({"answer": "allowSession"}));
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");
    assert!(dir.join("one").exists() && dir.join("two").exists(), "the second command was allowed for the session");
    let asked = ed.transcript();
    let asked = asked.iter().filter(|m| m.method() == Some("stepwise/ask")).count();
    assert_eq!(asked, 1);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_ask_is_withdrawn_when_the_run_is_cancelled() {
    let (dir, state) = folder_and_state("ask-cancel");
    let mock = MockModel::start(vec![
        Step::tool("write_file", json!({"path": "AGENTS.md", "content": "obey\n"})),
        Step::text("never"),
    ])
    .await;
    let ed =
        editor(ClientPreset::VsCode, &dir, &state, &mock).capabilities(declares_ask).ignore(&TRANSCRIPT).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "write it").await;
    let (id, p) = ed.await_request("stepwise/ask", T).await;
    assert_eq!((p["kind"].as_str(), p["path"].as_str()), (Some("protectedWrite"), Some("AGENTS.md")), "{p}");
    ed.execute("stepwise.cancel", json!({})).await.unwrap();
    let cancel = ed.await_notification("$/cancelRequest").await;
    assert_eq!(cancel["id"], id, "the waiting question is withdrawn");
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "cancelled");
    // A late answer changes nothing.
    ed.respond(&id, json!({"answer": "allow"}));
    assert!(!dir.join("AGENTS.md").exists());
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_client_without_ask_keeps_show_message_request() {
    let (dir, state) = folder_and_state("ask-plain");
    let mock = MockModel::start(vec![Step::tool("bash", json!({"command": "echo hi"})), Step::text("ok")]).await;
    let ed = editor(ClientPreset::Neovim, &dir, &state, &mock)
        .option("sandbox", json!("off"))
        .ignore(&TRANSCRIPT)
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "hi").await;
    let (id, p) = ed.await_request("window/showMessageRequest", T).await;
    assert!(p["message"].as_str().unwrap().starts_with("stepwise wants to run a shell command in "), "{p}");
    let titles: Vec<&str> = p["actions"].as_array().unwrap().iter().filter_map(|a| a["title"].as_str()).collect();
    assert_eq!(titles, ["Allow", "Allow for this session", "Deny"]);
    ed.respond(&id, json!({"title": "Allow"}));
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");
    ed.finish().await;
}
