//! Controlling runs from the editor: cancelling, two folders at once, approving commands, and a
//! restart that restores the plan.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step, Turn};

const T: Duration = Duration::from_secs(10);

/// Waits until the mock is hanging on the first request. The mock records a request before it takes
/// the request's step, so waiting for the request alone could let the next run's request take the
/// `Hang` step.
async fn hanging(mock: &MockModel) {
    mock.wait_for_requests(1, T).await;
    eventually("the mock to take its hang step", T, || mock.remaining() == 1).await;
}

/// Pids of processes whose command line contains `marker`.
fn processes_running(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let is_zombie = std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|s| s.contains(") Z "));
        if !is_zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            out.push(pid);
        }
    }
    out
}

/// Cancels run `run` in `ws` with `stepwise.cancel` (taking `args`) and waits for it: the run ends
/// within 5 s, cancelled.
async fn cancel_promptly(ed: &TestEditor, ws: &str, run: &str, args: Value) -> RunLog {
    let t = Instant::now();
    assert_eq!(ed.execute("stepwise.cancel", args).await, Ok(Value::Null));
    let log = ed.await_run(ws, run, T).await;
    assert!(t.elapsed() < Duration::from_secs(5), "cancel took {:?}", t.elapsed());
    assert_eq!(log.reason(), "cancelled");
    log
}

fn text(s: &str) -> Value {
    json!({"type": "text", "text": s})
}

