//! Plan first (docs/protocol.md "Plan first"): a run in plan mode is offered only tools that change nothing,
//! refuses the others whatever the approval says, and ends `plan_ready`; comments go to the model as one
//! planning round; approval starts the run that acts, told once, with or without a fresh context.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mcp_servers::{fastmcp_stdio, tools};
use stepwise_tests::mock::{MockModel, Step, Turn};
use stepwise_tests::sent::{last_user_texts, tool_names};

const T: Duration = Duration::from_secs(60);

fn item(id: &str, text: &str, status: &str) -> Value {
    json!({"id": id, "text": text, "status": status})
}

/// Every file beneath `root` with its bytes (directories too, as empty entries).
fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if p.is_dir() {
                out.insert(rel, None);
                todo.push(p);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn system(body: &Value) -> String {
    match &body["system"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

async fn plan_run(ed: &TestEditor, ws: &str, prompt: &str) -> RunLog {
    let r = ed.execute("stepwise.run", json!({"prompt": prompt, "workspace": ws, "mode": "plan"})).await.unwrap();
    ed.await_run(ws, r["runId"].as_str().unwrap(), T).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_plan_mode_offers_only_what_changes_nothing_and_refuses_the_rest_even_when_approved() {
    tools();
    let (dir, state) = folder_and_state("plan-first-refuse");
    dir.write("a.txt", "alpha\n");
    dir.write(".env", "KEY=1\n");
    let mcp_target = dir.join("mcp.txt").display().to_string();
    let writes = Turn::default()
        .with_tool("write_file", json!({"path": "a.txt", "content": "changed"}))
        .with_tool("edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"}))
        .with_tool("bash", json!({"command": "echo hi > b.txt"}))
        .with_tool("write_file", json!({"path": ".env", "content": "KEY=2\n"}))
        .with_tool("mcp__py__write", json!({"path": mcp_target, "text": "x"}));
    let mock = MockModel::start(vec![
        Step::Turn(writes),
        Step::tool("read_file", json!({"path": "a.txt"})),
        Step::tool("todo", json!({"items": [item("1", "Change a.txt", "pending")]})),
        Step::text("Here is the plan."),
    ])
    .await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("mcpServers", json!({"py": fastmcp_stdio()}))
        // Everything the user could approve is approved: plan mode still refuses.
        .option("approval", json!("auto"))
        .env("XDG_CONFIG_HOME", &state.join("config").display().to_string())
        // A machine without a sandbox (the real binary, told so): then plan mode offers no shell at all.
        .binary()
        .env("STEPWISE_TEST_NO_SANDBOX", "1")
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let before = tree(dir.path());
    let log = plan_run(&ed, &ws, "change a.txt").await;
    assert_eq!(log.reason(), "plan_ready", "{:?}", log.idle());
    assert_eq!(tree(dir.path()), before, "plan mode changed the workspace");
    assert!(ed.handled("workspace/applyEdit").is_empty(), "nor the editor's buffers");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4);
    for r in &reqs {
        assert_eq!(tool_names(&r.body), ["read_file", "todo", "task"], "offered in plan mode");
        assert!(system(&r.body).contains("You are planning, not acting"), "{}", system(&r.body));
    }
    let refused = tool_results(&reqs[1].body);
    assert_eq!(refused.len(), 5);
    for (text, is_error) in &refused {
        assert!(*is_error && text.starts_with("Error: plan mode: "), "{text}");
    }
    assert!(refused[4].0.contains("mcp__py__write"), "{}", refused[4].0);
    assert_eq!(tool_results(&reqs[2].body), [("alpha".to_string(), false)], "reading works");
    // Nothing was asked: a refused call never reaches an approval.
    assert!(ed.drain("window/showMessageRequest").is_empty());
    let plan = ed.execute("stepwise.plan", json!({"workspace": ws})).await.unwrap();
    assert_eq!(plan["items"], json!([item("1", "Change a.txt", "pending")]), "the plan is shown");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_plan_mode_runs_the_shell_read_only_in_the_sandbox_without_asking() {
    let (dir, state) = folder_and_state("plan-first-sandbox");
    dir.write("a.txt", "alpha\n");
    let outside = state.join("outside.txt");
    let writes = Turn::default()
        .with_tool("bash", json!({"command": "echo hi > b.txt"}))
        .with_tool("bash", json!({"command": format!("echo hi > {}", outside.display())}))
        .with_tool("bash", json!({"command": "echo more >> a.txt"}))
        .with_tool(
            "bash",
            json!({"command": "cat a.txt && echo tmp > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\""}),
        );
    let mock = MockModel::start(vec![
        Step::Turn(writes),
        Step::tool("todo", json!({"items": [item("1", "Change a.txt", "pending")]})),
        Step::text("Here is the plan."),
    ])
    .await;
    // `sandbox: off` and approval asked: plan mode still runs commands only read-only, and asks nothing.
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("sandbox", json!("off"))
        .option("approval", json!("ask"))
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let before = tree(dir.path());
    let log = plan_run(&ed, &ws, "change a.txt").await;
    assert_eq!(log.reason(), "plan_ready", "{:?}", log.idle());
    assert_eq!(tree(dir.path()), before, "plan mode changed the workspace");
    assert!(!outside.exists(), "nor anything outside it");
    let reqs = mock.requests();
    assert_eq!(tool_names(&reqs[0].body), ["bash", "read_file", "todo", "task"], "the shell is offered, read-only");
    let results = tool_results(&reqs[1].body);
    assert_eq!(results.len(), 4);
    for (text, is_error) in &results[..3] {
        assert!(
            *is_error
                && text.contains("stopped by the sandbox (")
                && text.contains("is read-only: writes only in $TMPDIR"),
            "{text}"
        );
        assert!(text.contains("cannot run outside the sandbox in this mode"), "{text}");
    }
    assert_eq!(results[3], ("alpha\ntmp".to_string(), false), "reading and $TMPDIR work");
    assert!(ed.drain("window/showMessageRequest").is_empty(), "nothing was asked");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_comments_reach_the_model_as_one_block_and_it_keeps_planning() {
    let (dir, state) = folder_and_state("plan-first-comment");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [item("1", "Read", "pending"), item("2", "Fix", "pending")]})),
        Step::text("planned"),
        Step::tool(
            "todo",
            json!({"items": [item("1", "Read", "pending"), item("2", "Write a test", "pending"), item("3", "Fix", "pending")]}),
        ),
        Step::text("revised"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let early = ed.execute("stepwise.commentPlan", json!({"comments": [{"text": "hm"}]})).await.unwrap_err();
    assert!(early.message.contains("no plan waits"), "{}", early.message);
    assert_eq!(plan_run(&ed, &ws, "fix the bug").await.reason(), "plan_ready");

    let empty = ed.execute("stepwise.commentPlan", json!({"comments": [{"text": " "}]})).await.unwrap_err();
    assert_eq!(empty.code, -32602);
    let unknown = ed.execute("stepwise.commentPlan", json!({"comments": [{"id": "9", "text": "x"}]})).await;
    assert_eq!(unknown.unwrap_err().message, "the plan has no item #9");
    assert_eq!(mock.requests().len(), 2, "a refused comment runs nothing");

    let comments =
        json!({"workspace": ws, "comments": [{"id": "2", "text": "write a test first"}, {"text": "keep it small"}]});
    let r = ed.execute("stepwise.commentPlan", comments).await.unwrap();
    let log = ed.await_run(&ws, r["runId"].as_str().unwrap(), T).await;
    assert_eq!(log.reason(), "plan_ready", "still planning");
    let reqs = mock.requests();
    assert_eq!(
        last_user_texts(&reqs[2].body),
        ["<plan-comments>The user commented on your plan. Revise it with the planning tool, then end your turn; you are still planning.\nOn #2 (Fix): write a test first\nOn the plan: keep it small\n</plan-comments>"],
        "one block, each comment under its item"
    );
    let offered = tool_names(&reqs[2].body);
    assert!(offered.ends_with(&["read_file".to_string(), "todo".to_string(), "task".to_string()]), "{offered:?}");
    assert!(!offered.iter().any(|t| t == "write_file" || t == "edit_file"), "still planning: {offered:?}");
    assert!(system(&reqs[3].body).contains("You are planning"));
    // Commenting again works on the revised plan.
    assert_eq!(log.plans().last().unwrap()["total"], 3);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_approval_starts_the_run_that_acts_told_once_and_a_stale_revision_is_refused() {
    let (dir, state) = folder_and_state("plan-first-approve");
    dir.write("a.txt", "alpha\n");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [item("1", "Change a.txt", "pending"), item("2", "Check", "pending")]})),
        Step::text("planned"),
        Step::tool("edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"})),
        Step::text("done"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    assert_eq!(plan_run(&ed, &ws, "change a.txt").await.reason(), "plan_ready");
    let plan = ed.execute("stepwise.plan", json!({})).await.unwrap();
    let rev = plan["revision"].as_u64().unwrap();
    assert!(rev >= 1);

    let stale = ed.execute("stepwise.approvePlan", json!({"baseRevision": rev - 1})).await.unwrap_err();
    assert!(stale.message.contains("changed"), "{}", stale.message);
    assert_eq!(ed.execute("stepwise.plan", json!({})).await.unwrap(), plan, "nothing changed");

    let r = ed.execute("stepwise.approvePlan", json!({"workspace": ws, "baseRevision": rev})).await.unwrap();
    let note = ed.await_notification_matching("stepwise/plan", |p| p["by"] == "user", T).await;
    assert_eq!(note["items"][0], item("1", "Change a.txt", "in_progress"), "the first step starts");
    let log = ed.await_run(&ws, r["runId"].as_str().unwrap(), T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(ed.text(&ed.uri(dir.join("a.txt"))).unwrap(), "beta\n", "the approved run acts");

    let reqs = mock.requests();
    let first = &reqs[2].body;
    let approval = "<plan-approved>The user approved the plan. Carry it out now, step by step, keeping the plan up to date:\n[>] #1: Change a.txt\n[ ] #2: Check\n\n(0/2 completed)</plan-approved>";
    assert_eq!(last_user_texts(first), [approval]);
    assert_eq!(first["messages"].as_array().unwrap().len(), 5, "the planning conversation is kept");
    assert!(tool_names(first).contains(&"edit_file".to_string()));
    assert!(!system(first).contains("You are planning"));
    let later = serde_json::to_string(&reqs[3].body).unwrap();
    assert_eq!(later.matches("<plan-approved>").count(), 1, "told once");
    let again = ed.execute("stepwise.approvePlan", json!({})).await.unwrap_err();
    assert!(again.message.contains("no plan waits"), "{}", again.message);
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_approval_with_a_fresh_context_starts_from_the_task_and_the_plan_only() {
    let (dir, state) = folder_and_state("plan-first-fresh");
    let mock = MockModel::start(vec![
        Step::tool("read_file", json!({"path": "missing.txt"})),
        Step::tool("todo", json!({"items": [item("1", "Write b.txt", "pending")]})),
        Step::text("planned"),
        Step::tool("write_file", json!({"path": "b.txt", "content": "bee"})),
        Step::text("done"),
    ])
    .await;
    // Every run plans first (the setting); the approved run acts anyway.
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).option("planFirst", json!(true)).start().await;
    let ws = ed.folder_uri(0);
    assert_eq!(ed.run("create b.txt").await.reason(), "plan_ready");
    let r = ed.execute("stepwise.approvePlan", json!({"clearContext": true})).await.unwrap();
    let log = ed.await_run(&ws, r["runId"].as_str().unwrap(), T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(ed.text(&ed.uri(dir.join("b.txt"))).unwrap(), "bee");
    let body = &mock.requests()[3].body;
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 1, "nothing but the task and the plan: {msgs:?}");
    assert_eq!(
        last_user_texts(body),
        ["create b.txt\n\n<plan-approved>The user approved the plan. Carry it out now, step by step, keeping the plan up to date:\n[>] #1: Write b.txt\n\n(0/1 completed)</plan-approved>"]
    );
    assert!(tool_names(body).contains(&"write_file".to_string()));
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_run_may_choose_its_mode_and_a_bad_one_is_refused() {
    let (dir, state) = folder_and_state("plan-first-mode");
    let mock = MockModel::start(vec![Step::text("acted")]).await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).option("planFirst", json!(true)).start().await;
    let ws = ed.folder_uri(0);
    let bad = ed.execute("stepwise.run", json!({"prompt": "x", "mode": "act"})).await.unwrap_err();
    assert_eq!(bad.code, -32602);
    let r = ed.execute("stepwise.run", json!({"prompt": "x", "mode": "default"})).await.unwrap();
    assert_eq!(ed.await_run(&ws, r["runId"].as_str().unwrap(), T).await.reason(), "end_turn");
    assert!(tool_names(&mock.requests()[0].body).contains(&"bash".to_string()));
    ed.finish().await;
}

/// `stepwise/plan` says what each change was (`change`), beside who made it (`by`): editors tell an edit
/// from an approval, a rewind and a reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_each_plan_notification_says_what_the_change_was() {
    let (dir, state) = folder_and_state("plan-first-change");
    let mock = MockModel::start(vec![
        Step::tool("todo", json!({"items": [item("1", "Read", "pending"), item("2", "Fix", "pending")]})),
        Step::text("planned"),
        Step::text("done"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let change = |p: &Value| (p["by"].clone(), p["change"].clone());
    let planned = plan_run(&ed, &ws, "fix the bug").await;
    assert_eq!(planned.reason(), "plan_ready");
    let model = planned.plans();
    assert_eq!(model.iter().map(change).collect::<Vec<_>>(), [(json!("model"), json!("update"))]);

    let edit = json!({"items": [item("1", "Read the code", "pending"), item("2", "Fix", "pending")]});
    ed.execute("stepwise.editPlan", edit).await.unwrap();
    let edited = ed.await_notification_matching("stepwise/plan", |p| p["by"] == "user", T).await;
    assert_eq!(change(&edited), (json!("user"), json!("edit")));
    assert_eq!(ed.execute("stepwise.plan", json!({})).await.unwrap()["change"], "edit", "the answer says it too");

    let r = ed.execute("stepwise.approvePlan", json!({})).await.unwrap();
    let approved = ed.await_notification_matching("stepwise/plan", |p| p["by"] == "user", T).await;
    assert_eq!(change(&approved), (json!("user"), json!("approved")));
    assert_eq!(approved["items"][0], item("1", "Read the code", "in_progress"));
    assert_eq!(ed.await_run(&ws, r["runId"].as_str().unwrap(), T).await.reason(), "end_turn");

    // Back to the checkpoint after the model's plan: the plan goes back with the conversation.
    let listed = ed.execute("stepwise.checkpoints", json!({})).await.unwrap();
    let id = listed.as_array().unwrap().iter().find(|c| c["round"] == 2).unwrap()["id"].clone();
    let done = ed.execute("stepwise.rewind", json!({"checkpoint": id, "restore": "conversation"})).await.unwrap();
    assert_eq!(done["conversation"], true, "{done}");
    let rewound = ed.await_notification_matching("stepwise/plan", |p| p["by"] == "user", T).await;
    assert_eq!(change(&rewound), (json!("user"), json!("rewind")));
    assert_eq!(rewound["items"], json!([item("1", "Read", "pending"), item("2", "Fix", "pending")]));

    ed.execute("stepwise.reset", json!({})).await.unwrap();
    let reset = ed.await_notification_matching("stepwise/plan", |p| p["by"] == "user", T).await;
    assert_eq!(change(&reset), (json!("user"), json!("reset")));
    assert_eq!(reset["items"], json!([]));
    ed.finish().await;
}
