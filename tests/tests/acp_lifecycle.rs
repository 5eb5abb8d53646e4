//! `stepwise acp` over time: cancelling a prompt mid shell command, the client going away mid run, and
//! a session saved by one agent process loaded (replayed and continued) by the next.

mod common;

use common::{call, messages, read_pid, wait_gone};
use serde_json::{json, Value};
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::acp_client::{chunks, finished, of_kind, AcpClient};
use stepwise_tests::mock::{MockModel, Step, Turn};
use stepwise_tests::TempDir;

fn allow_always(client: &mut AcpClient) {
    client.on_request = Box::new(|method, _| match method {
        "session/request_permission" => Ok(json!({"outcome": {"outcome": "selected", "optionId": "allow_always"}})),
        other => Err((-32601, format!("unexpected {other}"))),
    });
}

/// A shell command that records its own pid and a background child's, then waits.
const LONG_COMMAND: &str = "echo $$ > bash.pid; sleep 300 & echo $! > bg.pid; wait";

/// Sends a prompt whose model runs `LONG_COMMAND`, and returns once both processes are running.
async fn start_long_command(client: &mut AcpClient, ws: &TempDir, sid: &str) -> (i64, i32, i32) {
    let id =
        client.request("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]})).await;
    let ask = client.until(|m| m["method"] == "session/request_permission").await;
    client.answer_if_request(&ask).await;
    (id, read_pid(&ws.join("bash.pid")), read_pid(&ws.join("bg.pid")))
}

#[tokio::test]
async fn cancel_answers_cancelled_kills_the_command_and_keeps_the_conversation() {
    let mock = MockModel::start(vec![call("bash", json!({"command": LONG_COMMAND})), Step::text("Back again.")]).await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.initialized().await;
    allow_always(&mut client);
    let sid = client.new_session(ws.path()).await;
    let (id, shell, bg) = start_long_command(&mut client, ws, &sid).await;

    let from = client.received.len();
    let cancelled_at = std::time::Instant::now();
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let resp = client.response(id).await;
    assert!(cancelled_at.elapsed() < std::time::Duration::from_secs(1), "took {:?}", cancelled_at.elapsed());
    assert_eq!(resp["result"]["stopReason"], "cancelled", "{resp}");
    let updates = client.updates_since(from);
    let done = finished(&updates);
    assert_eq!(done.len(), 1, "{updates:#?}");
    assert_eq!(done[0]["status"], "failed");
    assert!(wait_gone(shell), "the shell {shell} outlived the cancel");
    assert!(wait_gone(bg), "its child {bg} outlived the cancel");

    // The conversation stays valid: the next prompt goes on from it.
    let (resp, updates) = client.prompt(&sid, "go on").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(chunks(&updates, "agent_message_chunk"), "Back again.");
    let sent = mock.requests()[1].body.clone();
    let msgs = messages(&sent);
    let result = &msgs[msgs.len() - 1]["content"][0];
    assert_eq!(result["content"], "Error: Cancelled by the user", "{sent}");
}

#[tokio::test]
async fn a_client_that_goes_away_ends_the_agent_and_its_commands() {
    let mock = MockModel::start(vec![call("bash", json!({"command": LONG_COMMAND}))]).await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let ws = &agent.ws;
    let mut client = agent.initialized().await;
    allow_always(&mut client);
    let sid = client.new_session(ws.path()).await;
    let (_, shell, bg) = start_long_command(&mut client, ws, &sid).await;
    client.close_stdin();
    assert_eq!(client.wait_exit().await, Some(0));
    assert!(wait_gone(shell), "the shell {shell} outlived the agent");
    assert!(wait_gone(bg), "its child {bg} outlived the agent");
}

#[tokio::test]
async fn a_saved_session_is_replayed_and_continued_by_the_next_process() {
    let plan = json!({"items": [{"id": "1", "text": "Say hi", "status": "completed"}]});
    let mock = MockModel::start(vec![
        Turn::text("Planning.").with_tool("todo", plan).into(),
        call("bash", json!({"command": "echo hi"})),
        Step::text("First answer."),
        Step::text("Second answer."),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut first = agent.initialized().await;
    allow_always(&mut first);
    let sid = first.new_session(ws.path()).await;
    let (resp, _) = first.prompt(&sid, "first task").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    first.close_stdin();
    assert_eq!(first.wait_exit().await, Some(0));

    let mut second = agent.initialized().await;
    allow_always(&mut second);
    let unknown =
        second.call_err("session/load", json!({"sessionId": "sw-nope", "cwd": ws.path(), "mcpServers": []})).await;
    assert_eq!(unknown["code"], -32002, "{unknown}");
    let other = TempDir::new("acp-other");
    let wrong = second.call_err("session/load", json!({"sessionId": sid, "cwd": other.path(), "mcpServers": []})).await;
    assert!(wrong["message"].as_str().unwrap().contains("belongs to the folder"), "{wrong}");

    let from = second.received.len();
    let loaded = second.call("session/load", json!({"sessionId": sid, "cwd": ws.path(), "mcpServers": []})).await;
    // Nothing but the session's modes (plan first, docs/acp.md).
    assert_eq!(loaded.as_object().map(|o| o.len()), Some(1), "{loaded}");
    assert_eq!(loaded["modes"]["currentModeId"], "default", "{loaded}");
    let replay = second.updates_since(from);
    // After the answer, the agent's own commands, as for a new session.
    let commands = second.until(|m| m["method"] == "session/update").await;
    assert_eq!(commands["params"]["update"]["sessionUpdate"], "available_commands_update", "{commands}");
    let kinds: Vec<&str> = replay.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
            "plan"
        ]
    );
    assert_eq!(chunks(&replay, "user_message_chunk"), "first task");
    assert_eq!(chunks(&replay, "agent_message_chunk"), "Planning.First answer.");
    let bash = &of_kind(&replay, "tool_call")[1];
    assert_eq!((bash["kind"].as_str(), bash["title"].as_str()), (Some("execute"), Some("Run echo hi")));
    assert_eq!(of_kind(&replay, "tool_call_update")[1]["content"][0]["content"]["text"], "```\nhi\n```");
    assert_eq!(of_kind(&replay, "plan")[0]["entries"][0]["content"], "Say hi");

    let (resp, _) = second.prompt(&sid, "second task").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let sent = mock.requests()[3].body.clone();
    let texts: Vec<Value> = messages(&sent).iter().map(|m| m["content"].clone()).collect();
    assert_eq!(texts.len(), 7, "the whole first task and the second prompt: {sent}");
    assert_eq!(texts[0][0]["text"], "first task");
}

#[tokio::test]
async fn cancel_while_a_permission_question_waits() {
    let mock = MockModel::start(vec![call("bash", json!({"command": "echo never > ran.txt"}))]).await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let ws = &agent.ws;
    let (mut client, sid) = agent.session().await;
    let id =
        client.request("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})).await;
    // The question is left unanswered; the user cancels the turn instead.
    let ask = client.until(|m| m["method"] == "session/request_permission").await;
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let resp = client.until(|m| m["id"] == json!(id) && m.get("method").is_none()).await;
    assert_eq!(resp["result"]["stopReason"], "cancelled", "{resp}");
    // The agent withdrew its question ($/cancel_request), and nothing ran.
    let withdrawn =
        client.received.iter().any(|m| m["method"] == "$/cancel_request" && m["params"]["requestId"] == ask["id"]);
    assert!(withdrawn, "{:#?}", client.received);
    assert!(!ws.join("ran.txt").exists());
}
