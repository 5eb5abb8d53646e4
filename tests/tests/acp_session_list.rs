//! `session/list`, `session/resume` and `session/close` of `stepwise acp`: saved sessions listed with
//! their folder, first prompt and time, filtered by folder; one resumed by a new process without its
//! history told again; a closed one gone from the connection; one unused for a month pruned at start.

mod common;

use common::{messages, texts};
use serde_json::{json, Value};
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::acp_client::{agent_env, of_kind, AcpClient};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;

/// `YYYY-MM-DDTHH:MM:SSZ`.
fn is_utc_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| r.into_iter().all(|i| b[i].is_ascii_digit());
    b.len() == 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'Z'
}

fn ids(list: &Value) -> Vec<String> {
    list["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn saved_sessions_are_listed_resumed_and_closed() {
    let (a, b) = (TempDir::new("acp-ws-a"), TempDir::new("acp-ws-b"));
    let state = TempDir::new("acp-state");
    let mock = MockModel::start(vec![
        Step::text("Parser fixed."),
        Step::text("Docs written."),
        Step::text("Resumed and going on."),
    ])
    .await;
    let env = agent_env(&mock, &state);

    // One agent process: a session in each folder, one prompt each.
    let mut first = AcpClient::spawn(a.path(), &env);
    let init = first.initialize(false, false).await;
    assert_eq!(init["agentCapabilities"]["sessionCapabilities"], json!({"list": {}, "resume": {}, "close": {}}));
    let sa = first.new_session(a.path()).await;
    let (resp, _) = first.prompt(&sa, "fix the parser\nit drops the last token").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let sb = first.new_session(b.path()).await;
    let (resp, _) = first.prompt(&sb, "write the docs").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    // A session without a prompt has nothing saved and is not listed.
    let _empty = first.new_session(a.path()).await;
    first.close_stdin();
    assert_eq!(first.wait_exit().await, Some(0));

    // The next process lists them.
    let mut second = AcpClient::spawn(a.path(), &env);
    second.initialize(false, false).await;
    let all = second.call("session/list", json!({})).await;
    let mut listed = ids(&all);
    listed.sort();
    let mut both = vec![sa.clone(), sb.clone()];
    both.sort();
    assert_eq!(listed, both, "{all}");
    let times: Vec<&str> =
        all["sessions"].as_array().unwrap().iter().map(|s| s["updatedAt"].as_str().unwrap()).collect();
    assert!(times.iter().all(|t| is_utc_timestamp(t)), "{times:?}");
    assert!(times[0] >= times[1], "newest first: {times:?}");

    let in_a = second.call("session/list", json!({"cwd": a.path()})).await;
    let canonical = std::fs::canonicalize(a.path()).unwrap();
    assert_eq!(in_a["sessions"].as_array().unwrap().len(), 1, "{in_a}");
    let only = &in_a["sessions"][0];
    assert_eq!(only["sessionId"], sa.as_str());
    assert_eq!(only["cwd"], canonical.display().to_string());
    assert_eq!(only["title"], "fix the parser");
    let elsewhere = TempDir::new("acp-ws-c");
    assert_eq!(second.call("session/list", json!({"cwd": elsewhere.path()})).await, json!({"sessions": []}));

    // Resume: the session comes back without its history told again, with its commands, and goes on.
    let from = second.received.len();
    let resumed = second.call("session/resume", json!({"sessionId": sa, "cwd": a.path()})).await;
    assert_eq!(resumed, json!({"modes": modes()}), "nothing but the session's modes");
    let update = second.until(|m| m["method"] == "session/update").await;
    assert_eq!(update["params"]["update"]["sessionUpdate"], "available_commands_update", "{update}");
    let told = second.updates_since(from);
    assert!(of_kind(&told, "user_message_chunk").is_empty(), "resume tells no history: {told:#?}");
    let (resp, _) = second.prompt(&sa, "and the tests").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let sent = &mock.requests()[2].body;
    let said: Vec<String> = messages(sent).iter().flat_map(texts).collect();
    assert_eq!(said, ["fix the parser\nit drops the last token", "Parser fixed.", "and the tests"]);

    // Close: gone from this connection (still saved), and an unknown id is an error.
    assert_eq!(second.call("session/close", json!({"sessionId": sa})).await, json!({}));
    let gone =
        second.call_err("session/prompt", json!({"sessionId": sa, "prompt": [{"type": "text", "text": "more"}]})).await;
    assert_eq!(gone["code"], -32002, "{gone}");
    let unknown = second.call_err("session/close", json!({"sessionId": "sw-nope"})).await;
    assert_eq!(unknown["code"], -32002, "{unknown}");
    assert_eq!(ids(&second.call("session/list", json!({"cwd": a.path()})).await), [sa.as_str()]);
    let reloaded = second.call("session/load", json!({"sessionId": sa, "cwd": a.path(), "mcpServers": []})).await;
    assert_eq!(reloaded, json!({"modes": modes()}));
}

/// The session modes a resumed or loaded session answers with (plan first, docs/acp.md).
fn modes() -> serde_json::Value {
    json!({"currentModeId": "default", "availableModes": [
        {"id": "default", "name": "Default", "description": "Acts: edits files and runs commands (asking as configured)."},
        {"id": "plan", "name": "Plan", "description": "Plans first, read-only; nothing changes until you approve the plan."}
    ]})
}

/// Sets a path's modification time `days` back.
fn age(path: &std::path::Path, days: u64) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    std::fs::File::open(path).and_then(|f| f.set_modified(t)).unwrap();
}

#[tokio::test]
async fn a_session_unused_for_a_month_goes_with_its_checkpoints_at_the_next_start() {
    let mock = MockModel::start(vec![Step::text("Old work."), Step::text("New work.")]).await;
    let agent = ScriptedAgent::new("acp-prune-ws", mock);
    let ws = &agent.ws;
    let mut first = agent.initialized().await;
    let (old, new) = (first.new_session(ws.path()).await, first.new_session(ws.path()).await);
    for (s, p) in [(&old, "old task"), (&new, "new task")] {
        let (resp, _) = first.prompt(s, p).await;
        assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    }
    first.close_stdin();
    assert_eq!(first.wait_exit().await, Some(0));

    let dir = agent.state.path().join("acp");
    let (file, store) = (dir.join(format!("{old}.json")), dir.join(format!("{old}.checkpoints")));
    assert!(file.is_file() && store.is_dir(), "the session and its checkpoints were saved");
    age(&file, 40);
    for e in std::fs::read_dir(&store).unwrap() {
        age(&e.unwrap().path(), 40);
    }
    age(&store, 40);

    let mut second = agent.initialized().await;
    let all = second.call("session/list", json!({})).await;
    assert_eq!(ids(&all), vec![new.clone()], "{all}");
    assert!(!file.exists() && !store.exists(), "the old session's file and checkpoints are gone");
    assert!(dir.join(format!("{new}.json")).is_file() && dir.join(format!("{new}.checkpoints")).is_dir());
    second.close_stdin();
    assert_eq!(second.wait_exit().await, Some(0));
}
