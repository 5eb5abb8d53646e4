//! Subagents over ACP: to a client that understands subagent sessions, each child is a session of its own,
//! announced on its parent with `subagent_update` before any of its traffic, its calls on it, its question
//! asked on it and naming it, `session/cancel` with its id ending it alone; to any other client a child's
//! calls are its parent's, titled and marked for the child.

use serde_json::{json, Value};
use stepwise_tests::acp_agent::{permissions, ScriptedAgent};
use stepwise_tests::mock::{MockModel, Step, Turn};

/// `(sessionId, update)` of every `session/update` the agent sent.
fn updates(received: &[Value]) -> Vec<(String, Value)> {
    received
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| (m["params"]["sessionId"].as_str().unwrap_or("").to_string(), m["params"]["update"].clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_is_a_session_of_its_own_announced_first_asking_on_it_and_stoppable_alone() {
    let both = Turn::default()
        .with_tool_id("ta", "task", json!({"prompt": "CHILD-A: wait", "description": "waits"}))
        .with_tool_id("tb", "task", json!({"prompt": "CHILD-B: make", "description": "makes b.txt"}));
    let mock = MockModel::start(vec![both.into(), Step::text("parent done")]).await;
    mock.route(
        "CHILD-A",
        vec![Step::tool("bash", json!({"command": "sleep 30"})), Step::text("Stopped while waiting.")],
    );
    mock.route("CHILD-B", vec![Step::tool("bash", json!({"command": "echo b > b.txt"})), Step::text("Made b.txt.")]);
    let agent = ScriptedAgent::new("acp-subagents", mock);
    let mut client = agent.spawn();
    client.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {"subagents": {}}})).await;
    let asked = permissions(&mut client, &["allow_once", "allow_once"]);
    let session = client.new_session(agent.ws.path()).await;
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "two children"}]});
    let turn = client.request("session/prompt", prompt).await;
    let (a, b) = (format!("{session}/sa-1"), format!("{session}/sa-2"));
    // A's command runs: stop A alone with a cancel of its own session.
    let running = |v: &Value| {
        v["method"] == "session/update"
            && v["params"]["sessionId"] == a.as_str()
            && v["params"]["update"]["sessionUpdate"] == "tool_call_update"
            && v["params"]["update"]["status"] == "in_progress"
    };
    client.until(running).await;
    client.notify("session/cancel", json!({"sessionId": a})).await;
    let r = client.response(turn).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "the parent goes on: {r}");

    let all = updates(&client.received);
    // Each child is announced on its parent before anything of its own.
    for child in [&a, &b] {
        let announced = all
            .iter()
            .position(|(s, u)| {
                *s == session && u["sessionUpdate"] == "subagent_update" && u["sessionId"] == child.as_str()
            })
            .unwrap_or_else(|| panic!("{child} announced: {all:?}"));
        let first_own = all.iter().position(|(s, _)| s == child).unwrap_or_else(|| panic!("{child}'s traffic"));
        assert!(announced < first_own, "{child} announced first");
    }
    let own_calls: Vec<&Value> =
        all.iter().filter(|(s, u)| *s == b && u["sessionUpdate"] == "tool_call").map(|(_, u)| u).collect();
    assert_eq!(own_calls.len(), 1, "B's command is B's session's call");
    assert!(!all.iter().any(|(s, u)| *s == session
        && u["sessionUpdate"] == "tool_call"
        && u["title"].as_str().is_some_and(|t| t.contains("echo b"))));
    let last_state = |child: &str| {
        all.iter()
            .rev()
            .find(|(s, u)| *s == session && u["sessionUpdate"] == "subagent_update" && u["sessionId"] == child)
            .map(|(_, u)| u["state"].clone())
            .unwrap()
    };
    assert_eq!(last_state(&a), json!({"state": "idle", "stopReason": "cancelled"}));
    assert_eq!(last_state(&b), json!({"state": "idle", "stopReason": "end_turn"}));
    let announced =
        all.iter().find(|(_, u)| u["sessionUpdate"] == "subagent_update" && u["sessionId"] == b.as_str()).unwrap();
    assert_eq!(
        (announced.1["title"].as_str(), announced.1["capabilities"]["cancel"].is_object()),
        (Some("makes b.txt"), true)
    );

    // Each child's question was asked on its own session, naming it.
    let asked = asked.lock().unwrap().clone();
    let mut on: Vec<String> = asked.iter().map(|p| p["sessionId"].as_str().unwrap().to_string()).collect();
    on.sort();
    assert_eq!(on, [a.clone(), b.clone()]);
    for p in &asked {
        let title = p["toolCall"]["title"].as_str().unwrap();
        assert!(title.starts_with("[subagent sa-"), "{title}");
    }
    assert!(agent.ws.join("b.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_subagent_sessions_gets_the_childs_calls_marked_on_the_parent() {
    let t = Turn::default().with_tool_id("t1", "task", json!({"prompt": "CHILD-R: read", "description": "reads"}));
    let mock = MockModel::start(vec![t.into(), Step::text("done")]).await;
    mock.route("CHILD-R", vec![Step::tool("read_file", json!({"path": "a.txt"})), Step::text("It says hi.")]);
    let agent = ScriptedAgent::new("acp-subagents-plain", mock);
    agent.ws.write("a.txt", "hi\n");
    let (mut client, session) = agent.session().await;
    let (r, _) = client.prompt(&session, "read it through a child").await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let all = updates(&client.received);
    assert!(all.iter().all(|(s, u)| *s == session && u["sessionUpdate"] != "subagent_update"), "one session only");
    let call = all
        .iter()
        .map(|(_, u)| u)
        .find(|u| u["sessionUpdate"] == "tool_call" && u["_meta"]["stepwise"]["subagent"] == "sa-1")
        .unwrap_or_else(|| panic!("the child's call, marked: {all:?}"));
    assert!(call["title"].as_str().unwrap().starts_with("[sa-1] Read a.txt"), "{call}");
    let task = all
        .iter()
        .map(|(_, u)| u)
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "t1" && u["status"] == "completed");
    let text = task.map(|u| u["content"].to_string()).unwrap_or_default();
    assert!(text.contains("It says hi.") && text.contains("(subagent sa-1: 2 rounds"), "{text}");
}
