//! A whole run as VS Code sees it, and follow-up prompts: plan notifications, progress, code lenses,
//! edits, status and transcript notifications.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step, Turn};

const T: Duration = Duration::from_secs(10);

fn item(id: &str, text: &str, status: &str, active: &str) -> Value {
    json!({"id": id, "text": text, "status": status, "activeForm": active})
}

fn todo(items: Vec<Value>) -> Step {
    Step::tool("todo", json!({ "items": items }))
}

const LIB: &str = "pub fn hello() -> &'static str {\n    \"😀 hello\"\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_full_run_in_vscode() {
    let (dir, state) = folder_and_state("full");
    dir.write("src/lib.rs", LIB);
    let plan1 = vec![
        item("1", "Greet the world", "in_progress", "Greeting the world"),
        item("2", "Write notes", "pending", "Writing notes"),
    ];
    let plan2 = vec![
        item("1", "Greet the world", "completed", "Greeting the world"),
        item("2", "Write notes", "in_progress", "Writing notes"),
    ];
    let plan3 = vec![
        item("1", "Greet the world", "completed", "Greeting the world"),
        item("2", "Write notes", "completed", "Writing notes"),
    ];
    let mock = MockModel::start(vec![
        Step::Turn(
            Turn::text("Planning first. ").with_tool("todo", json!({"items": plan1.clone()})).with_usage(100, 10),
        ),
        Step::Turn(
            Turn::default()
                .with_tool(
                    "edit_file",
                    json!({"path": "src/lib.rs", "old_text": "hello\"", "new_text": "hello, world\""}),
                )
                .with_usage(200, 20),
        ),
        todo(plan2.clone()),
        Step::tool("write_file", json!({"path": "notes.md", "content": "# Notes\nGreeted the wörld.\n"})),
        todo(plan3.clone()),
        Step::Turn(Turn::text("All done.").with_usage(300, 30)),
    ])
    .await;
    let ed =
        editor(ClientPreset::VsCode, &dir, &state, &mock).policy("workspace/applyEdit", Policy::Queue).start().await;
    assert_eq!(ed.initialize_result()["capabilities"]["positionEncoding"], "utf-16");
    // VS Code answers workspace/configuration at `initialized`.
    let conf = ed.await_handled("workspace/configuration", T).await;
    assert_eq!(conf.params["items"][0]["section"], "stepwise");
    assert_eq!(conf.params["items"][0]["scopeUri"], ed.folder_uri(0).as_str());

    let ws = ed.folder_uri(0);
    let lib = ed.open("src/lib.rs", LIB);
    let notes = ed.uri("notes.md");
    // No plan yet: no lenses.
    assert_eq!(ed.code_lens(&lib).await, Vec::<Value>::new());

    let run_id = ed.start_run(&ws, "Greet the world and take notes").await;

    // First edit: the server waits for the editor, with the plan at its first step.
    let (id, params) = ed.await_request("workspace/applyEdit", T).await;
    // The plan step the edit belongs to reached the editor before the edit.
    let order: Vec<String> = ed.transcript().iter().filter_map(|m| m.method().map(String::from)).collect();
    let plan_at = order.iter().position(|m| m == "stepwise/plan").expect("a plan before the edit");
    let edit_at = order.iter().position(|m| m == "workspace/applyEdit").unwrap();
    assert!(plan_at < edit_at, "{order:?}");
    assert_eq!(ed.lens_titles(&lib).await, vec![(0, "stepwise 0/2 · Greet the world".to_string())]);
    assert_eq!(params["label"], "stepwise: edit_file src/lib.rs — Greet the world");
    // Only the replaced range travels, in UTF-16 units (the emoji counts two).
    let col = "    \"😀 ".encode_utf16().count() as u32;
    assert_eq!(
        params["edit"],
        json!({"documentChanges": [{
            "textDocument": {"uri": lib, "version": 1},
            "edits": [{"range": range((1, col), (1, col + 6)), "newText": "hello, world\""}],
        }]})
    );
    ed.accept_edit(&id, &params);

    // Second edit: a new file, created then filled.
    let (id, params) = ed.await_request("workspace/applyEdit", T).await;
    assert_eq!(params["label"], "stepwise: write_file notes.md — Write notes");
    assert_eq!(
        params["edit"],
        json!({"documentChanges": [
            {"kind": "create", "uri": notes, "options": {"overwrite": false, "ignoreIfExists": true}},
            {"textDocument": {"uri": notes, "version": null},
             "edits": [{"range": range((0, 0), (0, 0)), "newText": "# Notes\nGreeted the wörld.\n"}]},
        ]})
    );
    // Mid-run: progress 1/2 on line 0, and the first edit's lens on the edited line naming its step.
    // (The review's lenses follow the rounds; they are checked after the run.)
    let plan_lenses: Vec<(u32, String)> =
        ed.lens_titles(&lib).await.into_iter().filter(|(_, t)| !matches!(t.as_str(), "Keep" | "Undo")).collect();
    assert_eq!(plan_lenses.len(), 2, "{plan_lenses:?}");
    assert!(plan_lenses[0].1.starts_with("stepwise 1/2 · Write notes"), "{plan_lenses:?}");
    assert_eq!(plan_lenses[1], (1, "✎ stepwise: Greet the world".to_string()));
    ed.accept_edit(&id, &params);

    let log = ed.await_run(&ws, &run_id, T).await;

    // Status: running, then idle with end_turn.
    let statuses = log.statuses();
    assert_eq!(
        statuses.first().unwrap(),
        &json!({"workspace": ws, "session": "main", "state": "running", "runId": run_id})
    );
    assert_eq!(
        statuses.last().unwrap(),
        &json!({"workspace": ws, "session": "main", "state": "idle", "runId": run_id, "reason": "end_turn"})
    );
    assert_eq!(statuses.len(), 2, "{statuses:?}");

    // Plan notifications in order, exact payloads.
    assert_eq!(
        log.plans(),
        vec![
            json!({"workspace": ws, "session": "main", "items": plan1, "completed": 0, "total": 2, "revision": 1, "by": "model", "change": "update"}),
            json!({"workspace": ws, "session": "main", "items": plan2, "completed": 1, "total": 2, "revision": 2, "by": "model", "change": "update"}),
            json!({"workspace": ws, "session": "main", "items": plan3, "completed": 2, "total": 2, "revision": 3, "by": "model", "change": "update"}),
        ]
    );

    // One work-done progress: begin, a report per plan change, end.
    let token = format!("stepwise/{run_id}");
    let created = ed.handled("window/workDoneProgress/create");
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].params, json!({"token": token}));
    let progress = log.progress();
    assert!(progress.iter().all(|p| p["token"] == token.as_str()));
    let values: Vec<Value> = progress.iter().map(|p| p["value"].clone()).collect();
    assert_eq!(values.len(), 5, "{values:?}");
    assert_eq!(values[0]["kind"], "begin");
    assert_eq!(values[0]["title"], "Stepwise");
    assert_eq!(values[0]["cancellable"], true);
    assert_eq!(values[0]["message"], "Greet the world and take notes");
    let reports: Vec<(Value, Value)> = values[1..4]
        .iter()
        .map(|v| {
            assert_eq!(v["kind"], "report");
            (v["percentage"].clone(), v.get("message").cloned().unwrap_or(Value::Null))
        })
        .collect();
    assert_eq!(
        reports,
        vec![(json!(0), json!("Greeting the world")), (json!(50), json!("Writing notes")), (json!(100), Value::Null),]
    );
    assert_eq!(values[4], json!({"kind": "end", "message": "end_turn"}));

    // Transcript notifications.
    let calls = log.tool_calls();
    let phases: Vec<(String, String)> =
        calls.iter().map(|c| (c["name"].as_str().unwrap().into(), c["phase"].as_str().unwrap().into())).collect();
    let mut expected = Vec::new();
    for name in ["todo", "edit_file", "todo", "write_file", "todo"] {
        expected.push((name.to_string(), "started".to_string()));
        expected.push((name.to_string(), "finished".to_string()));
    }
    assert_eq!(phases, expected);
    assert!(calls.iter().all(|c| c["runId"] == run_id.as_str() && c["workspace"] == ws.as_str()));
    assert_eq!(calls[2]["summary"], "src/lib.rs");
    assert_eq!(calls[3]["output"], "Edited src/lib.rs");
    assert_eq!(calls[3]["isError"], false);
    assert_eq!(calls[7]["output"], format!("Wrote {} bytes", "# Notes\nGreeted the wörld.\n".chars().count()));
    let usage = log.usage();
    assert_eq!(usage.len(), 6);
    assert_eq!(usage[0]["inputTokens"], 100);
    assert_eq!(usage[1]["runInputTokens"], 300);
    assert_eq!(usage[5]["runInputTokens"], 100 + 200 + 10 * 3 + 300);
    assert_eq!(usage[5]["runOutputTokens"], 10 + 20 + 5 * 3 + 30);
    assert!(log.text().contains("Planning first."), "{}", log.text());
    assert!(log.text().ends_with("All done."), "{}", log.text());

    // After the run: done, and the edit lens stays.
    // The two hunks to review (the edit, the new file) have Keep / Undo lenses (issue 28).
    let s = |l: u32, t: &str| (l, t.to_string());
    let done = "stepwise 2/2 · done · 2 hunks to review";
    assert_eq!(
        ed.lens_titles(&lib).await,
        vec![s(0, done), s(1, "Keep"), s(1, "Undo"), s(1, "✎ stepwise: Greet the world")]
    );
    let lenses = ed.code_lens(&lib).await;
    assert_eq!(lenses[0]["command"]["command"], "stepwise.plan");
    assert_eq!(lenses[0]["command"]["arguments"], json!([{"workspace": ws, "session": "main"}]));
    assert_eq!(
        ed.lens_titles(&notes).await,
        vec![s(0, done), s(0, "Keep"), s(0, "Undo"), s(0, "✎ stepwise: Write notes")]
    );

    // Lens refreshes were requested as the plan changed.
    eventually("code lens refreshes", T, || ed.handled("workspace/codeLens/refresh").len() >= 3).await;

    // The editor holds the final texts; the disk has only the new, empty file (nothing saved yet).
    assert_eq!(ed.text(&lib).unwrap(), LIB.replace("hello\"", "hello, world\""));
    assert_eq!(ed.doc(&lib).unwrap().version, 2);
    assert_eq!(ed.text(&notes).unwrap(), "# Notes\nGreeted the wörld.\n");
    assert_eq!(dir.read("src/lib.rs"), LIB);
    assert_eq!(dir.read("notes.md"), "");

    // The plan command agrees.
    let plan = ed.execute("stepwise.plan", json!({})).await.unwrap();
    assert_eq!(
        plan,
        json!({"workspace": ws, "session": "main", "items": plan3, "completed": 2, "total": 2, "revision": 3, "by": "model", "change": "update"})
    );
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_follow_up_prompts_continue_and_reset_clears() {
    let (dir, state) = folder_and_state("follow");
    let mock = MockModel::start(vec![
        todo(vec![item("1", "First step", "in_progress", "Doing the first step")]),
        Step::text("first answer"),
        // Follow-up: the model sees the first exchange and keeps the plan.
        Step::text("second answer"),
        // After reset: a fresh conversation.
        Step::text("third answer"),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&TRANSCRIPT).start().await;
    let ws = ed.folder_uri(0);
    let first = ed.run("first prompt").await;
    assert_eq!(first.reason(), "end_turn");
    assert_eq!(first.plans().len(), 1);

    let second = ed.run("second prompt").await;
    assert_eq!(second.reason(), "end_turn");
    assert!(second.plans().is_empty(), "the plan did not change");
    let reqs = mock.wait_for_requests(3, T).await;
    let msgs = reqs[2].body["messages"].as_array().unwrap().clone();
    assert_eq!(msgs.len(), 5, "{msgs:?}");
    assert_eq!(msgs[0]["content"][0]["text"], "first prompt");
    assert_eq!(msgs[3]["content"][0]["text"], "first answer");
    assert_eq!(msgs[4]["content"], json!([{"type": "text", "text": "second prompt"}]));
    assert_valid_conversation(&reqs[2].body);
    let plan = ed.execute("stepwise.plan", json!({})).await.unwrap();
    assert_eq!(plan["items"], json!([item("1", "First step", "in_progress", "Doing the first step")]));
    let lib = ed.open("a.txt", "x\n");
    assert_eq!(ed.lens_titles(&lib).await, vec![(0, "stepwise 0/1 · First step".to_string())]);

    // Reset: an empty plan notification, no lenses, a new conversation.
    assert_eq!(ed.execute("stepwise.reset", json!({"workspace": ws})).await, Ok(Value::Null));
    let plan = ed.await_notification("stepwise/plan").await;
    assert_eq!(
        plan,
        json!({"workspace": ws, "session": "main", "items": [], "completed": 0, "total": 0, "revision": 2, "by": "user", "change": "reset"})
    );
    assert_eq!(ed.code_lens(&lib).await, Vec::<Value>::new());
    assert_eq!(ed.execute("stepwise.plan", json!({})).await.unwrap()["items"], json!([]));
    let third = ed.run("third prompt").await;
    assert_eq!(third.reason(), "end_turn");
    let reqs = mock.wait_for_requests(4, T).await;
    assert_eq!(
        reqs[3].body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "third prompt"}]}])
    );
    ed.finish().await;
}

