//! Both wire formats, retries and provider errors, against the mock over loopback HTTP.

mod common;

use common::*;
use serde_json::{json, Value};
use stepwise::agent::AgentConfig;
use stepwise::llm::{ProviderKind, Usage};
use stepwise_tests::mock::{HttpError, Step, Turn};

#[tokio::test]
async fn anthropic_request_shape() {
    let mut h = Harness::new(vec![Step::text("hi")]).await;
    h.run("hello").await;
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("test-key"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body["model"], "mock-model-1");
    assert_eq!(r.body["stream"], json!(true));
    assert_eq!(r.body["max_tokens"], json!(1024));
    assert!(system_text(&r.body).contains(h.ws.path().to_str().unwrap()));
    assert_eq!(r.body["messages"], json!([{"role": "user", "content": [{"type": "text", "text": "hello"}]}]));
    let bash = &r.body["tools"][0];
    assert_eq!(bash["name"], "bash");
    assert_eq!(bash["input_schema"]["required"], json!(["command"]));
}

#[tokio::test]
async fn anthropic_tool_round_trip() {
    let mut h = Harness::new(vec![
        Turn::text("Looking.").with_tool_id("toolu_A", "bash", json!({"command": "echo hi"})).into(),
        Step::text("Saw hi."),
    ])
    .await;
    let out = h.run("look").await;
    assert_eq!(out.final_text, "Saw hi.");
    let body = h.body(1);
    assert_valid_conversation(&body);
    assert_eq!(
        messages(&body)[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_A", "name": "bash", "input": {"command": "echo hi"}}
        ]})
    );
    assert_eq!(
        messages(&body)[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "hi"}]})
    );
}

fn openai_harness_cfg() -> AgentConfig {
    AgentConfig { reminder_rounds: 1, ..AgentConfig::default() }
}

#[tokio::test]
async fn openai_format_round_trip() {
    let mut h = Harness::with(
        ProviderKind::Openai,
        vec![
            Turn::default()
                .with_tool_id("call_1", "bash", json!({"command": "echo hi"}))
                .with_tool_id("call_2", "read_file", json!({"path": "nope/../../x"}))
                .with_usage(11, 4)
                .into(),
            Turn::text("Saw hi.").with_usage(20, 6).into(),
        ],
        openai_harness_cfg(),
        |p| p,
    )
    .await;
    let out = h.run("look").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, "Saw hi.");
    assert_eq!(out.usage, Usage { input_tokens: 31, output_tokens: 10, ..Usage::default() });

    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer test-key"));
    let b0 = &reqs[0].body;
    assert_eq!(b0["stream"], json!(true));
    assert_eq!(b0["stream_options"], json!({"include_usage": true}));
    assert_eq!(b0["tools"][0]["type"], "function");
    assert_eq!(b0["tools"][0]["function"]["name"], "bash");
    assert_eq!(b0["tools"][4]["function"]["name"], "todo");
    assert_eq!(b0["messages"][0]["role"], "system");
    assert_eq!(b0["messages"][1], json!({"role": "user", "content": "look"}));

    let m = reqs[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(m.len(), 6, "{}", serde_json::to_string_pretty(&m).unwrap());
    assert_eq!(m[2]["role"], "assistant");
    assert_eq!(m[2]["content"], Value::Null);
    let tc = m[2]["tool_calls"].as_array().unwrap();
    assert_eq!(tc.len(), 2);
    assert_eq!(tc[0]["id"], "call_1");
    assert_eq!(tc[0]["type"], "function");
    assert_eq!(tc[0]["function"]["name"], "bash");
    let args = tc[0]["function"]["arguments"].as_str().expect("arguments are a JSON string");
    assert_eq!(serde_json::from_str::<Value>(args).unwrap(), json!({"command": "echo hi"}));
    assert_eq!(m[3], json!({"role": "tool", "tool_call_id": "call_1", "content": "hi"}));
    assert_eq!(
        m[4],
        json!({"role": "tool", "tool_call_id": "call_2", "content": "Error: Path escapes workspace: nope/../../x"})
    );
    // The reminder (reminder_rounds 1) follows the tool messages as a user message.
    assert_eq!(m[5], json!({"role": "user", "content": REMINDER}));
}

#[tokio::test]
async fn openai_conversation_continues_across_prompts() {
    let mut h = Harness::with(
        ProviderKind::Openai,
        vec![Turn::text("First.").into(), Step::text("Second.")],
        AgentConfig::default(),
        |p| p,
    )
    .await;
    h.run("one").await;
    h.run("two").await;
    let b = h.body(1);
    let m = b["messages"].as_array().unwrap();
    assert_eq!(
        m[1..],
        [
            json!({"role": "user", "content": "one"}),
            json!({"role": "assistant", "content": "First."}),
            json!({"role": "user", "content": "two"})
        ]
    );
}

