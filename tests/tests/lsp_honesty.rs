//! The sidecar reports what really happened: the output limit, a silent model, token and context use.

use std::time::Duration;

use serde_json::json;
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step, Turn};

const T: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_output_limit_ends_the_run_with_max_tokens() {
    let (dir, state) = folder_and_state("max-tokens");
    let cut = |t: &str| Step::Turn(Turn::text(t).with_stop_reason("max_tokens"));
    let mock = MockModel::start(vec![cut("one"), cut("two"), cut("three")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let log = ed.run("write a lot").await;
    assert_eq!(log.reason(), "max_tokens");
    let idle = log.idle();
    assert!(idle["message"].as_str().is_some_and(|m| m.contains("output limit")), "{idle}");
    let shown = ed.await_notification("window/showMessage").await;
    assert!(shown["message"].as_str().is_some_and(|m| m.contains("output limit")), "{shown}");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_honours_stepwise_model_timeout() {
    let (dir, state) = folder_and_state("model-timeout");
    let mock = MockModel::start(vec![Step::Hang]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .binary()
        .env("STEPWISE_MODEL_TIMEOUT", "1")
        .env("STEPWISE_MAX_RETRIES", "0")
        .timeout(T)
        .start()
        .await;
    let log = ed.run("anyone there?").await;
    assert_eq!(log.reason(), "error");
    let message = log.idle()["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("1s") && message.contains("STEPWISE_MODEL_TIMEOUT"), "{message}");
    assert_eq!(ed.await_notification("window/showMessage").await["message"], format!("stepwise: {message}"));
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_bad_numbers_in_the_environment_are_named() {
    let (dir, state) = folder_and_state("bad-retries");
    let mock = MockModel::start(vec![Step::text("never asked")]).await;
    let ed =
        editor(ClientPreset::VsCode, &dir, &state, &mock).binary().env("STEPWISE_MAX_RETRIES", "many").start().await;
    let log = ed.run("x").await;
    assert_eq!(log.reason(), "error");
    assert_eq!(log.idle()["message"], "STEPWISE_MAX_RETRIES must be a whole number, got 'many'");
    assert!(mock.requests().is_empty(), "nothing is sent with a bad setting");
    let shown = ed.await_notification("window/showMessage").await;
    assert_eq!(shown["message"], "stepwise: STEPWISE_MAX_RETRIES must be a whole number, got 'many'");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_usage_reports_cache_and_context() {
    let (dir, state) = folder_and_state("usage");
    let mock = MockModel::start(vec![Step::Turn(Turn::text("hi").with_cache_usage(100, 5000, 900, 12))]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).option("contextWindow", json!(10000)).start().await;
    let ws = ed.folder_uri(0);
    let log = ed.run("hello").await;
    let usage = log.usage();
    assert_eq!(usage.len(), 1);
    let u = &usage[0];
    assert_eq!(u["workspace"], ws.as_str());
    assert_eq!(u["inputTokens"], 6000, "the whole prompt, cached or not");
    assert_eq!(u["outputTokens"], 12);
    assert_eq!(u["cacheReadTokens"], 5000);
    assert_eq!(u["cacheWriteTokens"], 900);
    assert_eq!(u["contextTokens"], 6000);
    assert_eq!(u["contextWindow"], 10000);
    assert_eq!(u["runInputTokens"], 6000);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_protected_writes_are_approved_through_the_editor() {
    let (dir, state) = folder_and_state("protected");
    let mock = MockModel::start(vec![
        Step::tool("write_file", json!({"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\nid\n"})),
        Step::tool("write_file", json!({"path": ".env", "content": "MODEL_ID=x\n"})),
        Step::text("done"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .policy("workspace/applyEdit", Policy::ApplyEdits)
        .ignore(&["stepwise/toolCall", "stepwise/assistantText", "stepwise/usage", "$/progress"])
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "plant a hook").await;
    let (id, params) = ed.await_request("window/showMessageRequest", T).await;
    let folder = dir.path().file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        params["message"],
        format!("stepwise wants to write .git/hooks/post-checkout in {folder} (inside .git/: hooks and config there run commands)")
    );
    ed.respond(&id, json!({"title": "Deny"}));
    let (id, params) = ed.await_request("window/showMessageRequest", T).await;
    assert!(params["message"].as_str().unwrap().contains("write .env in"), "{params}");
    ed.respond(&id, json!({"title": "Allow"}));
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert!(!dir.join(".git/hooks/post-checkout").exists(), "a denied write touches nothing");
    let results = mock.wait_for_requests(3, T).await;
    let denied = &results[1].body["messages"][2]["content"][0];
    assert_eq!(denied["is_error"], true);
    assert!(denied["content"]
        .as_str()
        .unwrap()
        .starts_with("Error: Write to .git/hooks/post-checkout denied by the user"));
    let allowed = &results[2].body["messages"][4]["content"][0];
    assert_eq!(allowed["content"], "Wrote 11 bytes");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_panicking_run_frees_its_folder_and_says_so() {
    let (dir, state) = folder_and_state("panic");
    let mock = MockModel::start(vec![Step::text("after the panic")]).await;
    // The run's progress may or may not have begun before the panic (the editor agrees alongside it).
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&["$/progress"]).start().await;
    let ws = ed.folder_uri(0);
    // A prompt that makes a debug build's run panic (see workspace/run.rs).
    let run = ed.start_run(&ws, "__stepwise_test_panic__").await;
    let idle = ed
        .await_notification_matching("stepwise/status", |s| s["runId"] == run.as_str() && s["state"] == "idle", T)
        .await;
    assert_eq!(idle["reason"], "error");
    let running = ed.await_notification("stepwise/status").await;
    assert_eq!((running["runId"].as_str(), running["state"].as_str()), (Some(run.as_str()), Some("running")));
    assert_eq!(idle["message"], "internal error: the run panicked: test panic requested");
    let shown = ed.await_notification("window/showMessage").await;
    assert!(shown["message"].as_str().unwrap().contains("panicked"), "{shown}");
    // The folder is free: the next run starts and ends normally.
    assert_eq!(ed.run("next").await.reason(), "end_turn");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_one_bad_setting_loses_only_itself() {
    let (dir, state) = folder_and_state("bad-setting");
    let mock = MockModel::start(vec![Step::text("ok")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .settings(json!({"maxRounds": "10", "maxTokens": 33}))
        .start()
        .await;
    let shown = ed.await_notification("window/showMessage").await;
    let text = shown["message"].as_str().unwrap();
    assert!(text.starts_with("stepwise: ignoring the setting maxRounds: invalid type: string \"10\""), "{text}");
    assert_eq!(ed.run("hi").await.reason(), "end_turn");
    assert_eq!(mock.requests()[0].body["max_tokens"], 33, "the good setting is kept");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_stale_changes_are_not_applied() {
    let (dir, state) = folder_and_state("stale");
    dir.write("a.txt", "one\n");
    let mock = MockModel::start(vec![Step::tool("read_file", json!({"path": "a.txt"})), Step::text("read")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let uri = ed.open("a.txt", "one\n");
    assert_eq!(ed.change_full(&uri, "two\n"), 2);
    // A change that claims an older version arrives late: it must not overwrite version 2.
    ed.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 1}, "contentChanges": [{"text": "stale\n"}]}),
    );
    assert_eq!(ed.run("read it").await.reason(), "end_turn");
    let reqs = mock.wait_for_requests(2, T).await;
    assert_eq!(reqs[1].body["messages"][2]["content"][0]["content"], "two");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_compaction_on_demand_and_on_overflow() {
    let (dir, state) = folder_and_state("compact");
    let too_long = stepwise_tests::mock::HttpError::new(400).body(json!({"type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}));
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [{"id": "1", "text": "Keep me", "status": "in_progress"}]})),
        Step::text("planned"),
        Step::text("SUMMARY one"),
        too_long.into(),
        Step::text("SUMMARY two"),
        Step::text("answered after compaction"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    assert_eq!(ed.run("make a plan").await.reason(), "end_turn");
    // On demand: null at once, then the compaction runs as a run of its own.
    assert_eq!(ed.execute("stepwise.compact", json!({"workspace": ws})).await, Ok(serde_json::Value::Null));
    let compacted = ed.await_notification("stepwise/compacted").await;
    assert_eq!(compacted["workspace"], ws.as_str());
    assert!(compacted["tokensBefore"].as_u64().is_some() && compacted["tokensAfter"].as_u64().is_some(), "{compacted}");
    let run = compacted["runId"].as_str().unwrap().to_string();
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    // On overflow: compacted, asked again, and the run ends normally.
    let log = ed.run("go on").await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(log.of("stepwise/compacted").len(), 1);
    let plan = ed.execute("stepwise.plan", json!({})).await.unwrap();
    assert_eq!(plan["items"][0]["text"], "Keep me", "the plan survives compaction");
    let last = mock.wait_for_requests(6, T).await[5].body.clone();
    assert!(last.to_string().contains("SUMMARY two"), "the retry continues from the summary");
    ed.finish().await;
    // The saved session is the compacted conversation.
    let saved: String =
        std::fs::read_dir(state.path()).unwrap().filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok()).collect();
    assert!(saved.contains("SUMMARY two") && saved.contains("Keep me"), "{saved}");
}
