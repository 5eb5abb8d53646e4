//! Subagents over the LSP sidecar: a child's question names it (`stepwise/ask`'s `subagent`), its calls and
//! state are notified as its own (`stepwise/toolCall`'s `subagent`, `stepwise/subagent`), its changes are
//! the parent's round's (rewinding that round puts them back), `stepwise.cancelSubagent` ends one child
//! alone, and a restarted server shows the children under their `task` call again.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step, Turn};

const T: Duration = Duration::from_secs(30);

fn declares_ask(caps: &mut Value) {
    caps["experimental"]["stepwise"]["ask"] = json!(true);
}

fn task(id: &str, prompt: &str, description: &str) -> Step {
    Turn::default().with_tool_id(id, "task", json!({"prompt": prompt, "description": description})).into()
}

/// The entries of `stepwise.conversation`.
async fn entries(ed: &TestEditor) -> Vec<Value> {
    let c = ed.execute("stepwise.conversation", json!({})).await.unwrap();
    c["entries"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_childs_question_calls_and_changes_are_its_own_and_rewinding_the_parents_round_puts_them_back() {
    let (dir, state) = folder_and_state("lsp-subagents");
    dir.write("a.txt", "one\n");
    let mock =
        MockModel::start(vec![task("t1", "CHILD-E: change a.txt", "changes a.txt"), Step::text("parent done")]).await;
    mock.route(
        "CHILD-E",
        vec![
            Step::tool("bash", json!({"command": "echo made > made.txt"})),
            Step::tool("edit_file", json!({"path": "a.txt", "old_text": "one", "new_text": "two"})),
            Step::text("Made made.txt and changed a.txt."),
        ],
    );
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .capabilities(declares_ask)
        .ignore(&["stepwise/review"])
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "delegate the change").await;

    // The child's command asks, naming the child.
    let (id, p) = ed.await_request("stepwise/ask", T).await;
    assert_eq!(p["subagent"], "sa-1", "{p}");
    let message = p["message"].as_str().unwrap();
    assert!(message.starts_with("[subagent sa-1: changes a.txt] stepwise wants to run"), "{message}");
    ed.respond(&id, json!({"answer": "allow"}));

    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    // The child's edit went to the editor's document, as the parent's edits go.
    let a = ed.uri(dir.join("a.txt"));
    assert_eq!(ed.text(&a).as_deref(), Some("two\n"));
    assert!(dir.join("made.txt").exists());

    let child_calls: Vec<String> = log
        .of("stepwise/toolCall")
        .iter()
        .filter(|c| c["subagent"] == "sa-1" && c["phase"] == "started")
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(child_calls, ["bash", "edit_file"], "the child's calls, marked as its own");
    let task_calls =
        log.of("stepwise/toolCall").iter().filter(|c| c["name"] == "task" && c.get("subagent").is_none()).count();
    assert_eq!(task_calls, 2, "the task call itself, started and finished, is the parent's");
    let states = log.of("stepwise/subagent");
    assert_eq!(states.first().map(|s| s["state"].clone()), Some(json!("running")));
    let last = states.last().unwrap();
    assert_eq!(
        (last["state"].as_str(), last["toolCallId"].as_str(), last["id"].as_str()),
        (Some("done"), Some("t1"), Some("sa-1"))
    );
    assert_eq!(last["rounds"], 3);
    assert!(last["tokens"].as_u64().is_some(), "{last}");
    assert!(states.iter().any(|s| s["lastTool"] == "edit_file"), "the latest call is told as it starts");

    // The conversation: the task entry, then the child's calls and text, marked.
    let list = entries(&ed).await;
    let at = list.iter().position(|e| e["tool"]["name"] == "task").expect("the task entry");
    let theirs: Vec<String> = list[at + 1..]
        .iter()
        .take_while(|e| e["subagent"] == "sa-1")
        .map(|e| e["tool"]["name"].as_str().map_or_else(|| "text".to_string(), str::to_string))
        .collect();
    assert_eq!(theirs, ["bash", "edit_file", "text"], "{list:?}");

    // The child's changes are the parent's first round's: rewinding to the run's start puts both back.
    let cps = ed.execute("stepwise.checkpoints", json!({})).await.unwrap();
    let first = cps[0]["id"].as_str().unwrap().to_string();
    let files: Vec<&str> = cps[0]["files"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(files.contains(&"a.txt") && files.contains(&"made.txt"), "{cps}");
    let r = ed.execute("stepwise.rewind", json!({"checkpoint": first, "restore": "files"})).await.unwrap();
    assert_eq!(r["conflicts"], json!([]), "{r}");
    assert_eq!(ed.text(&a).as_deref(), Some("one\n"));
    assert!(!dir.join("made.txt").exists(), "the child's command's file is gone with the rewind");
    ed.finish().await;

    // A restarted server shows the child under its task call again.
    let again = editor(ClientPreset::VsCode, &dir, &state, &mock).ignore(&["stepwise/review"]).start().await;
    let list = entries(&again).await;
    assert!(list.iter().any(|e| e["subagent"] == "sa-1" && e["tool"]["name"] == "edit_file"), "{list:?}");
    again.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_cancel_subagent_ends_one_child_alone_and_an_unknown_one_is_refused() {
    let (dir, state) = folder_and_state("lsp-subagents-cancel");
    let both = Turn::default()
        .with_tool_id("ta", "task", json!({"prompt": "CHILD-A: wait", "description": "waits"}))
        .with_tool_id("tb", "task", json!({"prompt": "CHILD-B: answer", "description": "answers"}));
    let mock = MockModel::start(vec![both.into(), Step::text("parent done")]).await;
    mock.route(
        "CHILD-A",
        vec![Step::tool("bash", json!({"command": "sleep 30"})), Step::text("Stopped while waiting.")],
    );
    // B answers once A is stopped (its first answer waits on A's command to start and end).
    mock.route("CHILD-B", vec![Turn::text("B's answer").with_delay_ms(300).into()]);
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock).option("approval", json!("auto")).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "two children").await;
    let waiting = |p: &Value| p["subagent"] == "sa-1" && p["name"] == "bash" && p["phase"] == "started";
    ed.await_notification_matching("stepwise/toolCall", waiting, T).await;
    let e = ed.execute("stepwise.cancelSubagent", json!({"id": "sa-9"})).await.unwrap_err();
    assert!(e.message.contains("no subagent sa-9 runs") && e.message.contains("sa-1"), "{}", e.message);
    ed.execute("stepwise.cancelSubagent", json!({"id": "sa-1"})).await.unwrap();
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn", "the parent goes on");
    let ends: Vec<(String, String)> = log
        .of("stepwise/subagent")
        .iter()
        .filter(|s| s["state"] != "running")
        .map(|s| (s["id"].as_str().unwrap().to_string(), s["state"].as_str().unwrap().to_string()))
        .collect();
    assert!(
        ends.contains(&("sa-1".into(), "cancelled".into())) && ends.contains(&("sa-2".into(), "done".into())),
        "{ends:?}"
    );
    let body = mock.requests().last().unwrap().body.clone();
    let results = tool_results(&body);
    assert!(
        results[0].0.starts_with("Stopped while waiting.") && results[0].0.contains("it was cancelled"),
        "{results:?}"
    );
    assert!(results[1].0.starts_with("B's answer"), "{results:?}");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_children_commands_at_the_same_time_are_all_recorded_and_all_rewound() {
    let (dir, state) = folder_and_state("lsp-subagents-commands");
    let both = Turn::default()
        .with_tool_id("ta", "task", json!({"prompt": "CHILD-A: write a", "description": "a"}))
        .with_tool_id("tb", "task", json!({"prompt": "CHILD-B: write b", "description": "b"}));
    let mock = MockModel::start(vec![both.into(), Step::text("parent done")]).await;
    // The commands overlap (each waits for the other's marker), and B writes after A's command ended.
    let a = "touch a-here; while [ ! -e b-here ]; do sleep 0.02; done; echo a > a.txt";
    let b = "touch b-here; while [ ! -e a.txt ]; do sleep 0.02; done; sleep 0.2; echo b > b.txt";
    mock.route("CHILD-A", vec![Step::tool("bash", json!({"command": a})), Step::text("a done")]);
    mock.route("CHILD-B", vec![Step::tool("bash", json!({"command": b})), Step::text("b done")]);
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("approval", json!("auto"))
        .ignore(&["stepwise/review"])
        .start()
        .await;
    let log = ed.run("two children writing").await;
    assert_eq!(log.reason(), "end_turn");
    assert!(dir.join("a.txt").exists() && dir.join("b.txt").exists());
    let cps = ed.execute("stepwise.checkpoints", json!({})).await.unwrap();
    let mut files: Vec<&str> = cps[0]["files"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    files.sort();
    assert_eq!(files, ["a-here", "a.txt", "b-here", "b.txt"], "both children's commands are the round's changes");
    let first = cps[0]["id"].as_str().unwrap().to_string();
    let r = ed.execute("stepwise.rewind", json!({"checkpoint": first, "restore": "files"})).await.unwrap();
    assert_eq!(r["conflicts"], json!([]), "{r}");
    for f in ["a-here", "a.txt", "b-here", "b.txt"] {
        assert!(!dir.join(f).exists(), "{f} went with the rewind");
    }
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_a_childs_question_never_answered_is_a_refusal_said_to_it_and_nothing_hangs() {
    let (dir, state) = folder_and_state("lsp-subagents-unanswered");
    let mock = MockModel::start(vec![task("t1", "CHILD-Q: run it", "runs a command"), Step::text("parent done")]).await;
    mock.route(
        "CHILD-Q",
        vec![Step::tool("bash", json!({"command": "echo ran > ran.txt"})), Step::text("Could not run it.")],
    );
    // The editor shows the question and nobody answers it.
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .capabilities(declares_ask)
        .option("approvalTimeoutSecs", json!(1))
        .ignore(&["stepwise/review", "$/cancelRequest"])
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "delegate").await;
    let (_id, p) = ed.await_request("stepwise/ask", T).await;
    assert_eq!(p["subagent"], "sa-1");
    let waiting = |p: &Value| p["state"] == "waiting";
    ed.await_notification_matching("stepwise/status", waiting, T).await;
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn", "the run goes on");
    assert!(!dir.join("ran.txt").exists(), "not answered: not run");
    let child = mock.requests().into_iter().map(|r| r.body).find(|b| {
        stepwise_tests::mock::first_user_text(b).contains("CHILD-Q")
            && b["messages"].as_array().is_some_and(|m| m.len() == 3)
    });
    let told = child.map(|b| b["messages"][2].to_string()).unwrap_or_default();
    assert!(told.contains("denied"), "the child read that it was refused: {told}");
    let result = &tool_results(&mock.requests().last().unwrap().body)[0].0;
    assert!(result.starts_with("Could not run it.") && result.ends_with("done)"), "{result}");
    ed.finish().await;
}