#[tokio::test]
async fn retry_after_429() {
    let mut h =
        Harness::new(vec![HttpError::new(429).header("retry-after", "0").into(), Step::text("after the wait")]).await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, "after the wait");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1], "the retry resends the same request");
}

#[tokio::test]
async fn overloaded_529_and_500_are_retried() {
    let mut h = Harness::new(vec![Step::http_error(529), Step::http_error(500), Step::text("up again")]).await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, "up again");
    assert_eq!(h.bodies().len(), 3);
}

#[tokio::test]
async fn retries_give_up_with_the_last_error() {
    let mut h = Harness::with(
        ProviderKind::Anthropic,
        vec![Step::http_error(429), Step::http_error(429), Step::http_error(429), Step::text("too late")],
        AgentConfig::default(),
        |p| stepwise::llm::ProviderConfig { max_retries: 2, ..p },
    )
    .await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::Error);
    let err = out.error.unwrap();
    assert!(err.contains("429"), "{err}");
    assert_eq!(h.bodies().len(), 3, "one try and two retries");
    assert_eq!(h.mock.remaining(), 1);
}

#[tokio::test]
async fn provider_error_reaches_the_user_without_retry() {
    let body = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
    let mut h = Harness::new(vec![HttpError::new(401).body(body).into(), Step::text("must not be reached")]).await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::Error);
    let err = out.error.clone().unwrap();
    assert!(err.contains("401"), "{err}");
    assert!(err.contains("invalid x-api-key"), "{err}");
    assert!(err.contains("anthropic"), "{err}");
    assert!(h.events.events().contains(&Ev::Finished(out)));
    // The prompt stays; a later prompt continues from it, and its request is the model's second: the 401
    // was not retried.
    let out = h.run("again").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, "must not be reached");
    assert_eq!(h.bodies().len(), 2, "401 is not retried");
    assert_eq!(texts(&messages(&h.body(1))[0]), vec!["x", "again"]);
}

#[tokio::test]
async fn openai_error_body_reaches_the_user() {
    let body = json!({"error": {"message": "model 'nope' not found", "type": "invalid_request_error", "param": null, "code": null}});
    let mut h =
        Harness::with(ProviderKind::Openai, vec![HttpError::new(404).body(body).into()], AgentConfig::default(), |p| p)
            .await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::Error);
    let err = out.error.unwrap();
    assert!(err.contains("404") && err.contains("model 'nope' not found"), "{err}");
    assert_eq!(h.bodies().len(), 1);
}

#[tokio::test]
async fn cut_stream_is_an_error_not_a_partial_answer() {
    let mut h = Harness::new(vec![Step::stream_error(Some("half an ans"))]).await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::Error);
    let err = out.error.unwrap();
    assert!(err.contains("anthropic"), "{err}");
    // Nothing of the broken answer joins the conversation, and it is not asked again: its text was shown.
    assert_eq!(h.session().await.messages.len(), 1);
    assert_eq!(h.bodies().len(), 1);
}

#[tokio::test]
async fn stream_cut_before_any_text_is_retried() {
    // Nothing of the first answer reached the user, so asking again cannot show anything twice.
    let mut h = Harness::new(vec![Step::stream_error(None), Step::text("second try")]).await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    assert_eq!(out.final_text, "second try");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1], "the retry resends the same request");
}

#[tokio::test]
async fn unreachable_endpoint_is_a_clear_error() {
    // A port nothing listens on: bind, note the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut h = Harness::with(ProviderKind::Anthropic, vec![], AgentConfig::default(), |p| {
        stepwise::llm::ProviderConfig { base_url: format!("http://127.0.0.1:{port}"), max_retries: 1, ..p }
    })
    .await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::Error);
    let err = out.error.unwrap();
    assert!(err.contains("unreachable"), "{err}");
}

#[tokio::test]
async fn retry_after_beyond_a_minute_is_not_waited_for() {
    let mut h = Harness::new(vec![HttpError::new(429).header("retry-after", "3600").into(), Step::text("later")]).await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::Error);
    assert!(out.error.unwrap().contains("429"));
    assert_eq!((h.bodies().len(), h.mock.remaining()), (1, 1));
}

#[tokio::test]
async fn retry_after_in_fractions_and_nonsense() {
    // A fraction of a second is honoured; a value that is not a number falls back to the backoff.
    let mut h = Harness::new(vec![
        HttpError::new(503).header("retry-after", "0.01").into(),
        HttpError::new(429).header("retry-after", "soon").into(),
        Step::text("back"),
    ])
    .await;
    let out = h.run("x").await;
    assert_eq!(out.final_text, "back");
    assert_eq!(h.bodies().len(), 3);
}
