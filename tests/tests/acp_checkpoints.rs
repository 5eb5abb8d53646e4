//! `stepwise acp`'s `/checkpoints` and `/rewind ID` (issue 20): run by the agent, never sent to the model.

mod common;

use common::call;
use serde_json::json;
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::acp_client::chunks;
use stepwise_tests::mock::{MockModel, Step};

#[tokio::test]
async fn checkpoints_are_listed_and_rewound_by_slash_commands() {
    let mock = MockModel::start(vec![
        call("write_file", json!({"path": "notes.txt", "content": "v1\n"})),
        Step::text("Done."),
        Step::text("Again."),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-cp", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    ws.write("notes.txt", "v0\n");
    let (mut client, sid) = agent.session().await;
    let (resp, _) = client.prompt(&sid, "task one").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(ws.read("notes.txt"), "v1\n");

    let (resp, updates) = client.prompt(&sid, "/checkpoints").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let listed = chunks(&updates, "agent_message_chunk");
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(lines[0].starts_with("1  round 1 of \"task one\"") && lines[0].ends_with("files changed since: notes.txt"));
    assert!(lines[1].starts_with("2  round 2 of \"task one\"") && lines[1].ends_with("no files changed since"));

    let (resp, updates) = client.prompt(&sid, "/rewind 1").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let said = chunks(&updates, "agent_message_chunk");
    assert_eq!(said, "Rewound to checkpoint 1; put back: notes.txt; the conversation and plan are as they were.");
    assert_eq!(ws.read("notes.txt"), "v0\n");

    let (resp, updates) = client.prompt(&sid, "/rewind 1").await;
    assert!(resp["error"]["message"].as_str().is_some_and(|m| m.contains("No checkpoint 1")), "{resp}");
    assert!(chunks(&updates, "agent_message_chunk").contains("No checkpoint 1"));

    // The model never saw the commands, and the next prompt starts from the conversation before task one.
    let (resp, _) = client.prompt(&sid, "task two").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let sent = reqs[2].body["messages"].to_string();
    assert!(sent.contains("task two") && !sent.contains("task one") && !sent.contains("/rewind"), "{sent}");
}
