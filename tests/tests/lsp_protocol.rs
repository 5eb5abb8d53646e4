//! The protocol edges: malformed input, provider failures and misconfiguration, and the real binary's stdio.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(10);

/// Responses the server sent without a request id (answers to frames it could not read).
fn null_id_errors(ed: &TestEditor) -> Vec<ErrorObj> {
    ed.transcript()
        .into_iter()
        .filter_map(|m| match m {
            Incoming::Response { id: Value::Null, result: Err(e) } => Some(e),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_malformed_messages_get_errors_and_the_server_keeps_serving() {
    let (dir, state) = folder_and_state("malformed");
    let mut ed = editor_without_model(ClientPreset::VsCode, &dir, &state).connect().await;

    // Before initialize, requests are refused.
    let early = ed.request("workspace/executeCommand", json!({"command": "stepwise.plan", "arguments": []})).await;
    assert_eq!(early.unwrap_err().code, -32002);
    ed.initialize().await.unwrap();
    ed.await_handled("workspace/configuration", T).await;
    let ws = ed.folder_uri(0);

    // A body that is not JSON: a parse error (id null), and the connection lives on.
    ed.send_frame(b"{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": ");
    let plan = ed.execute("stepwise.plan", json!({})).await;
    assert_eq!(
        plan.unwrap(),
        json!({"workspace": ws, "session": "main", "items": [], "completed": 0, "total": 0, "revision": 0, "by": "model"})
    );
    let errors = null_id_errors(&ed);
    assert_eq!(errors.iter().map(|e| e.code).collect::<Vec<_>>(), vec![codes::PARSE_ERROR], "{errors:?}");

    // JSON that is no JSON-RPC message: invalid request.
    ed.send_frame(b"[1, 2, 3]");
    ed.send_frame(b"\xff\xfe not utf-8");
    assert!(ed.execute("stepwise.plan", json!({})).await.is_ok());
    let codes_seen: Vec<i64> = null_id_errors(&ed).iter().map(|e| e.code).collect();
    assert_eq!(codes_seen, vec![codes::PARSE_ERROR, codes::INVALID_REQUEST, codes::PARSE_ERROR]);

    // Unknown methods: a request gets MethodNotFound, a notification is ignored.
    let e = ed.request("stepwise/noSuchMethod", json!({})).await.unwrap_err();
    assert_eq!(e.code, codes::METHOD_NOT_FOUND);
    // `$/` requests too (tower-lsp alone would never answer them).
    let e = ed.request("$/noSuchRequest", json!({})).await.unwrap_err();
    assert_eq!(e.code, codes::METHOD_NOT_FOUND, "{e}");
    ed.notify("stepwise/noSuchNotification", json!({"x": 1}));
    ed.notify("$/noSuchNotification", json!({}));

    // Wrong params.
    let e = ed.request("workspace/executeCommand", json!({"command": 5})).await.unwrap_err();
    assert_eq!(e.code, codes::INVALID_PARAMS, "{e}");
    let e = ed.execute("stepwise.run", json!(42)).await.unwrap_err();
    assert_eq!(e.code, codes::INVALID_PARAMS, "{e}");
    let e = ed.execute("stepwise.run", json!({"prompt": "   "})).await.unwrap_err();
    assert_eq!(e.code, codes::INVALID_PARAMS, "{e}");
    let e = ed.execute("stepwise.nope", json!({})).await.unwrap_err();
    assert_eq!(e.code, codes::INVALID_PARAMS, "{e}");
    let e = ed.request("textDocument/codeLens", json!({"textDocument": 7})).await.unwrap_err();
    assert_eq!(e.code, codes::INVALID_PARAMS, "{e}");

    // Unknown workspace folders.
    for cmd in ["stepwise.run", "stepwise.cancel", "stepwise.reset", "stepwise.plan"] {
        let e = ed.execute(cmd, json!({"prompt": "hi", "workspace": "file:///no/such/folder"})).await.unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS, "{cmd}: {e}");
        assert!(e.message.contains("file:///no/such/folder"), "{cmd}: {e}");
    }

    // Still serving.
    assert!(ed.execute("stepwise.plan", json!({"workspace": ws})).await.is_ok());
    assert_eq!(ed.framing_errors(), Vec::<String>::new());
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_provider_error_is_shown_and_the_folder_recovers() {
    let (dir, state) = folder_and_state("401");
    let mock = MockModel::start(vec![Step::http_error(401), Step::text("fine now")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let log = ed.run("first").await;
    assert_eq!(log.reason(), "error");
    let idle = log.idle();
    let message = idle["message"].as_str().unwrap_or_else(|| panic!("idle without message: {idle}"));
    assert!(message.contains("401"), "{message}");
    let shown = ed.await_notification("window/showMessage").await;
    assert_eq!(shown["type"], 1, "{shown}");
    assert!(shown["message"].as_str().unwrap().contains("401"), "{shown}");
    assert_eq!(mock.requests().len(), 1, "a 401 is not retried");

    let log = ed.run("second").await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(log.text(), "fine now");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_missing_model_is_reported_without_calling_the_provider() {
    // The binary, so that no MODEL_ID of the test's own environment can leak in.
    let (dir, state) = folder_and_state("nomodel");
    let mock = MockModel::start(vec![Step::text("configured now")]).await;
    let ed = TestEditor::builder(ClientPreset::VsCode)
        .binary()
        .folder(dir.path())
        .state_dir(state.path())
        .env("ANTHROPIC_BASE_URL", &mock.url())
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .ignore(&TRANSCRIPT)
        .start()
        .await;
    ed.await_handled("workspace/configuration", T).await;
    let log = ed.run("first").await;
    assert_eq!(log.reason(), "error");
    assert!(log.idle()["message"].as_str().unwrap().contains("no model configured"), "{}", log.idle());
    let shown = ed.await_notification("window/showMessage").await;
    assert_eq!(shown["type"], 1);
    assert!(shown["message"].as_str().unwrap().contains("MODEL_ID"), "{shown}");
    assert!(mock.requests().is_empty());

    // The user configures a model; the folder runs fine.
    ed.notify("workspace/didChangeConfiguration", json!({"settings": {"stepwise": {"model": "mock-model"}}}));
    ed.await_handled("workspace/configuration", T).await;
    let log = ed.run("second").await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(mock.requests()[0].body["model"], "mock-model");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_the_binary_speaks_only_lsp_on_stdout() {
    let (dir, state) = folder_and_state("stdio");
    dir.write("a.txt", "alpha\n");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [{"id": "1", "text": "Edit a", "status": "in_progress"}]})),
        Step::tool("edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"})),
        Step::text("done"),
    ])
    .await;
    let mut ed = TestEditor::builder(ClientPreset::VsCode)
        .binary()
        .folder(dir.path())
        .state_dir(state.path())
        .mock_env_only(&mock)
        .ignore(&TRANSCRIPT)
        .start()
        .await;
    assert_eq!(ed.initialize_result()["serverInfo"]["name"], "stepwise");
    ed.await_handled("workspace/configuration", T).await;
    let uri = ed.open("a.txt", "alpha\n");
    let log = ed.run("edit a").await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(log.plans().len(), 1);
    assert_eq!(ed.text(&uri).unwrap(), "beta\n");
    ed.shutdown().await;
    assert!(ed.exit_status().is_some_and(|s| s.success()), "{:?}", ed.exit_status());
    // Every byte of stdout was a well-formed frame holding a JSON-RPC message.
    assert_eq!(ed.framing_errors(), Vec::<String>::new());
    let (bytes, frames) = ed.bytes_read();
    assert!(frames >= 10 && bytes > 1000, "{bytes} bytes in {frames} frames");
    // Logs go to stderr.
    let stderr = ed.stderr();
    assert!(stderr.contains("serving LSP on stdio"), "stderr: {stderr}");
    ed.finish_without_shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_the_binary_accepts_stdio_flags() {
    let bin = stepwise_binary(false);
    for (i, args) in [&["--stdio"][..], &["lsp", "--stdio"][..]].into_iter().enumerate() {
        let (dir, state) = folder_and_state("flags");
        let mut builder =
            TestEditor::builder(ClientPreset::Neovim).binary_at(&bin, args).folder(dir.path()).state_dir(state.path());
        if i == 1 {
            // An older client: only rootUri, no workspaceFolders.
            builder = builder.root_uri_only();
        }
        let mut ed = builder.start().await;
        assert_eq!(ed.initialize_result()["capabilities"]["positionEncoding"], "utf-8", "{args:?}");
        ed.await_handled("workspace/configuration", T).await;
        let plan = ed.execute("stepwise.plan", json!({})).await.unwrap();
        assert_eq!(
            plan,
            json!({"workspace": ed.folder_uri(0), "session": "main", "items": [], "completed": 0, "total": 0, "revision": 0, "by": "model"})
        );
        ed.shutdown().await;
        assert!(ed.exit_status().is_some_and(|s| s.success()), "{args:?}");
        ed.finish_without_shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_exit_is_prompt_while_a_request_to_the_editor_is_unanswered() {
    // An editor that never answers workspace/configuration, and quits right after starting.
    for binary in [false, true] {
        let (dir, state) = folder_and_state("quick-exit");
        let mut b = editor_without_model(ClientPreset::VsCode, &dir, &state)
            .policy("workspace/configuration", Policy::NeverAnswer);
        if binary {
            b = b.binary();
        }
        let mut ed = b.start().await;
        ed.await_handled("workspace/configuration", T).await;
        // The unanswered request holds nothing up.
        assert_eq!(ed.execute("stepwise.plan", json!({})).await.unwrap()["total"], 0);
        let t = std::time::Instant::now();
        assert_eq!(ed.request("shutdown", Value::Null).await, Ok(Value::Null));
        ed.notify("exit", Value::Null);
        assert!(ed.wait_server_exit(Duration::from_secs(9)).await, "binary: {binary}");
        // The configuration request would have held it up for its 10 s timeout.
        assert!(t.elapsed() < Duration::from_secs(5), "exit took {:?} (binary: {binary})", t.elapsed());
        ed.finish_without_shutdown();
    }
}

/// Responses carrying this id, errors only.
fn errors_for(ed: &TestEditor, id: &Value) -> Vec<ErrorObj> {
    ed.transcript()
        .into_iter()
        .filter_map(|m| match m {
            Incoming::Response { id: got, result: Err(e) } if &got == id => Some(e),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_hostile_frames_are_answered_and_bounded() {
    let (dir, state) = folder_and_state("hostile");
    let mut ed = editor_without_model(ClientPreset::VsCode, &dir, &state).connect().await;
    ed.initialize().await.unwrap();
    ed.await_handled("workspace/configuration", T).await;
    // Ids tower-lsp cannot hold are answered under their own id, and the session goes on.
    for raw in ["1.5", "9223372036854775808", "1e300"] {
        ed.send_frame(format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"shutdown"}}"#).as_bytes());
        assert!(ed.execute("stepwise.plan", json!({})).await.is_ok(), "after id {raw}");
        let id: Value = serde_json::from_str(raw).unwrap();
        let errs = errors_for(&ed, &id);
        assert_eq!(errs.len(), 1, "one answer for id {raw}");
        assert_eq!(errs[0].code, codes::INVALID_REQUEST);
    }
    // A request nested deeper than the parser goes keeps its id.
    let deep = format!(r#"{{"jsonrpc":"2.0","id":77,"method":"x","params":{}0{}}}"#, "[".repeat(300), "]".repeat(300));
    ed.send_frame(deep.as_bytes());
    assert!(ed.execute("stepwise.plan", json!({})).await.is_ok());
    assert_eq!(errors_for(&ed, &json!(77)).len(), 1);
    // A header line of 1 MB without an end is skipped in bounded pieces, then a normal frame follows.
    let mut long = vec![b'X'; 1024 * 1024];
    long.extend_from_slice(b": y\r\n\r\n");
    ed.send_raw(&long);
    assert!(ed.execute("stepwise.plan", json!({})).await.is_ok());
    // A Content-Length the server will not allocate: answered (id null), then the input is consumed.
    ed.send_raw(b"Content-Length: 18446744073709551615\r\n\r\n");
    let message = ed
        .await_transcript(T, |transcript| {
            transcript.iter().find_map(|m| match m {
                Incoming::Response { id: Value::Null, result: Err(e) }
                    if e.message.contains("over the 64 MB limit") =>
                {
                    Some(e.message.clone())
                }
                _ => None,
            })
        })
        .await;
    assert!(message.is_some(), "no answer to an oversized frame");
    ed.finish_without_shutdown();
}

/// `workspace/executeCommand` arguments are parsed once, per command: a malformed one is an invalid-params
/// error naming the command and the field, and the server goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_malformed_command_argument_names_the_command_and_the_field() {
    let (dir, state) = folder_and_state("typed-commands");
    let mut ed = editor_without_model(ClientPreset::VsCode, &dir, &state).connect().await;
    ed.initialize().await.unwrap();

    let e = ed.execute("stepwise.rewind", json!({"checkpoint": "1", "restore": "everything"})).await.unwrap_err();
    assert_eq!(e.code, -32602, "{e}");
    assert!(e.message.starts_with("stepwise.rewind: \"restore\": unknown variant \"everything\""), "{e}");
    let e =
        ed.execute("stepwise.review", json!({"path": "a.txt", "action": "keep", "hunks": ["x"]})).await.unwrap_err();
    assert_eq!(e.code, -32602, "{e}");
    assert!(e.message.starts_with("stepwise.review: \"hunks\": invalid type: string \"x\""), "{e}");
    let e = ed.execute("stepwise.run", json!({"workspace": ed.folder_uri(0)})).await.unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (-32602, "stepwise.run: missing field \"prompt\""), "{e}");
    let e =
        ed.execute("stepwise.editPlan", json!({"items": [{"text": "a"}], "baseRevision": "new"})).await.unwrap_err();
    assert!(e.message.starts_with("stepwise.editPlan: \"baseRevision\": invalid type"), "{e}");
    let e = ed.execute("stepwise.plan", json!("file:///w")).await.unwrap_err();
    assert!(e.message.starts_with("stepwise.plan: its argument is an object"), "{e}");

    // Nothing changed, and the server still answers.
    let plan = ed.execute("stepwise.plan", json!({})).await.unwrap();
    assert_eq!((plan["total"].as_u64(), plan["revision"].as_u64()), (Some(0), Some(0)), "{plan}");
    ed.finish().await;
}
