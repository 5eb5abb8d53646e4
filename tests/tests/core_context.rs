//! Long conversations: the provider's context-overflow answer compacts the conversation (a summary in a
//! request without tools) and asks again; a conversation that cannot fit ends the run with a clear error
//! and stays usable; a failed summary falls back to shortening and is reported.

mod common;

use common::*;
use serde_json::{json, Value};
use stepwise_tests::mock::{HttpError, Step};

fn too_long() -> Step {
    HttpError::new(400)
        .body(json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum"}}))
        .into()
}

fn first_text(body: &Value) -> String {
    body["messages"][0]["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn an_overflow_is_compacted_and_asked_again() {
    let mut h = Harness::new(vec![
        call("todo", json!({"items": [{"id": "1", "text": "Finish the report", "status": "in_progress"}]})),
        Step::text("first task done"),
        too_long(),
        Step::text("SUMMARY: the report was started"),
        Step::text("second task done"),
    ])
    .await;
    assert_eq!(h.run("write the report").await.reason, FinishReason::EndTurn);
    let out = h.run("now finish it").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    assert_eq!(out.final_text, "second task done");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 5);
    // The summary request: no tools, the summariser's instructions, the whole conversation before it.
    let summary = &bodies[3];
    assert!(summary.get("tools").is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty())), "{summary}");
    assert!(summary["system"].to_string().contains("summarise"), "{}", summary["system"]);
    assert_valid_conversation(summary);
    // The retry continues from the task, the summary and the plan, with valid call/result pairs.
    let retry = &bodies[4];
    assert_valid_conversation(retry);
    let head = first_text(retry);
    assert!(
        head.starts_with("write the report\n\n[Summary of the conversation so far]\nSUMMARY: the report was started"),
        "{head}"
    );
    assert!(head.contains("[Current plan]\n[>] #1: Finish the report"), "the plan survives: {head}");
    assert!(retry.to_string().contains("now finish it"), "the new prompt is still there");
    let compacted: Vec<Ev> = h.events.events().into_iter().filter(|e| matches!(e, Ev::Compacted { .. })).collect();
    assert!(matches!(compacted.as_slice(), [Ev::Compacted { error: None, .. }]), "{compacted:?}");
    // The plan itself is untouched, and the session holds the compacted conversation.
    assert_eq!(h.session().await.plan.items.len(), 1);
    assert!(h.session().await.messages[0]
        .content
        .iter()
        .any(|b| matches!(b, stepwise::llm::Block::Text { text } if text.contains("SUMMARY"))));
}

#[tokio::test]
async fn a_conversation_that_cannot_fit_ends_clearly_and_stays_usable() {
    let mut h = Harness::new(vec![too_long(), Step::text("SUMMARY"), too_long()]).await;
    let out = h.run("a huge task").await;
    assert_eq!(out.reason, FinishReason::Error);
    let e = out.error.unwrap();
    assert!(e.contains("does not fit the model's context window") && e.contains("even after compaction"), "{e}");
    // A later task in the same conversation works.
    h.mock.push(Step::text("fine now"));
    let out = h.run("something small").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    assert_valid_conversation(&h.body(3));
}

#[tokio::test]
async fn a_failed_summary_falls_back_and_is_reported() {
    let refused = HttpError::new(400)
        .body(json!({"type": "error", "error": {"type": "invalid_request_error", "message": "no summaries today"}}));
    let mut h = Harness::new(vec![too_long(), refused.into(), Step::text("answered anyway")]).await;
    let out = h.run("task").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    let compacted: Vec<Ev> = h.events.events().into_iter().filter(|e| matches!(e, Ev::Compacted { .. })).collect();
    match compacted.as_slice() {
        [Ev::Compacted { error: Some(e), .. }] => assert!(e.contains("no summaries today"), "{e}"),
        other => panic!("expected one compaction with the summary's error: {other:?}"),
    }
}

fn small_window(script: Vec<Step>) -> impl std::future::Future<Output = Harness> {
    Harness::with(stepwise::llm::ProviderKind::Anthropic, script, stepwise::agent::AgentConfig::default(), |p| {
        stepwise::llm::ProviderConfig { context_window: 1000, ..p }
    })
}

#[tokio::test]
async fn passing_the_threshold_shortens_before_the_next_request() {
    use stepwise_tests::mock::Turn;
    // The provider reports 900 of 1000 tokens: past 85%, so the conversation is compacted first. It is
    // small (the estimate is under half the window), so shortening is enough: no summary request.
    let mut h = small_window(vec![
        Turn::default().with_tool("bash", json!({"command": "echo small"})).with_usage(900, 5).into(),
        Step::text("done"),
    ])
    .await;
    let out = h.run("task").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(h.bodies().len(), 2, "no summary was needed");
    let compacted: Vec<Ev> = h.events.events().into_iter().filter(|e| matches!(e, Ev::Compacted { .. })).collect();
    assert!(matches!(compacted.as_slice(), [Ev::Compacted { error: None, .. }]), "{compacted:?}");
}

#[tokio::test]
async fn a_large_conversation_past_the_threshold_is_summarised() {
    use stepwise_tests::mock::Turn;
    let mut h = small_window(vec![
        Turn::default()
            .with_tool("bash", json!({"command": "head -c 4000 /dev/zero | tr '\\0' y"}))
            .with_usage(900, 5)
            .into(),
        Step::text("SUMMARY: printed many y"),
        Step::text("done"),
    ])
    .await;
    let out = h.run("print a lot").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(
        bodies[1].get("tools").is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty())),
        "the summary request has no tools"
    );
    assert!(first_text(&bodies[2]).contains("SUMMARY: printed many y"));
    assert_valid_conversation(&bodies[2]);
}

#[tokio::test]
async fn a_compaction_that_cannot_help_is_not_tried_every_round() {
    use stepwise_tests::mock::Turn;
    // The provider keeps reporting 900 of 1000 tokens (as when the system prompt and tools alone pass
    // the threshold): one compaction, then the rounds go on without one each.
    let tool = |c: &str| Turn::default().with_tool("bash", json!({"command": c})).with_usage(900, 5).into();
    let mut h =
        small_window(vec![tool("echo 1"), tool("echo 2"), tool("echo 3"), tool("echo 4"), Step::text("done")]).await;
    let out = h.run("task").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    let compactions = h.events.events().into_iter().filter(|e| matches!(e, Ev::Compacted { .. })).count();
    assert_eq!(compactions, 1);
    assert_eq!(h.bodies().len(), 5, "no summary requests beyond the rounds");
}
