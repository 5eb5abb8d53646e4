//! The plan as a shared document (docs/protocol.md, "The plan as a shared document"): the user edits it through
//! `stepwise.editPlan`, the model is told at its next request, and `stepwise.steer` reaches a run.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step, Turn};
use stepwise_tests::sent::last_user_texts;

const T: Duration = Duration::from_secs(10);
/// Long enough that an edit sent once the request has arrived lands while the answer is in flight.
const IN_FLIGHT_MS: u64 = 1500;

fn item(id: &str, text: &str, status: &str) -> Value {
    json!({"id": id, "text": text, "status": status})
}

fn notice(render: &str) -> String {
    format!("<plan-edit>The user changed the plan. It is now:\n{render}</plan-edit>")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_idle_edit_reaches_the_next_prompt_once_and_the_model_keeps_planning_on_it() {
    let (dir, state) = folder_and_state("plan-idle");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [item("1", "Read", "in_progress"), item("2", "Fix", "pending")]})),
        Step::text("planned"),
        // Works on the user's plan: their new step #3 is kept.
        Step::tool(
            "todo",
            json!({"items": [item("1", "Read", "completed"), item("2", "Fix", "in_progress"), item("3", "Write a test", "pending")]}),
        ),
        Step::text("continued"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    assert_eq!(ed.run("plan it").await.reason(), "end_turn");

    // Items form: the user marks #1 done and adds a step after #2 (no id: a new one).
    let edited = ed
        .execute(
            "stepwise.editPlan",
            json!({"workspace": ws, "baseRevision": 1, "items": [
                item("1", "Read", "completed"), item("2", "Fix", "pending"), {"text": "Write a test", "status": "pending"}
            ]}),
        )
        .await
        .unwrap();
    assert_eq!(edited["revision"], 2);
    assert_eq!(edited["total"], 3);
    assert_eq!(edited["completed"], 1);
    assert_eq!(edited["items"][2], item("3", "Write a test", "pending"));
    let note = ed.await_notification("stepwise/plan").await;
    assert_eq!((note["by"].as_str(), note["revision"].as_u64()), (Some("user"), Some(2)));
    assert_eq!(note["items"], edited["items"]);

    let log = ed.run("go on").await;
    assert_eq!(log.reason(), "end_turn");
    let reqs = mock.requests();
    let render = "[x] #1: Read\n[ ] #2: Fix\n[ ] #3: Write a test\n\n(1/3 completed)";
    // The notice goes with the prompt, before it, as a text block of the user's turn; once.
    assert_eq!(last_user_texts(&reqs[2].body), [notice(render), "go on".to_string()]);
    let all = serde_json::to_string(&reqs[3].body).unwrap();
    assert_eq!(all.matches("<plan-edit>").count(), 1, "told once, kept in the history");
    // The model's own update after the edit applies (revision 3, by the model).
    let plans = log.plans();
    assert_eq!((plans[0]["by"].as_str(), plans[0]["revision"].as_u64()), (Some("model"), Some(3)));
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_the_rules_and_the_revision_guard_the_users_edit() {
    let (dir, state) = folder_and_state("plan-rules");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [item("1", "Read", "in_progress")]})),
        Step::text("planned"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    assert_eq!(ed.run("plan it").await.reason(), "end_turn");
    let before = ed.execute("stepwise.plan", json!({})).await.unwrap();

    let two = ed.execute("stepwise.editPlan", json!({"text": "[>] #1: Read\n[>] Fix"})).await.unwrap_err();
    assert_eq!(two.message, "Error: Only one task can be in_progress at a time");
    let empty = ed.execute("stepwise.editPlan", json!({"items": [{"text": "  ", "status": "pending"}]})).await;
    assert_eq!(empty.unwrap_err().message, "Error: Item 2: text required");
    let status = ed.execute("stepwise.editPlan", json!({"items": [item("1", "Read", "done")]})).await;
    assert_eq!(status.unwrap_err().message, "Error: Item 1: invalid status 'done'");
    let many: String = (0..21).map(|i| format!("step {i}\n")).collect();
    let many = ed.execute("stepwise.editPlan", json!({"text": many})).await.unwrap_err();
    assert_eq!(many.message, "Error: Max 20 todos allowed");
    // The plan moved on since revision 0 (the model's update made it 1).
    let stale = ed.execute("stepwise.editPlan", json!({"baseRevision": 0, "text": "[ ] new"})).await.unwrap_err();
    assert!(stale.message.contains("changed"), "{}", stale.message);
    let neither = ed.execute("stepwise.editPlan", json!({})).await.unwrap_err();
    assert_eq!(neither.code, -32602);

    assert_eq!(ed.execute("stepwise.plan", json!({})).await.unwrap(), before, "nothing changed");

    // The render form, lines without an id are new items; the count line is ignored.
    let text = "[x] #1: Read\n[>] Fix the parser\n\n(0/1 completed)\n";
    let ok = ed.execute("stepwise.editPlan", json!({"text": text, "baseRevision": 1})).await.unwrap();
    assert_eq!(ok["items"], json!([item("1", "Read", "completed"), item("2", "Fix the parser", "in_progress")]));
    assert_eq!(ok["revision"], 2);
    // The first plan notification since the run is this edit's: the refused ones sent none.
    let note = ed.await_notification("stepwise/plan").await;
    assert_eq!((note["revision"].as_u64(), note["by"].as_str()), (Some(2), Some("user")));
    assert!(ed.drain("stepwise/plan").is_empty());
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_edit_while_the_answer_is_in_flight_is_never_overwritten_unseen() {
    let (dir, state) = folder_and_state("plan-flight");
    let model_plan = json!({"items": [item("1", "Model step", "in_progress")]});
    let mock = MockModel::start(vec![
        // The model rewrites the whole list without having seen the user's edit: refused, with the plan.
        Step::Turn(Turn::default().with_tool("todo", model_plan.clone()).with_delay_ms(IN_FLIGHT_MS)),
        Step::tool("todo", json!({"items": [item("1", "User step", "in_progress")]})),
        Step::text("done"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "work").await;
    mock.wait_for_requests(1, T).await;
    ed.execute("stepwise.editPlan", json!({"text": "[ ] User step"})).await.unwrap();
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");

    let reqs = mock.requests();
    let refused = &reqs[1].body["messages"].as_array().unwrap().last().unwrap()["content"][0];
    assert_eq!(refused["is_error"], true);
    let text = refused["content"].as_str().unwrap();
    assert!(text.contains("The user changed the plan while you were working"), "{text}");
    assert!(text.contains("[ ] #1: User step"), "{text}");
    // The refusal told the model: no separate notice follows.
    let all = serde_json::to_string(&reqs[2].body).unwrap();
    assert!(!all.contains("<plan-edit>"), "{all}");
    let plan = ed.execute("stepwise.plan", json!({})).await.unwrap();
    assert_eq!(plan["items"], json!([item("1", "User step", "in_progress")]));
    assert_eq!(plan["revision"], 2);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_mid_run_edit_and_a_steer_reach_the_next_request() {
    let (dir, state) = folder_and_state("plan-steer");
    dir.write("a.txt", "alpha\n");
    let mock = MockModel::start(vec![
        Step::Turn(Turn::default().with_tool("read_file", json!({"path": "a.txt"})).with_delay_ms(IN_FLIGHT_MS)),
        Step::text("steered"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "read it").await;
    mock.wait_for_requests(1, T).await;
    ed.execute("stepwise.editPlan", json!({"text": "[>] Read a.txt"})).await.unwrap();
    assert_eq!(ed.execute("stepwise.steer", json!({"text": "Also check b.txt, please."})).await, Ok(Value::Null));
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "no run of its own for a steer that reached a running one");
    let texts = last_user_texts(&reqs[1].body);
    assert_eq!(
        texts,
        [notice("[>] #1: Read a.txt\n\n(0/1 completed)"), "Also check b.txt, please.".to_string()],
        "after the tool results, in the same user turn"
    );
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_steer_with_no_run_starts_one_and_an_empty_one_is_refused() {
    let (dir, state) = folder_and_state("steer-idle");
    let mock = MockModel::start(vec![Step::text("on it")]).await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    assert_eq!(ed.execute("stepwise.steer", json!({"text": "  "})).await.unwrap_err().code, -32602);
    assert_eq!(ed.execute("stepwise.steer", json!({"workspace": ws, "text": "Tidy up"})).await, Ok(Value::Null));
    let running = ed.await_notification("stepwise/status").await;
    assert_eq!(running["state"], "running");
    let run = running["runId"].as_str().unwrap().to_string();
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(last_user_texts(&mock.requests()[0].body), ["Tidy up"]);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_restart_keeps_the_revision() {
    let (dir, state) = folder_and_state("plan-restart");
    let mock = MockModel::start(vec![]).await;
    let first = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    first.execute("stepwise.editPlan", json!({"text": "[ ] one\n[ ] two"})).await.unwrap();
    first.execute("stepwise.editPlan", json!({"text": "[x] #1: one\n[ ] #2: two", "baseRevision": 1})).await.unwrap();
    first.await_notification("stepwise/plan").await;
    first.await_notification("stepwise/plan").await;
    first.finish().await;

    let second = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let restored = second.await_notification("stepwise/plan").await;
    assert_eq!(restored["revision"], 2);
    assert_eq!(restored["items"], json!([item("1", "one", "completed"), item("2", "two", "pending")]));
    let stale = second.execute("stepwise.editPlan", json!({"text": "[ ] x", "baseRevision": 1})).await;
    assert!(stale.unwrap_err().message.contains("changed"));
    second.finish().await;
}