/// An editor slow to agree to the run's progress does not hold the run up, and loses no report: those made
/// before it agreed follow the `begin`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_progress_agreed_late_keeps_every_report() {
    let (dir, state) = folder_and_state("late-progress");
    let mock = MockModel::start(vec![
        todo(vec![item("1", "Only step", "in_progress", "Doing it")]),
        todo(vec![item("1", "Only step", "completed", "Doing it")]),
        Step::Hang,
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .policy("window/workDoneProgress/create", Policy::Queue)
        .ignore(&["stepwise/usage", "stepwise/assistantText", "stepwise/toolCall"])
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "one step").await;
    let (id, _) = ed.await_request("window/workDoneProgress/create", T).await;
    // The run goes on meanwhile: both plan changes are made, and the model is asked a third time (it
    // never answers, so the run is still going when the editor agrees).
    mock.wait_for_requests(3, T).await;
    ed.respond(&id, Value::Null);
    ed.await_notification_matching("$/progress", |p| p["value"]["percentage"] == 100, T).await;
    assert_eq!(ed.execute("stepwise.cancel", json!({})).await, Ok(Value::Null));
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "cancelled");
    let kinds: Vec<(Value, Value)> = ed
        .received("$/progress")
        .iter()
        .map(|p| (p["value"]["kind"].clone(), p["value"]["percentage"].clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (json!("begin"), json!(0)),
            (json!("report"), json!(0)),
            (json!("report"), json!(100)),
            (json!("end"), Value::Null)
        ]
    );
    ed.finish().await;
}
