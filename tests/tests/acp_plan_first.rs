//! Plan first over ACP: the session modes `default` and `plan` (`modes` in `session/new`, `session/set_mode`,
//! `current_mode_update`), the permission asked when a plan is ready (approve / approve with fresh context /
//! keep planning), and a prompt in plan mode while a plan waits going to the model as a comment. What the
//! agent sends is read back into the SDK's own types (agent-client-protocol), so it fits the schema.

mod common;

use agent_client_protocol::v1::schema::{NewSessionResponse, RequestPermissionRequest, SessionNotification};
use common::{call, calls};
use serde_json::{json, Value};
use stepwise_tests::acp_agent::{permissions, ScriptedAgent};
use stepwise_tests::acp_client::of_kind;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::sent::{last_user_texts, tool_names};

fn todo(items: &[(&str, &str)]) -> Value {
    json!({"items": items.iter().map(|(id, text)| json!({"id": id, "text": text, "status": "pending"})).collect::<Vec<_>>()})
}

#[tokio::test]
async fn acp_plan_mode_plans_read_only_asks_and_acts_once_approved() {
    let mock = MockModel::start(vec![
        calls(&[
            ("write_file", json!({"path": "a.txt", "content": "too early"})),
            ("bash", json!({"command": "echo x > b.txt"})),
        ]),
        call("todo", todo(&[("1", "Change a.txt")])),
        Step::text("Plan ready."),
        // "Keep planning", then a prompt: a comment, one more planning round.
        call("todo", todo(&[("1", "Change a.txt"), ("2", "Check it")])),
        Step::text("Revised."),
        // Approved with a fresh context.
        call("edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"})),
        Step::text("Done."),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-plan-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    ws.write("a.txt", "alpha\n");
    let mut client = agent.initialized().await;
    let asked = permissions(&mut client, &["keep-planning", "approve-fresh"]);
    let created = client.call("session/new", json!({"cwd": ws.path(), "mcpServers": []})).await;
    let typed: NewSessionResponse = serde_json::from_value(created.clone()).expect("session/new fits the schema");
    let modes = typed.modes.expect("modes in session/new");
    assert_eq!(&*modes.current_mode_id.0, "default");
    let ids: Vec<&str> = modes.available_modes.iter().map(|m| &*m.id.0).collect();
    assert_eq!(ids, ["default", "plan"]);
    let sid = created["sessionId"].as_str().unwrap().to_string();

    let bad = client.call_err("session/set_mode", json!({"sessionId": sid, "modeId": "yolo"})).await;
    assert_eq!(bad["code"], -32602, "{bad}");
    let set = client.call("session/set_mode", json!({"sessionId": sid, "modeId": "plan"})).await;
    assert!(set.is_object(), "{set}");

    let (resp, updates) = client.prompt(&sid, "change a.txt").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(ws.read("a.txt"), "alpha\n", "nothing changes while planning");
    let reqs = mock.requests();
    assert_eq!(tool_names(&reqs[0].body), ["bash", "read_file", "todo", "task"], "the shell only read-only");
    assert!(!ws.join("b.txt").exists(), "the read-only sandbox stopped the command's write");
    let refused = of_kind(&updates, "tool_call_update")
        .into_iter()
        .filter_map(|u| u["content"][0]["content"]["text"].as_str())
        .any(|t| t.starts_with("Error: plan mode: write_file"));
    assert!(refused, "{updates:#?}");
    let shell = of_kind(&updates, "tool_call").into_iter().find(|c| c["kind"] == "execute").cloned().unwrap();
    assert_eq!(shell["status"], "in_progress", "a refused command is not announced as waiting for permission");
    assert!(!ws.join("b.txt").exists());
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1);
        let typed: RequestPermissionRequest = serde_json::from_value(asked[0].clone()).expect("fits the schema");
        let options: Vec<&str> = typed.options.iter().map(|o| &*o.option_id.0).collect();
        assert_eq!(options, ["approve", "approve-fresh", "keep-planning"]);
        assert!(asked[0].to_string().contains("[ ] #1: Change a.txt"), "the plan is shown: {}", asked[0]);
    }

    // Still in plan mode, with the plan waiting: the prompt is a comment on it.
    let (resp, updates) = client.prompt(&sid, "also check it").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let reqs = mock.requests();
    assert_eq!(
        last_user_texts(&reqs[3].body),
        ["<plan-comments>The user commented on your plan. Revise it with the planning tool, then end your turn; you are still planning.\nOn the plan: also check it\n</plan-comments>"]
    );
    // Approved with a fresh context: the mode goes back to default, and the run acts.
    let mode_updates = of_kind(&updates, "current_mode_update");
    assert_eq!(mode_updates.len(), 1, "{updates:#?}");
    assert_eq!(mode_updates[0]["currentModeId"], "default");
    assert_eq!(ws.read("a.txt"), "beta\n");
    let fresh = &reqs[5].body;
    assert_eq!(fresh["messages"].as_array().unwrap().len(), 1, "the task and the plan only");
    let text = &last_user_texts(fresh)[0];
    assert!(text.starts_with("change a.txt\n\n<plan-approved>") && text.contains("[>] #1: Change a.txt"), "{text}");
    for u in &updates {
        let note = json!({"sessionId": sid, "update": u});
        serde_json::from_value::<SessionNotification>(note).expect("every update fits the schema");
    }
}
