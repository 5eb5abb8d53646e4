//! `stepwise acp` driven over its stdio by a test client: initialize, a prompt with a plan, tool calls and
//! an edit's diff, and permissions answered allow, always, reject and cancelled.

mod common;

use std::sync::{Arc, Mutex};

use common::{call, result_texts};
use serde_json::{json, Value};
use stepwise_tests::acp_agent::{permissions, ScriptedAgent};
use stepwise_tests::acp_client::{chunks, finished, of_kind, statuses};
use stepwise_tests::mock::{MockModel, Step, Turn};

fn todo(items: &[(&str, &str, &str)]) -> Value {
    json!({"items": items.iter().map(|(id, text, status)| json!({"id": id, "text": text, "status": status})).collect::<Vec<_>>()})
}

#[tokio::test]
async fn a_prompt_reports_plan_tool_calls_diff_and_usage() {
    let mock = MockModel::start(vec![
        Turn::text("Planning.")
            .with_tool("todo", todo(&[("1", "Edit the file", "in_progress"), ("2", "Check it", "pending")]))
            .with_usage(1200, 40)
            .into(),
        call("edit_file", json!({"path": "src.txt", "old_text": "world", "new_text": "there"})),
        call("read_file", json!({"path": "src.txt"})),
        call("bash", json!({"command": "cat src.txt"})),
        call("todo", todo(&[("1", "Edit the file", "completed"), ("2", "Check it", "completed")])),
        Step::text("Done: src.txt says hello there."),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let ws = &agent.ws;
    ws.write("src.txt", "hello world\n");
    let mut client = agent.spawn();
    let init = client.initialize(false, false).await;
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["agentInfo"]["name"], "stepwise");
    let asked = permissions(&mut client, &["allow_once"]);
    let sid = client.new_session(ws.path()).await;

    let (resp, updates) = client.prompt(&sid, "fix the greeting").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(ws.read("src.txt"), "hello there\n");
    let text = chunks(&updates, "agent_message_chunk");
    assert!(text.contains("Planning.") && text.contains("Done: src.txt says hello there."), "{text}");

    // The plan: every entry after every change.
    let plans = of_kind(&updates, "plan");
    assert_eq!(plans.len(), 2, "{updates:#?}");
    assert_eq!(
        plans[0]["entries"],
        json!([
            {"content": "Edit the file", "priority": "medium", "status": "in_progress"},
            {"content": "Check it", "priority": "medium", "status": "pending"}
        ])
    );
    assert!(plans[1]["entries"].as_array().unwrap().iter().all(|e| e["status"] == "completed"));

    // Tool calls: announced, then finished with their output.
    let calls = of_kind(&updates, "tool_call");
    let kinds: Vec<&str> = calls.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["think", "edit", "read", "execute", "think"]);
    let titles: Vec<&str> = calls.iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(titles[1..4], ["Edit src.txt", "Read src.txt", "Run cat src.txt"]);
    let src = ws.join("src.txt").display().to_string();
    assert_eq!(calls[1]["locations"][0]["path"], src);
    assert_eq!(calls[1]["rawInput"]["old_text"], "world");
    assert_eq!(calls[1]["status"], "in_progress");
    let finished = finished(&updates);
    assert_eq!(finished.len(), 5);
    for (start, end) in calls.iter().zip(&finished) {
        assert_eq!(start["toolCallId"], end["toolCallId"]);
        assert_eq!(end["status"], "completed", "{end}");
    }
    let edit = &finished[1]["content"];
    assert_eq!(edit[0], json!({"type": "diff", "path": src, "oldText": "hello world\n", "newText": "hello there\n"}));
    assert_eq!(edit[1]["content"]["text"], "Edited src.txt");
    assert_eq!(finished[1]["locations"][0]["line"], 1);
    assert!(finished[2]["content"][0]["content"]["text"].as_str().unwrap().contains("hello there"));
    assert_eq!(finished[3]["content"][0]["content"]["text"], "```\nhello there\n```");

    // The one shell command asked first, naming the call in flight.
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["sessionId"], sid.as_str());
    assert_eq!(asked[0]["toolCall"]["toolCallId"], calls[3]["toolCallId"]);
    let options: Vec<&str> =
        asked[0]["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);

    // The shell command waited for its permission as `pending`, and ran once allowed.
    let bash = calls[3]["toolCallId"].as_str().unwrap();
    assert_eq!(statuses(&updates, bash), ["pending", "in_progress", "completed"]);
    let order: Vec<&str> = client
        .received
        .iter()
        .filter_map(|m| match m["method"].as_str() {
            Some("session/request_permission") => Some("asked"),
            // The announcing `tool_call` carries no status: `pending` is the protocol's default.
            Some("session/update") if m["params"]["update"]["toolCallId"] == bash => {
                Some(m["params"]["update"]["status"].as_str().unwrap_or("pending"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(order, ["pending", "asked", "in_progress", "completed"]);

    let usage = of_kind(&updates, "usage_update");
    assert_eq!(usage.len(), 6);
    assert_eq!(usage[0]["used"], 1240);
    assert_eq!(usage[0]["size"], 200000);
}

#[tokio::test]
async fn permissions_reject_cancel_and_allow_always() {
    let mock = MockModel::start(vec![
        call("bash", json!({"command": "echo zero"})),
        call("bash", json!({"command": "echo one"})),
        call("bash", json!({"command": "echo two"})),
        call("bash", json!({"command": "echo three"})),
        call("write_file", json!({"path": ".env", "content": "X=1\n"})),
        Step::text("ok"),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.initialized().await;
    let asked = permissions(&mut client, &["cancelled", "reject_once", "allow_always"]);
    let sid = client.new_session(ws.path()).await;
    let (resp, updates) = client.prompt(&sid, "run things").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");

    // Cancelled and rejected become the contract's error result, and the turn goes on; after "allow
    // always" nothing is asked again in this session, protected writes included.
    assert_eq!(asked.lock().unwrap().len(), 3);
    let reqs = mock.requests();
    let results: Vec<String> = reqs[1..].iter().map(|r| result_texts(&r.body).join("|")).collect();
    assert_eq!(
        results,
        ["Error: Command denied by the user", "Error: Command denied by the user", "two", "three", "Wrote 4 bytes"]
    );
    let ended: Vec<&str> = finished(&updates).iter().map(|u| u["status"].as_str().unwrap()).collect();
    assert_eq!(ended, ["failed", "failed", "completed", "completed", "completed"]);
    // Each call that asked was `pending` until allowed; the refused ones never ran. Once allowed for the
    // session, a call is announced running: it asks nothing (the protected write included).
    let calls = of_kind(&updates, "tool_call");
    let seen: Vec<Vec<&str>> = calls.iter().map(|c| statuses(&updates, c["toolCallId"].as_str().unwrap())).collect();
    let (asked_then_ran, ran) = (vec!["pending", "in_progress", "completed"], vec!["in_progress", "completed"]);
    assert_eq!(seen, [vec!["pending", "failed"], vec!["pending", "failed"], asked_then_ran, ran.clone(), ran]);
    assert_eq!(ws.read(".env"), "X=1\n");
}

#[tokio::test]
async fn files_go_through_the_client_when_it_offers_them() {
    let mock = MockModel::start(vec![
        call("read_file", json!({"path": "a.txt"})),
        call("edit_file", json!({"path": "a.txt", "old_text": "buffer", "new_text": "edited buffer"})),
        Step::text("done"),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    ws.write("a.txt", "on disk\n");
    let mut client = agent.spawn();
    client.initialize(true, true).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    client.on_request = Box::new(move |method, params| {
        log.lock().unwrap().push((method.to_string(), params.clone()));
        match method {
            "fs/read_text_file" => Ok(json!({"content": "unsaved buffer\n"})),
            "fs/write_text_file" => Ok(json!({})),
            other => Err((-32601, format!("unexpected {other}"))),
        }
    });
    let sid = client.new_session(ws.path()).await;
    let (resp, updates) = client.prompt(&sid, "edit through the editor").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(result_texts(&mock.requests()[1].body), ["unsaved buffer"]);
    let seen = seen.lock().unwrap().clone();
    let methods: Vec<&str> = seen.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["fs/read_text_file", "fs/read_text_file", "fs/write_text_file"]);
    let path = ws.join("a.txt").display().to_string();
    assert_eq!(seen[2].1, json!({"sessionId": sid, "path": path, "content": "unsaved edited buffer\n"}));
    assert_eq!(ws.read("a.txt"), "on disk\n", "the client writes, not the agent");
    let diff = &of_kind(&updates, "tool_call_update")[1]["content"][0];
    assert_eq!(diff["oldText"], "unsaved buffer\n");
}

#[tokio::test]
async fn reminders_are_thoughts_and_cut_calls_are_failed_calls() {
    let mock = MockModel::start(vec![
        call("todo", todo(&[("1", "Read a", "in_progress")])),
        call("read_file", json!({"path": "a.txt"})),
        // Cut by the output limit: never run, answered with an error.
        Turn::default()
            .with_tool("write_file", json!({"path": "b.txt", "content": "half"}))
            .with_stop_reason("max_tokens")
            .into(),
        Step::text("Stopping here."),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-ws", mock).env("STEPWISE_REMINDER_ROUNDS", "1");
    let (ws, mock) = (&agent.ws, &agent.mock);
    ws.write("a.txt", "a\n");
    let (mut client, sid) = agent.session().await;
    let (resp, updates) = client.prompt(&sid, "read a").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");

    // The reminder is shown as a thought, and the model still gets it after the tool results.
    assert_eq!(chunks(&updates, "agent_thought_chunk"), "<reminder>Update your todos.</reminder>");
    let sent = &mock.requests()[2].body;
    let last = sent["messages"].as_array().unwrap().last().unwrap()["content"].as_array().unwrap().clone();
    assert_eq!(last.last().unwrap()["text"], "<reminder>Update your todos.</reminder>");

    // The cut call was never announced as running: one tool_call, already failed.
    let cut = of_kind(&updates, "tool_call").into_iter().find(|c| c["kind"] == "edit").expect("the cut call").clone();
    assert_eq!(cut["status"], "failed");
    assert!(cut["content"][0]["content"]["text"].as_str().unwrap().contains("cut off by the output limit"), "{cut}");
    assert!(!ws.join("b.txt").exists());
}

/// Where the sandbox cannot start, the session's first prompt says so once, and each command asks, as
/// with the sandbox off: never unconfined unasked.
#[tokio::test]
async fn without_a_sandbox_the_session_is_told_once_and_commands_ask() {
    let mock = MockModel::start(vec![
        call("bash", json!({"command": "touch one"})),
        Step::text("one"),
        call("bash", json!({"command": "touch two"})),
        Step::text("two"),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-no-sandbox", mock)
        .env("STEPWISE_SANDBOX", "workspace-write")
        .env(stepwise::sandbox::UNAVAILABLE_ENV, "1");
    let ws = &agent.ws;
    let mut client = agent.initialized().await;
    let asked = permissions(&mut client, &["allow_once", "reject_once"]);
    let sid = client.new_session(ws.path()).await;
    let (_, first) = client.prompt(&sid, "one").await;
    let (_, second) = client.prompt(&sid, "two").await;
    let said = chunks(&first, "agent_message_chunk");
    assert!(said.starts_with("stepwise: the sandbox cannot start here ("), "{said}");
    assert!(said.contains("every shell command asks for approval instead"), "{said}");
    assert!(!chunks(&second, "agent_message_chunk").contains("sandbox"), "said twice");
    let titles: Vec<String> =
        asked.lock().unwrap().iter().map(|p| p["toolCall"]["title"].as_str().unwrap().to_string()).collect();
    let name = ws.path().file_name().unwrap().to_str().unwrap();
    assert_eq!(
        titles,
        [
            format!("stepwise wants to run a shell command in {name}: touch one"),
            format!("stepwise wants to run a shell command in {name}: touch two")
        ]
    );
    assert!(ws.join("one").exists() && !ws.join("two").exists());
}
