//! Honest outcomes from real providers' behaviour: replies cut by the output limit, reasoning models'
//! parameter names, cached tokens, servers that answer with something else than the wire format.

mod common;

use common::*;
use serde_json::json;
use stepwise::agent::{AgentConfig, CONTINUE, CUT_CALL};
use stepwise::llm::{ProviderKind, Usage};
use stepwise_tests::mock::{HttpError, Step, Turn};

fn cut(turn: Turn) -> Step {
    turn.with_stop_reason("max_tokens").into()
}

#[tokio::test]
async fn a_cut_tool_call_is_never_run_and_the_model_retries() {
    for kind in [ProviderKind::Anthropic, ProviderKind::Openai] {
        let mut h = Harness::with(
            kind,
            vec![
                cut(Turn::default().with_tool("write_file", json!({"path": "big.txt", "content": "half of it"}))),
                call("write_file", json!({"path": "big.txt", "content": "small"})),
                Step::text("done"),
            ],
            AgentConfig::default(),
            |p| p,
        )
        .await;
        let out = h.run("write a big file").await;
        assert_eq!(out.reason, FinishReason::EndTurn, "{kind:?}");
        // The cut call got an error result and touched nothing; the retry wrote the file.
        let second = h.body(1);
        if kind == ProviderKind::Anthropic {
            let first = results(&second);
            assert_eq!(first.len(), 1);
            assert_eq!(first[0].1, CUT_CALL);
            assert!(first[0].2, "a cut call's result is an error");
            assert_valid_conversation(&h.body(2));
        } else {
            let msgs = second["messages"].as_array().unwrap();
            let tool = msgs.iter().find(|m| m["role"] == "tool").expect("a tool message answers the cut call");
            assert_eq!(tool["content"], CUT_CALL);
        }
        assert_eq!(h.ws.read("big.txt"), "small");
        let finished = h
            .events
            .events()
            .into_iter()
            .any(|e| matches!(e, Ev::ToolFinished { output, is_error: true, .. } if output == CUT_CALL));
        assert!(finished, "the editor sees the cut call as failed");
    }
}

#[tokio::test]
async fn a_cut_text_reply_is_continued_then_ends_with_max_tokens() {
    let mut h = Harness::new(vec![
        cut(Turn::text("The first part")),
        cut(Turn::text(" and the second")),
        cut(Turn::text(" and still more")),
    ])
    .await;
    let out = h.run("write an essay").await;
    assert_eq!(out.reason, FinishReason::MaxTokens);
    assert_eq!(out.reason.as_str(), "max_tokens");
    assert!(out.error.as_deref().is_some_and(|e| e.contains("output limit")), "{:?}", out.error);
    assert_eq!(h.bodies().len(), 3, "two continuations, then the run ends");
    // Each continuation asks the model to go on, after its cut text.
    let body = h.body(1);
    assert_valid_conversation(&body);
    let msgs = messages(&body);
    assert_eq!(texts(&msgs[msgs.len() - 1]), vec![CONTINUE.to_string()]);
    // The conversation stays usable: the next prompt is sent and answered.
    h.mock.push(Step::text("short answer"));
    let out = h.run("shorter please").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_valid_conversation(&h.body(3));
}

#[tokio::test]
async fn a_continued_reply_that_finishes_ends_the_turn() {
    let mut h = Harness::new(vec![cut(Turn::text("Almost")), Step::text(" there.")]).await;
    let out = h.run("say it").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, " there.");
}

#[tokio::test]
async fn openai_length_is_max_tokens() {
    let mut h = Harness::with(
        ProviderKind::Openai,
        vec![cut(Turn::text("a")), cut(Turn::text("b")), cut(Turn::text("c"))],
        AgentConfig::default(),
        |p| p,
    )
    .await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::MaxTokens);
    assert_eq!(h.mock.requests()[0].body.get("max_tokens"), Some(&json!(1024)));
}

#[tokio::test]
async fn an_unknown_stop_reason_is_an_error_and_nothing_runs() {
    let mut h = Harness::new(vec![Turn::default()
        .with_tool("write_file", json!({"path": "x.txt", "content": "x"}))
        .with_stop_reason("refusal")
        .into()])
    .await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::Error);
    assert!(out.error.as_deref().is_some_and(|e| e.contains("'refusal'")), "{:?}", out.error);
    assert!(!h.ws.join("x.txt").exists());
    // The call has its one result, so the next prompt is a valid conversation.
    h.mock.push(Step::text("ok"));
    h.run("again").await;
    assert_valid_conversation(&h.body(1));
}

