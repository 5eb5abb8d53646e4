//! Sessions side by side over ACP (issue 47): two sessions with the same `cwd` run their prompts at the
//! same time, each turn's updates on its own session; one session's cancel leaves the other.

use serde_json::json;
use stepwise_tests::acp_agent::{permissions, ScriptedAgent};
use stepwise_tests::acp_client::{chunks, of_kind};
use stepwise_tests::mock::{MockModel, Step};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_in_one_folder_run_their_prompts_at_the_same_time() {
    let mock = MockModel::start(vec![]).await;
    // Each command waits for the other's marker: neither turn ends unless both run at once.
    let a = "touch a-here; while [ ! -e b-here ]; do sleep 0.02; done; echo a > a.txt";
    let b = "touch b-here; while [ ! -e a-here ]; do sleep 0.02; done; echo b > b.txt";
    mock.route("first task", vec![Step::tool("bash", json!({"command": a})), Step::text("first done")]);
    mock.route("second task", vec![Step::tool("bash", json!({"command": b})), Step::text("second done")]);
    let agent = ScriptedAgent::new("acp-two", mock);
    let mut client = agent.initialized().await;
    // Each session's command is asked about (ACP asks, as the client chose no sandbox here) on its own session.
    let asked = permissions(&mut client, &["allow_once", "allow_once"]);
    let one = client.new_session(agent.ws.path()).await;
    let two = client.new_session(agent.ws.path()).await;
    let first = client
        .request("session/prompt", json!({"sessionId": one, "prompt": [{"type": "text", "text": "first task"}]}))
        .await;
    let second = client
        .request("session/prompt", json!({"sessionId": two, "prompt": [{"type": "text", "text": "second task"}]}))
        .await;
    // The answers come in either order.
    let (mut r1, mut r2) = (None, None);
    while r1.is_none() || r2.is_none() {
        let v = client.until(|v| v.get("method").is_none() && v.get("id").is_some()).await;
        match v["id"].as_i64() {
            Some(id) if id == first => r1 = Some(v),
            Some(id) if id == second => r2 = Some(v),
            _ => {}
        }
    }
    let (r1, r2) = (r1.unwrap(), r2.unwrap());
    assert_eq!(
        (r1["result"]["stopReason"].clone(), r2["result"]["stopReason"].clone()),
        (json!("end_turn"), json!("end_turn"))
    );
    assert_eq!(agent.ws.read("a.txt"), "a\n");
    assert_eq!(agent.ws.read("b.txt"), "b\n");
    // Each session's updates are its own.
    let of = |sid: &str| -> Vec<serde_json::Value> {
        client
            .received
            .iter()
            .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == sid)
            .map(|m| m["params"]["update"].clone())
            .collect()
    };
    let (u1, u2) = (of(&one), of(&two));
    assert_eq!(chunks(&u1, "agent_message_chunk"), "first done");
    assert_eq!(chunks(&u2, "agent_message_chunk"), "second done");
    let calls = |u: &[serde_json::Value]| {
        of_kind(u, "tool_call").iter().map(|c| c["rawInput"]["command"].clone()).collect::<Vec<_>>()
    };
    assert_eq!(calls(&u1), [json!(a)]);
    assert_eq!(calls(&u2), [json!(b)]);
    let mut on: Vec<String> =
        asked.lock().unwrap().iter().map(|p| p["sessionId"].as_str().unwrap().to_string()).collect();
    on.sort();
    let mut both = vec![one.clone(), two.clone()];
    both.sort();
    assert_eq!(on, both);
}