// ---- cancelling ---------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_cancel_by_command_while_the_model_hangs() {
    let (dir, state) = folder_and_state("cancel-hang");
    let mock = MockModel::start(vec![Step::Hang, Step::text("second answer")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "first").await;
    hanging(&mock).await;
    // The progress is asked of the editor beside the run; under load the cancel can come before it began
    // (then none is begun or ended): wait for its begin, so its end is what this checks.
    ed.await_notification_matching("$/progress", |p| p["value"]["kind"] == "begin", T).await;
    let log = cancel_promptly(&ed, &ws, &run, json!({"workspace": ws})).await;
    assert_eq!(
        log.idle(),
        json!({"workspace": ws, "session": "main", "state": "idle", "runId": run, "reason": "cancelled"})
    );
    assert_eq!(log.progress().last().unwrap()["value"], json!({"kind": "end", "message": "cancelled"}));
    // Cancelling when nothing runs is fine.
    assert_eq!(ed.execute("stepwise.cancel", json!({})).await, Ok(Value::Null));

    let log = ed.run("second").await;
    assert_eq!(log.reason(), "end_turn");
    let reqs = mock.wait_for_requests(2, T).await;
    assert_eq!(reqs[1].body["messages"], json!([{"role": "user", "content": [text("first"), text("second")]}]));
    assert_valid_conversation(&reqs[1].body);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_cancel_by_command_during_a_long_shell_command() {
    let (dir, state) = folder_and_state("cancel-bash");
    // `&&` keeps bash itself running, with the marker in its command line.
    let command = "sleep 30.0271828 && echo late";
    let mock = MockModel::start(vec![Step::tool("bash", json!({ "command": command })), Step::text("after")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("approval", json!("auto"))
        .ignore(&["$/progress", "stepwise/usage", "stepwise/assistantText"])
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "sleep").await;
    let started = ed.await_notification_matching("stepwise/toolCall", |p| p["phase"] == "started", T).await;
    assert_eq!(started["summary"], command);
    eventually("the command to start", T, || !processes_running("30.0271828").is_empty()).await;
    let log = cancel_promptly(&ed, &ws, &run, json!({})).await;
    assert_eq!(log.results(), vec![("bash".to_string(), "Error: Cancelled by the user".to_string(), true)]);
    // The command and its children were killed.
    eventually("the command to be killed", T, || processes_running("30.0271828").is_empty()).await;

    let log = ed.run("next").await;
    assert_eq!(log.reason(), "end_turn");
    let reqs = mock.wait_for_requests(2, T).await;
    let body = &reqs[1].body;
    assert_valid_conversation(body);
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3, "{body}");
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert_eq!(msgs[2]["content"][0]["content"], "Error: Cancelled by the user");
    assert_eq!(msgs[2]["content"][0]["is_error"], true);
    assert_eq!(msgs[2]["content"][1], text("next"));
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_cancel_from_the_progress_ui() {
    let (dir, state) = folder_and_state("cancel-progress");
    let mock = MockModel::start(vec![Step::Hang, Step::text("again")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .ignore(&["stepwise/usage", "stepwise/assistantText", "stepwise/toolCall"])
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "first").await;
    let created = ed.await_handled("window/workDoneProgress/create", T).await;
    let token = created.params["token"].clone();
    assert_eq!(token, json!(format!("stepwise/{run}")));
    let begin = ed.await_notification("$/progress").await;
    assert_eq!(begin["token"], token);
    assert_eq!(begin["value"]["kind"], "begin");
    hanging(&mock).await;
    // A token that is not the run's changes nothing.
    ed.notify("window/workDoneProgress/cancel", json!({"token": "stepwise/run-unknown"}));
    ed.notify("window/workDoneProgress/cancel", json!({"token": 17}));
    let ended =
        ed.try_notification_matching("stepwise/status", |s| s["state"] == "idle", Duration::from_millis(200)).await;
    assert_eq!(ended, None, "another token cancelled the run");
    ed.notify("window/workDoneProgress/cancel", json!({"token": token}));
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "cancelled");
    assert_eq!(log.progress().last().unwrap()["value"], json!({"kind": "end", "message": "cancelled"}));
    let log = ed.run("second").await;
    assert_eq!(log.reason(), "end_turn");
    assert_valid_conversation(&mock.wait_for_requests(2, T).await[1].body);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_cancel_while_waiting_for_approval() {
    let (dir, state) = folder_and_state("cancel-approval");
    let mock = MockModel::start(vec![Step::tool("bash", json!({"command": "echo never"})), Step::text("next")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "ask me").await;
    let (id, _) = ed.await_request("window/showMessageRequest", T).await;
    ed.execute("stepwise.cancel", json!({})).await.unwrap();
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "cancelled");
    let states: Vec<Value> = log.statuses().iter().map(|s| s["state"].clone()).collect();
    assert_eq!(states, vec![json!("running"), json!("waiting"), json!("idle")]);
    // A late answer to the abandoned question changes nothing.
    ed.respond(&id, json!({"title": "Allow"}));
    assert_eq!(ed.run("again").await.reason(), "end_turn");
    let reqs = mock.wait_for_requests(2, T).await;
    assert_valid_conversation(&reqs[1].body);
    assert_eq!(reqs[1].body["messages"][2]["content"][0]["content"], "Error: Cancelled by the user");
    assert!(!dir.join("never").exists());
    ed.finish().await;
}

// ---- two folders --------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_two_folders_run_at_once_without_leaking() {
    let a = TempDir::new("folder-a");
    let b = TempDir::new("folder-b");
    let state = TempDir::new("folders-state");
    let plan_a = json!([{"id": "1", "text": "Work in A", "status": "in_progress"}]);
    let plan_b = json!([{"id": "1", "text": "Work in B", "status": "in_progress"}, {"id": "2", "text": "More B", "status": "pending"}]);
    let mock_a = MockModel::start(vec![
        Step::tool("todo", json!({"items": plan_a})),
        Step::Turn(Turn::text("A done").with_delay_ms(700)),
    ])
    .await;
    let mock_b = MockModel::start(vec![
        Step::Turn(Turn::default().with_tool("todo", json!({"items": plan_b})).with_delay_ms(100)),
        Step::Turn(Turn::text("B done").with_delay_ms(100)),
    ])
    .await;
    // Each folder gets its own model through workspace/configuration; initializationOptions name a
    // model server that must never be called.
    let wrong = MockModel::start(vec![]).await;
    let (uri_a, uri_b) = (file_uri(a.path()), file_uri(b.path()));
    let ed = TestEditor::builder(ClientPreset::VsCode)
        .folder(a.path())
        .folder(b.path())
        .mock(&wrong)
        .state_dir(state.path())
        .policy("workspace/configuration", Policy::Queue)
        .ignore(&TRANSCRIPT)
        .start()
        .await;
    assert_eq!(ed.folder_uri(0), uri_a);

    // Both runs start at once, before the editor has answered the configuration request.
    let run_a = ed.start_run(&uri_a, "work in A").await;
    let run_b = ed.start_run(&uri_b, "work in B").await;
    assert_ne!(run_a, run_b);
    // A second run in a busy folder is refused.
    let e = ed.execute("stepwise.run", json!({"prompt": "again", "workspace": uri_a})).await.unwrap_err();
    assert_eq!(e.code, codes::INVALID_REQUEST);
    assert!(e.message.contains("already in progress"), "{e}");
    assert!(e.message.contains(a.path().to_str().unwrap()), "{e}");
    // The runs wait for the folders' settings: every request goes to the base URL of the answer, none to
    // the one configured before it (checked at the end).
    let (id, params) = ed.await_request("workspace/configuration", T).await;
    assert_eq!((mock_a.requests().len(), mock_b.requests().len()), (0, 0));
    let answer: Vec<Value> = params["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| json!({"baseUrl": if i["scopeUri"] == uri_a.as_str() { mock_a.url() } else { mock_b.url() }}))
        .collect();
    assert_eq!(answer.len(), 2);
    ed.respond(&id, Value::Array(answer));

    let log_b = ed.await_run(&uri_b, &run_b, T).await;
    let log_a = ed.await_run(&uri_a, &run_a, T).await;
    assert_eq!((log_a.reason().as_str(), log_b.reason().as_str()), ("end_turn", "end_turn"));
    assert_eq!(
        log_a.plans(),
        vec![
            json!({"workspace": uri_a, "session": "main", "items": plan_a, "completed": 0, "total": 1, "revision": 1, "by": "model", "change": "update"})
        ]
    );
    assert_eq!(
        log_b.plans(),
        vec![
            json!({"workspace": uri_b, "session": "main", "items": plan_b, "completed": 0, "total": 2, "revision": 1, "by": "model", "change": "update"})
        ]
    );
    assert_eq!(log_a.text(), "A done");
    assert_eq!(log_b.text(), "B done");
    assert_eq!(mock_a.requests().len(), 2);
    assert_eq!(mock_b.requests().len(), 2);
    assert!(wrong.requests().is_empty());

    // The runs overlapped: B started and ended while A ran.
    let statuses = ed.received("stepwise/status");
    let at = |run: &str, state: &str| statuses.iter().position(|s| s["runId"] == run && s["state"] == state).unwrap();
    assert!(at(&run_b, "running") < at(&run_a, "idle"));
    assert!(at(&run_b, "idle") < at(&run_a, "idle"));

    // Each folder's plan and lenses are its own.
    assert_eq!(ed.execute("stepwise.plan", json!({"workspace": uri_b})).await.unwrap()["items"], plan_b);
    assert_eq!(ed.execute("stepwise.plan", json!({})).await.unwrap()["items"], plan_a, "the first folder by default");
    let doc_b = ed.open(b.join("x.txt"), "x\n");
    assert_eq!(ed.lens_titles(&doc_b).await, vec![(0, "stepwise 0/2 · Work in B".to_string())]);
    let doc_a = ed.open(a.join("y.txt"), "y\n");
    assert_eq!(ed.lens_titles(&doc_a).await, vec![(0, "stepwise 0/1 · Work in A".to_string())]);
    ed.finish().await;
}

// ---- approval -----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_shell_commands_are_approved_in_the_editor() {
    let (dir, state) = folder_and_state("approval");
    let bash = |c: &str| Step::tool("bash", json!({"command": c}));
    let mock = MockModel::start(vec![
        bash("echo one"),
        bash("echo two"),
        bash("echo three"),
        bash("echo four"),
        bash("echo five"),
        Step::text("done"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let ws = ed.folder_uri(0);
    let name = dir.path().file_name().unwrap().to_str().unwrap().to_string();
    let run = ed.start_run(&ws, "echo things").await;
    let answers = [
        ("echo one", json!({"title": "Allow"})),
        ("echo two", json!({"title": "Deny"})),
        ("echo three", Value::Null), // dismissed
        ("echo four", json!({"title": "Allow for this session"})),
    ];
    for (command, answer) in answers {
        let (id, params) = ed.await_request("window/showMessageRequest", T).await;
        assert_eq!(params["type"], 2);
        assert_eq!(params["message"], format!("stepwise wants to run a shell command in {name}: {command}"));
        assert_eq!(
            params["actions"],
            json!([{"title": "Allow"}, {"title": "Allow for this session"}, {"title": "Deny"}])
        );
        let waiting = ed.await_notification_matching("stepwise/status", |s| s["state"] == "waiting", T).await;
        assert_eq!(waiting, json!({"workspace": ws, "session": "main", "state": "waiting", "runId": run}));
        ed.respond(&id, answer);
    }
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    // "five" ran without asking.
    // The whole status sequence, including the `waiting` ones read above.
    let states: Vec<String> =
        ed.received("stepwise/status").iter().filter_map(|s| s["state"].as_str().map(String::from)).collect();
    let expected =
        ["running", "waiting", "running", "waiting", "running", "waiting", "running", "waiting", "running", "idle"];
    assert_eq!(states, expected);
    // Each `waiting` reached the editor before the question it waits on.
    let order: Vec<String> = ed
        .transcript()
        .iter()
        .filter_map(|m| match m {
            Incoming::Notification { method, params } if method == "stepwise/status" => {
                Some(params["state"].as_str().unwrap().to_string())
            }
            Incoming::Request { method, .. } if method == "window/showMessageRequest" => Some("ask".into()),
            _ => None,
        })
        .collect();
    let asks: Vec<usize> = order.iter().enumerate().filter(|(_, m)| *m == "ask").map(|(i, _)| i).collect();
    assert_eq!(asks.len(), 4);
    assert!(asks.iter().all(|&i| order[i - 1] == "waiting"), "{order:?}");
    assert_eq!(log.statuses().len(), 6);
    let reqs = mock.wait_for_requests(6, T).await;
    let result = |i: usize| tool_results(&reqs[i].body).remove(0);
    assert_eq!(result(1), ("one".to_string(), false));
    assert_eq!(result(2), ("Error: Command denied by the user".to_string(), true));
    assert_eq!(result(3), ("Error: Command denied by the user".to_string(), true));
    assert_eq!(result(4), ("four".to_string(), false));
    assert_eq!(result(5), ("five".to_string(), false));
    ed.finish().await;
}

// ---- restart ------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_restart_restores_the_plan_and_the_conversation() {
    let (dir, state) = folder_and_state("restart");
    let items = json!([
        {"id": "1", "text": "Survive a restart", "status": "in_progress", "activeForm": "Surviving"},
        {"id": "2", "text": "Carry on", "status": "pending"},
    ]);
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": items})),
        Step::text("before the restart"),
        Step::text("after the restart"),
    ])
    .await;
    let first = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let ws = first.folder_uri(0);
    assert_eq!(first.run("first prompt").await.reason(), "end_turn");
    first.finish().await;

    let second = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let restored = second.await_notification("stepwise/plan").await;
    assert_eq!(
        restored,
        json!({"workspace": ws, "session": "main", "items": items, "completed": 0, "total": 2, "revision": 1, "by": "model"})
    );
    assert_eq!(second.execute("stepwise.plan", json!({})).await.unwrap(), restored);
    let doc = second.open("a.txt", "a\n");
    assert_eq!(second.lens_titles(&doc).await, vec![(0, "stepwise 0/2 · Survive a restart".to_string())]);
    assert_eq!(second.run("second prompt").await.reason(), "end_turn");
    let reqs = mock.wait_for_requests(3, T).await;
    let msgs = reqs[2].body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5, "{msgs:?}");
    assert_eq!(msgs[0]["content"][0], text("first prompt"));
    assert_eq!(msgs[3]["content"][0], text("before the restart"));
    assert_eq!(msgs[4]["content"], json!([text("second prompt")]));
    assert_valid_conversation(&reqs[2].body);
    second.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_corrupt_state_file_is_moved_aside_and_reported() {
    let (dir, state) = folder_and_state("corrupt");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [{"id": "1", "text": "Soon lost", "status": "in_progress"}]})),
        Step::text("saved"),
    ])
    .await;
    // The binary: once it has exited, nothing of it can still be writing the state file.
    let first = editor(ClientPreset::Neovim, &dir, &state, &mock).binary().ignore(&TRANSCRIPT).start().await;
    assert_eq!(first.run("make a plan").await.reason(), "end_turn");
    first.finish().await;
    // The session file (its checkpoints live in a folder of their own next to it).
    let files: Vec<_> = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_none_or(|e| e != "checkpoints"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].extension().is_some_and(|e| e == "json"), "{files:?}");
    std::fs::write(&files[0], "{\"format\": 1, \"session\": [garbage").unwrap();

    let second = editor(ClientPreset::Neovim, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let shown = second.await_notification("window/showMessage").await;
    assert_eq!(shown["type"], 2, "{shown}");
    let message = shown["message"].as_str().unwrap();
    assert!(message.contains("could not be read") && message.contains(".corrupt-"), "{message}");
    let names: Vec<String> = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.contains(".corrupt-")), "{names:?}");
    assert!(!files[0].exists(), "the corrupt file was moved: {names:?}");
    assert_eq!(second.execute("stepwise.plan", json!({})).await.unwrap()["items"], json!([]));
    // No plan was announced for the corrupt session: the first `stepwise/plan` is the reset's, which goes
    // through the same queue after any announcement.
    assert_eq!(second.execute("stepwise.reset", json!({})).await, Ok(Value::Null));
    let first = second.await_notification("stepwise/plan").await;
    assert_eq!(first["items"], json!([]));
    assert_eq!(second.received("stepwise/plan").len(), 1);
    second.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_saved_plan_that_breaks_the_rules_is_not_restored() {
    let (dir, state) = folder_and_state("bad-plan");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [{"id": "1", "text": "One", "status": "in_progress"}]})),
        Step::text("saved"),
    ])
    .await;
    let first = editor(ClientPreset::Neovim, &dir, &state, &mock).binary().ignore(&TRANSCRIPT).start().await;
    assert_eq!(first.run("make a plan").await.reason(), "end_turn");
    first.finish().await;
    let file = std::fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    // Edited by hand (or by anything else): three steps in progress, two with the same id.
    let mut saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let item = |id: &str| json!({"id": id, "text": "Step", "status": "in_progress"});
    saved["session"]["plan"]["items"] = json!([item("1"), item("1"), item("2")]);
    std::fs::write(&file, saved.to_string()).unwrap();

    let second = editor(ClientPreset::Neovim, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let shown = second.await_notification("window/showMessage").await;
    let message = shown["message"].as_str().unwrap();
    assert!(
        message.contains("its plan breaks the plan's rules (Only one task can be in_progress at a time)"),
        "{message}"
    );
    assert_eq!(second.execute("stepwise.plan", json!({})).await.unwrap()["items"], json!([]));
    second.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_editor_that_vanishes_mid_run_loses_at_most_the_round_in_flight() {
    let (dir, state) = folder_and_state("vanish");
    let plan = json!({"items": [{"id": "1", "text": "Survive a crash", "status": "in_progress"}]});
    let mock = MockModel::start(vec![Step::tool("todo", plan), Step::Hang]).await;
    let first = editor(ClientPreset::Neovim, &dir, &state, &mock).binary().ignore(&TRANSCRIPT).start().await;
    let ws = first.folder_uri(0);
    first.start_run(&ws, "make a plan, then take forever").await;
    // The editor has shown the plan, and the model is busy with the next round...
    first.await_notification("stepwise/plan").await;
    mock.wait_for_requests(2, T).await;
    // ...when the editor crashes: stdin closes, no shutdown, no exit.
    let status = first.vanish().await;
    assert!(status.success(), "the server ends cleanly when its editor is gone: {status}");

    let second = editor(ClientPreset::Neovim, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    second.await_notification("stepwise/plan").await;
    let plan = second.execute("stepwise.plan", json!({})).await.unwrap();
    assert_eq!(plan["items"][0]["text"], "Survive a crash");
    second.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_an_editor_that_vanishes_while_a_command_runs_keeps_the_plan_it_was_shown() {
    let (dir, state) = folder_and_state("vanish-command");
    let items = json!([
        {"id": "1", "text": "Start the build", "status": "in_progress"},
        {"id": "2", "text": "Read its output", "status": "pending"},
    ]);
    // One answer: the plan, then a command that outlives the editor.
    let mock = MockModel::start(vec![Step::Turn(
        Turn::default().with_tool("todo", json!({"items": items})).with_tool("bash", json!({"command": "sleep 30"})),
    )])
    .await;
    let first = editor(ClientPreset::Neovim, &dir, &state, &mock)
        .binary()
        .settings(json!({"approval": "auto"}))
        .ignore(&["$/progress", "stepwise/usage", "stepwise/assistantText"])
        .start()
        .await;
    let ws = first.folder_uri(0);
    first.start_run(&ws, "build it").await;
    let shown = first.await_notification("stepwise/plan").await;
    assert_eq!(shown["items"], items);
    // The command of the round is running when the editor goes.
    first.await_notification_matching("stepwise/toolCall", |c| c["name"] == "bash" && c["phase"] == "started", T).await;
    let status = first.vanish().await;
    assert!(status.success(), "the server ends cleanly when its editor is gone: {status}");

    let second = editor(ClientPreset::Neovim, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let restored = second.await_notification("stepwise/plan").await;
    assert_eq!(restored["items"], items, "the editor is shown the same plan after the restart");
    // The cancelled round reached its checkpoint: the command's call has its result in the conversation.
    let saved = std::fs::read_dir(state.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("a saved session");
    let saved: Value = serde_json::from_str(&saved).unwrap();
    let messages = saved["session"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "prompt, the answer, its results: {saved}");
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(results[1]["content"], "Error: Cancelled by the user");
    second.finish().await;
}

/// With the sandbox on, a command asks nothing; one the sandbox stopped is offered through the approval
/// request, and runs outside it only when allowed. The model reads what became of each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_command_the_sandbox_stopped_runs_outside_it_only_when_allowed() {
    let (dir, state) = folder_and_state("sandbox");
    let outside = TempDir::new("lsp-sandbox-outside");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let (a, b) = (outside.join("a"), outside.join("b"));
    let (to_a, to_b) = (format!("echo x > {}", a.display()), format!("echo x > {}", b.display()));
    let bash = |c: &str| Step::tool("bash", json!({"command": c}));
    let mock =
        MockModel::start(vec![bash("echo in > src/inside; echo ran"), bash(&to_a), bash(&to_b), Step::text("done")])
            .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("sandbox", json!("workspace-write"))
        .ignore(&TRANSCRIPT)
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let name = dir.path().file_name().unwrap().to_str().unwrap().to_string();
    let run = ed.start_run(&ws, "write things").await;
    for (command, answer) in [(&to_a, "Allow"), (&to_b, "Deny")] {
        let (id, params) = ed.await_request("window/showMessageRequest", T).await;
        let message = params["message"].as_str().unwrap();
        let asked = format!("The sandbox stopped a shell command; stepwise wants to run it outside the sandbox in {name}: {command} (it stopped: ");
        assert!(message.starts_with(&asked), "{message}");
        // What it stopped, as the sandbox reads it: the path written outside what it may write.
        assert!(
            message.contains("(it stopped: a write to ") && message.contains("outside the folders it may write"),
            "{message}"
        );
        ed.respond(&id, json!({"title": answer}));
    }
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    let asked = ed
        .transcript()
        .iter()
        .filter(|m| matches!(m, Incoming::Request { method, .. } if method == "window/showMessageRequest"))
        .count();
    assert_eq!(asked, 2, "the command inside the workspace asked nothing");
    assert_eq!(std::fs::read_to_string(dir.join("src/inside")).unwrap(), "in\n");
    assert!(a.exists() && !b.exists(), "only the allowed command ran outside the sandbox");
    let reqs = mock.wait_for_requests(4, T).await;
    let result = |i: usize| tool_results(&reqs[i].body).remove(0);
    assert_eq!(result(1), ("ran".to_string(), false));
    let (approved, failed) = result(2);
    assert!(approved.starts_with("[sandbox: the command was stopped by the sandbox (") && !failed, "{approved}");
    assert!(approved.contains("the user approved running it again outside the sandbox"), "{approved}");
    let (declined, failed) = result(3);
    assert!(declined.contains("Permission denied") && declined.contains("the user declined") && failed, "{declined}");
    ed.finish().await;
}

/// `approval: deny` keeps its promise with the sandbox on: no shell command runs, sandboxed or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_approval_deny_runs_no_command_even_sandboxed() {
    let (dir, state) = folder_and_state("sandbox-deny");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let mock =
        MockModel::start(vec![Step::tool("bash", json!({"command": "echo x > src/f"})), Step::text("done")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("sandbox", json!("workspace-write"))
        .option("approval", json!("deny"))
        .ignore(&TRANSCRIPT)
        .start()
        .await;
    assert_eq!(ed.run("write").await.reason(), "end_turn");
    let reqs = mock.wait_for_requests(2, T).await;
    assert_eq!(tool_results(&reqs[1].body).remove(0), ("Error: Command denied by the user".to_string(), true));
    assert!(!dir.join("src/f").exists());
    ed.finish().await;
}
