//! `stepwise acp` and bad input: malformed JSON, unknown methods and sessions, bad folders, a prompt
//! while one runs, and runs that end badly (model error, loop, round cap, output limit). Each gets an
//! answer, and the agent keeps serving.

mod common;

use common::call;
use serde_json::json;
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::acp_client::chunks;
use stepwise_tests::mock::{MockModel, Step, Turn};

/// The agent's set-up, without retries (errors show at once).
fn no_retries(tag: &str, mock: MockModel) -> ScriptedAgent {
    ScriptedAgent::new(tag, mock).env("STEPWISE_MAX_RETRIES", "0")
}

#[tokio::test]
async fn bad_input_gets_json_rpc_errors_and_the_agent_keeps_serving() {
    let mock = MockModel::start(Vec::<Step>::new()).await;
    let agent = no_retries("acp-ws", mock);
    let ws = &agent.ws;
    ws.write("file.txt", "not a folder");
    let mut client = agent.initialized().await;

    client.send_line("{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": ").await;
    let parse = client.next_raw().await.expect("an answer");
    assert_eq!(parse["id"], json!(null));
    assert_eq!(parse["error"]["code"], -32700, "{parse}");

    // Bytes that are not UTF-8, and a line over the 64 MiB limit (skipped unread): parse errors too.
    client.send_bytes(b"\xff\xfe{\"jsonrpc\"\n").await;
    let bad_utf8 = client.next_raw().await.expect("an answer");
    assert_eq!(bad_utf8["error"]["code"], -32700, "{bad_utf8}");
    client.send_bytes(&vec![b'x'; 65 * 1024 * 1024]).await;
    client.send_bytes(b"\n").await;
    let too_long = client.next_raw().await.expect("an answer");
    assert_eq!(too_long["error"]["code"], -32700);
    assert_eq!(too_long["error"]["data"]["line"], "(a line over 64 MiB, skipped unread)");

    let unknown = client.call_err("stepwise/nothing", json!({})).await;
    assert_eq!(unknown["code"], -32601, "{unknown}");

    let no_session = client
        .call_err("session/prompt", json!({"sessionId": "sw-missing", "prompt": [{"type": "text", "text": "hi"}]}))
        .await;
    assert_eq!(no_session["code"], -32002);
    assert_eq!(no_session["message"], "unknown session id 'sw-missing'");

    for (cwd, says) in [
        (json!("relative/dir"), "cwd must be an absolute path, got 'relative/dir'"),
        (json!("/no/such/folder/anywhere"), "cwd /no/such/folder/anywhere cannot be used"),
        (json!(ws.join("file.txt")), "is not a directory"),
    ] {
        let e = client.call_err("session/new", json!({"cwd": cwd, "mcpServers": []})).await;
        assert_eq!(e["code"], -32602, "{e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{e}");
    }
    let traversal =
        client.call_err("session/load", json!({"sessionId": "../../etc/x", "cwd": ws.path(), "mcpServers": []})).await;
    assert_eq!(traversal["code"], -32002, "{traversal}");
    let missing = client.call_err("session/new", json!({})).await;
    assert_eq!(missing["code"], -32602, "{missing}");

    // Still serving.
    let sid = client.new_session(ws.path()).await;
    assert!(sid.starts_with("sw-"));
    client.close_stdin();
    assert_eq!(client.wait_exit().await, Some(0));
}

#[tokio::test]
async fn runs_that_end_badly_say_why() {
    let cut = || -> Step { Turn::text("cut ").with_stop_reason("max_tokens").into() };
    let mock = MockModel::start(vec![
        // A model error: a message chunk saying why, and a JSON-RPC error.
        Step::http_error(400),
        // A loop: the same call twice in a row.
        call("todo", json!({"items": [{"id": "1", "text": "Loop", "status": "in_progress"}]})),
        call("write_file", json!({"path": "a.txt", "content": "x"})),
        call("write_file", json!({"path": "a.txt", "content": "x"})),
        // The output limit, three times in a row.
        cut(),
        cut(),
        cut(),
    ])
    .await;
    let agent = no_retries("acp-ws", mock);
    let (mut client, sid) = agent.session().await;

    let (resp, updates) = client.prompt(&sid, "fail").await;
    assert_eq!(resp["error"]["code"], -32603, "{resp}");
    let why = resp["error"]["message"].as_str().unwrap();
    assert!(why.contains("400"), "{resp}");
    assert!(chunks(&updates, "agent_message_chunk").contains(why), "{updates:#?}");

    let (resp, updates) = client.prompt(&sid, "loop").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert!(chunks(&updates, "agent_message_chunk").contains("repeated the same tool call"), "{updates:#?}");

    let (resp, updates) = client.prompt(&sid, "talk a lot").await;
    assert_eq!(resp["result"]["stopReason"], "max_tokens", "{resp}");
    assert!(chunks(&updates, "agent_message_chunk").contains("output limit"), "{updates:#?}");
}

#[tokio::test]
async fn the_round_cap_is_max_turn_requests_and_one_prompt_runs_at_a_time() {
    let mock = MockModel::start(vec![call("read_file", json!({"path": "missing.txt"})), Step::Hang]).await;
    let agent = no_retries("acp-ws", mock).env("STEPWISE_MAX_ROUNDS", "1");
    let mock = &agent.mock;
    let (mut client, sid) = agent.session().await;
    let (resp, updates) = client.prompt(&sid, "read").await;
    assert_eq!(resp["result"]["stopReason"], "max_turn_requests", "{resp}");
    assert!(chunks(&updates, "agent_message_chunk").contains("round cap (1)"), "{updates:#?}");

    // A second prompt while the first one waits for the model is refused; the first goes on (until
    // cancelled: this model never answers).
    let first =
        client.request("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": "a"}]})).await;
    mock.wait_for_requests(2, std::time::Duration::from_secs(10)).await;
    let busy =
        client.call_err("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": "b"}]})).await;
    assert_eq!(busy["code"], -32600, "{busy}");
    assert!(busy["message"].as_str().unwrap().contains("already running"), "{busy}");
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let done = client.response(first).await;
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
}

#[tokio::test]
async fn a_panicking_run_answers_its_prompt_and_frees_the_session() {
    let mock = MockModel::start(vec![Step::text("Still here.")]).await;
    let agent = no_retries("acp-ws", mock);
    let (mut client, sid) = agent.session().await;
    // A prompt that makes a debug build's run panic (see prompt::run).
    let (resp, _) = client.prompt(&sid, "__stepwise_test_panic__").await;
    assert_eq!(resp["error"]["code"], -32603, "{resp}");
    assert!(resp["error"]["message"].as_str().unwrap().contains("the run panicked"), "{resp}");
    let (resp, updates) = client.prompt(&sid, "hello").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(chunks(&updates, "agent_message_chunk"), "Still here.");
}
