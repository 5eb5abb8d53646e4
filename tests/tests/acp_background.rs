//! Background commands over ACP: the task runs under stepwise's own guard (never in a client terminal,
//! though the client offers them) and is shown as a tool call of its own: `in_progress` with its output
//! as it runs, and its end (`failed` for a non-zero exit) even when it ends after the turn, without the
//! model being started for it.

mod common;

use common::call;
use serde_json::{json, Value};
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::mock::{MockModel, Step};

/// The text of every content block of a tool call update.
fn content_text(update: &Value) -> String {
    let blocks = update["content"].as_array().cloned().unwrap_or_default();
    blocks.iter().filter_map(|c| c["content"]["text"].as_str()).collect::<Vec<_>>().join("\n")
}

fn is_task_update(v: &Value) -> bool {
    v["method"] == "session/update"
        && v["params"]["update"]["toolCallId"].as_str().is_some_and(|id| id.starts_with("background-bg-1-"))
}

#[tokio::test]
async fn a_task_is_shown_as_a_tool_call_with_its_output_and_its_end_after_the_turn() {
    let mock = MockModel::start(vec![
        call(
            "background_run",
            json!({"command": "echo serving; while [ ! -f go ]; do sleep 0.05; done; echo bye; exit 3"}),
        ),
        Step::text("started"),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-bg", mock);
    let mut client = agent.with_terminal().await;
    // Where the sandbox is missing the command asks first; either way it is allowed.
    client.on_request = Box::new(|method, params| match method {
        "session/request_permission" => Ok(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})),
        other => panic!("unexpected request {other}: {params}"),
    });
    let sid = client.new_session(agent.ws.path()).await;
    let (resp, updates) = client.prompt(&sid, "start the server").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");

    // Announced as its own call, running, before the turn's answer (a client that leaves once the turn
    // ends still sees it), and its output shown (in the turn or just after it).
    let first = updates
        .iter()
        .find(|u| u["toolCallId"].as_str().is_some_and(|id| id.starts_with("background-bg-1-")))
        .unwrap_or_else(|| panic!("the task was not shown before the turn's answer: {updates:?}"));
    let u = first;
    assert_eq!(u["sessionUpdate"], "tool_call", "{u}");
    assert_eq!(u["kind"], "execute", "{u}");
    assert_eq!(u["status"], "in_progress", "{u}");
    assert_eq!(u["rawInput"]["taskId"], "bg-1", "{u}");
    assert!(u["title"].as_str().unwrap().starts_with("Run in background echo serving"), "{u}");
    let call_id = u["toolCallId"].as_str().unwrap().to_string();
    if !content_text(u).contains("serving") {
        let shown =
            client.until(|v| is_task_update(v) && content_text(&v["params"]["update"]).contains("serving")).await;
        assert_eq!(shown["params"]["update"]["toolCallId"], call_id.as_str());
        assert!(shown["params"]["update"].get("status").is_none_or(|s| s == "in_progress"), "{shown}");
    }

    // It ends after the turn: shown, the model not asked again.
    // The mock records a request once it has answered it.
    let asked = agent.mock.wait_for_requests(2, std::time::Duration::from_secs(10)).await.len();
    std::fs::write(agent.ws.path().join("go"), "").unwrap();
    let end = client.until(|v| is_task_update(v) && v["params"]["update"]["status"].is_string()).await;
    let u = &end["params"]["update"];
    assert_eq!(u["sessionUpdate"], "tool_call_update", "{u}");
    assert_eq!(u["toolCallId"], call_id.as_str());
    assert_eq!(u["status"], "failed", "exit 3 is a failure: {u}");
    assert_eq!(u["rawOutput"]["state"], "exited 3", "{u}");
    let text = content_text(u);
    assert!(text.contains("bye") && text.contains("bg-1: exited 3"), "{text}");
    assert!(u["title"].as_str().unwrap().ends_with("(bg-1: exited 3)"), "{u}");
    assert_eq!(agent.mock.requests().len(), asked, "the model was started for a task's end");

    // Never through the client's terminals.
    let terminal: Vec<&Value> =
        client.received.iter().filter(|m| m["method"].as_str().is_some_and(|m| m.starts_with("terminal/"))).collect();
    assert!(terminal.is_empty(), "a background task went to a client terminal: {terminal:?}");
    client.close_stdin();
    assert_eq!(client.wait_exit().await, Some(0));
}