#[tokio::test]
async fn reasoning_models_get_max_completion_tokens_for_the_session() {
    let refusal = json!({"error": {
        "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}});
    let mut h = Harness::with(
        ProviderKind::Openai,
        vec![HttpError::new(400).body(refusal).into(), Step::text("one"), Step::text("two")],
        AgentConfig::default(),
        |p| p,
    )
    .await;
    assert_eq!(h.run("first").await.reason, FinishReason::EndTurn);
    assert_eq!(h.run("second").await.reason, FinishReason::EndTurn);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3, "one refused request, then one per prompt");
    assert_eq!(bodies[0].get("max_tokens"), Some(&json!(1024)));
    for b in &bodies[1..] {
        assert_eq!(b.get("max_completion_tokens"), Some(&json!(1024)));
        assert_eq!(b.get("max_tokens"), None, "never both");
    }
}

#[tokio::test]
async fn a_plain_400_is_not_retried_with_another_parameter() {
    let other = json!({"error": {"message": "messages: too short", "type": "invalid_request_error"}});
    let mut h = Harness::with(
        ProviderKind::Openai,
        vec![HttpError::new(400).body(other).into()],
        AgentConfig::default(),
        |p| p,
    )
    .await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::Error);
    assert_eq!(h.bodies().len(), 1);
}

#[tokio::test]
async fn connections_are_reused_between_rounds() {
    let mut h = Harness::new(vec![
        call("bash", json!({"command": "echo one"})),
        call("bash", json!({"command": "echo two"})),
        Step::text("done"),
    ])
    .await;
    h.run("x").await;
    assert_eq!(h.bodies().len(), 3);
    assert_eq!(h.mock.connections(), 1, "keep-alive: one connection for three requests");
}

#[tokio::test]
async fn cached_tokens_are_counted_the_same_on_both_wire_formats() {
    for kind in [ProviderKind::Anthropic, ProviderKind::Openai] {
        let mut h = Harness::with(
            kind,
            vec![
                Turn::text("a").with_cache_usage(100, 0, 900, 7).into(),
                Turn::text("b").with_cache_usage(50, 900, 0, 3).into(),
            ],
            AgentConfig::default(),
            |p| p,
        )
        .await;
        h.run("one").await;
        let out = h.run("two").await;
        let rounds: Vec<Usage> = h.events.usages().into_iter().map(|(round, _)| round).collect();
        // The whole prompt is counted as input, cached or not.
        let anthropic = kind == ProviderKind::Anthropic;
        let write = if anthropic { 900 } else { 0 };
        assert_eq!(
            rounds[0],
            Usage { input_tokens: 1000, output_tokens: 7, cache_read_tokens: 0, cache_write_tokens: write },
            "{kind:?}"
        );
        assert_eq!(
            rounds[1],
            Usage { input_tokens: 950, output_tokens: 3, cache_read_tokens: 900, cache_write_tokens: 0 },
            "{kind:?}"
        );
        assert_eq!(out.usage.cache_read_tokens, 900);
    }
}

#[tokio::test]
async fn missing_or_malformed_usage_counts_as_zero() {
    let body = |usage: serde_json::Value| {
        json!({"id": "m", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
               "content": [{"type": "text", "text": "hi"}], "usage": usage})
        .to_string()
    };
    let mut h = Harness::new(vec![
        Step::raw(200, "application/json", body(json!("lots"))),
        Step::raw(200, "application/json", body(json!({"input_tokens": "ten", "output_tokens": -1}))),
    ])
    .await;
    assert_eq!(h.run("a").await.reason, FinishReason::EndTurn);
    let out = h.run("b").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.usage, Usage::default());
}

#[tokio::test]
async fn an_html_page_is_named_as_such() {
    let page = "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>";
    let mut h = Harness::new(vec![Step::raw(200, "text/html", page)]).await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::Error);
    let e = out.error.unwrap();
    assert!(e.contains("HTML page") && e.contains("502 Bad Gateway") && e.contains("text/html"), "{e}");
}

#[tokio::test]
async fn an_event_stream_labelled_json_is_named_as_such() {
    let mut h = Harness::new(vec![Step::raw(200, "application/json", "event: message_start\ndata: {}\n\n")]).await;
    let e = h.run("x").await.error.unwrap();
    assert!(e.contains("event stream") && e.contains("application/json"), "{e}");
}

#[tokio::test]
async fn a_huge_stream_index_is_a_protocol_error_not_a_huge_vector() {
    let anthropic = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\n\
        event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1000000000000,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
    let mut h = Harness::new(vec![Step::raw(200, "text/event-stream", anthropic)]).await;
    let e = h.run("x").await.error.unwrap();
    assert!(e.contains("index 1000000000000 is out of range"), "{e}");

    let openai = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1000000,\"id\":\"c\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]}}]}\n\n";
    let mut h = Harness::with(
        ProviderKind::Openai,
        vec![Step::raw(200, "text/event-stream", openai)],
        AgentConfig::default(),
        |p| p,
    )
    .await;
    let e = h.run("x").await.error.unwrap();
    assert!(e.contains("index 1000000 is out of range"), "{e}");
}
