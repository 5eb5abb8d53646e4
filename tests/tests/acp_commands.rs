//! `stepwise acp`'s own slash commands: advertised with `available_commands_update` once a session is
//! ready, and `/compact` run by the agent (a summary request, the conversation rebuilt), never sent to the
//! model as a prompt; other text starting with `/` is an ordinary prompt.

mod common;

use common::{messages, texts};
use serde_json::{json, Value};
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::acp_client::{chunks, of_kind, AcpClient};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;

/// The commands of the `available_commands_update` sent right after `session/new` answered.
async fn advertised_after_new(client: &mut AcpClient, ws: &TempDir) -> (String, Value) {
    let id = client.request("session/new", json!({"cwd": ws.path(), "mcpServers": []})).await;
    let answer = client.response(id).await;
    let sid = answer["result"]["sessionId"].as_str().expect("sessionId").to_string();
    let update = client.until(|m| m["method"] == "session/update").await;
    assert_eq!(update["params"]["sessionId"], sid.as_str());
    assert_eq!(update["params"]["update"]["sessionUpdate"], "available_commands_update", "{update}");
    (sid, update["params"]["update"]["availableCommands"].clone())
}

#[tokio::test]
async fn compact_is_advertised_and_run_by_the_agent_not_the_model() {
    let mock = MockModel::start(vec![
        Step::text("First answer."),
        Step::text("The user asked for a first task; it is done."),
        Step::text("Going on."),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.initialized().await;
    let (sid, commands) = advertised_after_new(&mut client, ws).await;
    // Only what works is offered.
    assert_eq!(
        commands,
        json!([
            {"name": "compact", "description": "Summarise the conversation now to free context; the plan is kept"},
            {"name": "plan", "description": "Show the plan, or replace it: one line per step, [ ] #1: text, [>] in progress, [x] done",
             "input": {"hint": "the plan in its render form (empty: show it)"}},
            {"name": "checkpoints", "description": "List the checkpoints taken before each round, with the files changed since"},
            {"name": "rewind", "description": "Put the files, conversation and plan back as they were at a checkpoint",
             "input": {"hint": "ID [both|files|conversation]"}}
        ])
    );

    let (resp, _) = client.prompt(&sid, "first task").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let (resp, updates) = client.prompt(&sid, "/compact").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let thought = chunks(&updates, "agent_thought_chunk");
    assert!(thought.starts_with("Compacted the conversation to fit the context window: about "), "{thought}");
    let said = chunks(&updates, "agent_message_chunk");
    assert!(said.starts_with("Compacted to about ") && said.ends_with(" tokens."), "{said}");

    // The model was asked for a summary, and never saw `/compact`.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    let asked = &reqs[1].body;
    assert!(asked["tools"].as_array().is_none_or(|t| t.is_empty()), "a summary request offers no tools");
    let said_to_model: Vec<String> = messages(asked).iter().flat_map(texts).collect();
    assert!(!said_to_model.iter().any(|t| t.contains("/compact")), "{said_to_model:?}");
    assert!(said_to_model.last().unwrap().starts_with("Summarise the conversation"), "{said_to_model:?}");

    // The next prompt goes on from the summary.
    let (resp, _) = client.prompt(&sid, "go on").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let sent = &mock.requests()[2].body;
    let first = texts(&messages(sent)[0]).join("");
    assert!(first.starts_with("first task\n\n[Summary of the conversation so far]\nThe user asked"), "{first}");
    assert!(!messages(sent).iter().flat_map(texts).any(|t| t.contains("/compact")));
}

#[tokio::test]
async fn compact_on_a_new_session_and_other_slashes_are_prompts() {
    let mock = MockModel::start(vec![Step::text("A path, then.")]).await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.initialized().await;
    let (sid, _) = advertised_after_new(&mut client, ws).await;

    let (resp, updates) = client.prompt(&sid, "  /compact\n").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(chunks(&updates, "agent_message_chunk"), "Nothing to compact.");
    assert!(mock.requests().is_empty(), "no model request for an empty conversation");

    // Not one of ours: the model gets it as written.
    let (resp, _) = client.prompt(&sid, "/compacted /usr/bin").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let sent = &mock.requests()[0].body;
    assert_eq!(texts(&messages(sent)[0]), ["/compacted /usr/bin"]);
    assert!(of_kind(&client.updates_since(0), "available_commands_update").len() == 1);
}

#[tokio::test]
async fn plan_shows_and_edits_the_plan_and_the_model_is_told_next() {
    let mock = MockModel::start(vec![Step::text("Noted.")]).await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.initialized().await;
    let (sid, _) = advertised_after_new(&mut client, ws).await;

    let (resp, updates) = client.prompt(&sid, "/plan").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(chunks(&updates, "agent_message_chunk"), "No todos.");

    let (resp, updates) = client.prompt(&sid, "/plan [>] Read the code\n[ ] Fix the bug").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let plan = of_kind(&updates, "plan");
    assert_eq!(plan.len(), 1);
    let entries = &plan[0]["entries"];
    assert_eq!(entries[0]["status"], "in_progress");
    assert_eq!(entries[1]["content"], "Fix the bug");
    assert_eq!(
        chunks(&updates, "agent_message_chunk"),
        "[>] #1: Read the code\n[ ] #2: Fix the bug\n\n(0/2 completed)"
    );

    // A broken rule: an error naming it, nothing changed.
    let (resp, _) = client.prompt(&sid, "/plan [>] a\n[>] b").await;
    assert_eq!(resp["error"]["message"], "Error: Only one task can be in_progress at a time", "{resp}");
    assert!(mock.requests().is_empty(), "slash commands never reach the model");

    // The next prompt carries the edit, once, before the prompt.
    let (resp, _) = client.prompt(&sid, "go").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let sent = &mock.requests()[0].body;
    assert_eq!(
        texts(&messages(sent)[0]),
        [
            "<plan-edit>The user changed the plan. It is now:\n[>] #1: Read the code\n[ ] #2: Fix the bug\n\n(0/2 completed)</plan-edit>",
            "go"
        ]
    );
}
