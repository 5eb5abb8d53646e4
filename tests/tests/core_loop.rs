//! The loop itself: the reminder, stops, round cap, cancellation, planning styles and usage,
//! judged by what the model was sent.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use stepwise::agent::AgentConfig;
use stepwise::llm::Usage;
use stepwise::plan::PlanningStyle;
use stepwise_tests::mock::{Step, Turn};
use stepwise_tests::sent::{offered, tool_names};
use tokio_util::sync::CancellationToken;

fn bash(cmd: &str) -> Step {
    call("bash", json!({"command": cmd}))
}

fn pending_plan() -> Step {
    call(
        "todo",
        json!({"items": [{"id": "1", "text": "Keep going", "status": "in_progress"}, {"id": "2", "text": "Finish", "status": "pending"}]}),
    )
}

/// The reminder, when present, is the last block of the last message, after every tool result.
fn assert_reminder_position(body: &serde_json::Value) {
    let blocks = last_message(body)["content"].as_array().unwrap();
    let last = blocks.last().unwrap();
    assert_eq!(last, &json!({"type": "text", "text": REMINDER}));
    assert!(blocks[..blocks.len() - 1].iter().all(|b| b["type"] == "tool_result"), "{blocks:?}");
    assert_eq!(blocks.iter().filter(|b| b["type"] == "text" && b["text"] == REMINDER).count(), 1);
}

#[tokio::test]
async fn reminder_after_three_rounds_without_todo_until_a_todo_call_and_reset_by_a_new_prompt() {
    let mut h = Harness::new(vec![
        bash("echo 1"), // body(1): round 1 results
        bash("echo 2"), // body(2)
        bash("echo 3"), // body(3): reminder
        bash("echo 4"), // body(4): reminder again
        pending_plan(), // body(5): todo call resets
        bash("echo 6"), // body(6)
        bash("echo 7"), // body(7)
        bash("echo 8"), // body(8): reminder
        Step::text("first done"),
        // Second prompt.
        bash("echo a"), // body(10)
        bash("echo b"), // body(11)
        bash("echo c"), // body(12): reminder
        Step::text("second done"),
    ])
    .await;
    let out = h.run("do many things").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.rounds, 9);
    let with: Vec<bool> = (1..=8).map(|i| last_has_reminder(&h.body(i))).collect();
    assert_eq!(with, vec![false, false, true, true, false, false, false, true]);
    for i in [3, 4, 8] {
        assert_reminder_position(&h.body(i));
        assert_eq!(results(&h.body(i)).len(), 1);
    }
    assert_eq!(h.events.reminders(), 3);

    let out = h.run("more please").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    let body9 = h.body(9);
    assert_eq!(texts(last_message(&body9)), vec!["more please"], "the prompt itself carries no reminder");
    let with: Vec<bool> = (10..=12).map(|i| last_has_reminder(&h.body(i))).collect();
    assert_eq!(with, vec![false, false, true], "a new prompt starts the count again");
    assert_reminder_position(&h.body(12));
    assert_valid_conversation(&h.body(12));
    assert_eq!(h.events.reminders(), 4);
    assert!(h.events.events().contains(&Ev::Reminder(REMINDER.into())));
}

#[tokio::test]
async fn no_reminder_when_the_plan_is_all_completed() {
    let mut h = Harness::new(vec![
        call("todo", json!({"items": [{"id": "1", "text": "All", "status": "completed"}]})),
        bash("echo 1"),
        bash("echo 2"),
        bash("echo 3"),
        bash("echo 4"),
        Step::text("done"),
    ])
    .await;
    let out = h.run("x").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(h.bodies().len(), 6);
    assert!(h.bodies().iter().all(|b| !has_reminder(b)));
    assert_eq!(h.events.reminders(), 0);
}

#[tokio::test]
async fn reminder_with_an_empty_plan_and_configurable_rounds() {
    let cfg = AgentConfig { reminder_rounds: 1, ..AgentConfig::default() };
    let mut h = Harness::with_cfg(vec![bash("echo 1"), pending_plan(), bash("echo 3"), Step::text("done")], cfg).await;
    h.run("x").await;
    let with: Vec<bool> = (1..=3).map(|i| last_has_reminder(&h.body(i))).collect();
    assert_eq!(with, vec![true, false, true]);

    let cfg = AgentConfig { reminder_rounds: 5, ..AgentConfig::default() };
    let script = (1..=5).map(|i| bash(&format!("echo {i}"))).chain([Step::text("done")]).collect();
    let mut h = Harness::with_cfg(script, cfg).await;
    h.run("x").await;
    let with: Vec<bool> = (1..=5).map(|i| last_has_reminder(&h.body(i))).collect();
    assert_eq!(with, vec![false, false, false, false, true]);
}

#[tokio::test]
async fn tool_use_stop_without_calls_ends_the_turn() {
    let mut h =
        Harness::new(vec![Turn::text("I will call a tool now.").with_stop_reason("tool_use").into(), Step::text("ok")])
            .await;
    let out = h.run("first").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, "I will call a tool now.");
    assert_eq!(h.bodies().len(), 1, "no follow-up request with an empty results message");
    h.run("second").await;
    let body = h.body(1);
    assert_valid_conversation(&body);
    let m = messages(&body);
    assert_eq!(m.len(), 3);
    assert_eq!(texts(&m[1]), vec!["I will call a tool now."]);
    assert_eq!(texts(&m[2]), vec!["second"]);
}

#[tokio::test]
async fn empty_tool_use_response_leaves_no_empty_message() {
    let mut h = Harness::new(vec![Turn::default().with_stop_reason("tool_use").into(), Step::text("ok")]).await;
    let out = h.run("first").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, "");
    assert_eq!(h.bodies().len(), 1);
    h.run("second").await;
    let body = h.body(1);
    assert_valid_conversation(&body);
    let m = messages(&body);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(texts(&m[0]), vec!["first", "second"]);
}

#[tokio::test]
async fn round_cap() {
    let cfg = AgentConfig { max_rounds: 3, ..AgentConfig::default() };
    let script = (1..=5).map(|i| bash(&format!("echo {i}"))).chain([Step::text("resumed")]).collect();
    let mut h = Harness::with_cfg(script, cfg).await;
    let out = h.run("loop forever").await;
    assert_eq!(out.reason, FinishReason::MaxRounds);
    assert_eq!(out.rounds, 3);
    assert_eq!(h.bodies().len(), 3);
    assert_eq!(h.mock.remaining(), 3);
    // The third round's results are kept, so the next prompt continues a valid conversation.
    h.run("continue").await;
    let body = h.body(3);
    assert_valid_conversation(&body);
    let last = last_message(&body);
    assert_eq!(tool_results(last).len(), 1);
    assert_eq!(texts(last).last().unwrap(), "continue");
}

#[tokio::test]
async fn usage_per_round_and_per_run() {
    let mut h = Harness::new(vec![
        Turn::default().with_tool("bash", json!({"command": "true"})).with_usage(100, 20).into(),
        Turn::default().with_tool("bash", json!({"command": "echo"})).with_usage(150, 30).into(),
        Turn::text("done").with_usage(200, 10).into(),
    ])
    .await;
    let out = h.run("count").await;
    let u = |i, o| Usage { input_tokens: i, output_tokens: o, ..Usage::default() };
    assert_eq!(h.events.usages(), vec![(u(100, 20), u(100, 20)), (u(150, 30), u(250, 50)), (u(200, 10), u(450, 60))]);
    assert_eq!(out.usage, u(450, 60));
    // A new run counts from zero.
    h.mock.push(Turn::text("again").with_usage(7, 3));
    h.events.take();
    let out = h.run("again").await;
    assert_eq!(out.usage, u(7, 3));
    assert_eq!(h.events.usages(), vec![(u(7, 3), u(7, 3))]);
}

#[tokio::test]
async fn events_of_a_run_in_order() {
    let mut h = Harness::new(vec![
        Turn::text("Planning.")
            .with_tool("todo", json!({"items": [{"id": "1", "text": "Go", "status": "in_progress"}]}))
            .into(),
        Step::text("All set."),
    ])
    .await;
    let out = h.run("go").await;
    let evs = h.events.events();
    let kinds: Vec<&str> = evs
        .iter()
        .map(|e| match e {
            Ev::Thinking(_) => "thinking",
            Ev::Text(_) => "text",
            Ev::ToolStarted { .. } => "started",
            Ev::ToolFinished { .. } => "finished",
            Ev::Plan(_) => "plan",
            Ev::Reminder(_) => "reminder",
            Ev::Diagnostics(_) => "diagnostics",
            Ev::Usage { .. } => "usage",
            Ev::Compacted { .. } => "compacted",
            Ev::Finished(_) => "end",
            Ev::Subagent { .. } | Ev::Child { .. } => "subagent",
        })
        .collect::<Vec<_>>();
    let mut dedup = kinds.clone();
    dedup.dedup();
    assert_eq!(
        dedup,
        vec!["thinking", "text", "usage", "started", "finished", "plan", "thinking", "text", "usage", "end"]
    );
    let streamed: String =
        evs.iter().filter_map(|e| if let Ev::Text(t) = e { Some(t.as_str()) } else { None }).collect();
    assert_eq!(streamed, "Planning.All set.");
    assert!(evs.contains(&Ev::Plan("[>] #1: Go\n\n(0/1 completed)".into())));
    assert_eq!(evs.last(), Some(&Ev::Finished(out)));
    assert!(h.events.checkpoints() >= 3, "prompt, round and end checkpoints");
}

#[tokio::test]
async fn cancel_during_a_shell_command() {
    let mut h = Harness::new(vec![
        call("bash", json!({"command": "sleep 30 & echo $! > sleep.pid; echo $$ > bash.pid; wait"})),
        Step::text("resumed"),
    ])
    .await;
    let token = CancellationToken::new();
    let t = token.clone();
    let pid_file = h.ws.join("bash.pid");
    tokio::spawn(async move {
        // The shell has written both pids and waits for its child: cancel now.
        wait_for_line(&pid_file).await;
        t.cancel();
    });
    let start = Instant::now();
    let out = h.run_with("sleep a while", &token).await;
    assert_eq!(out.reason, FinishReason::Cancelled);
    assert!(start.elapsed() < Duration::from_secs(5), "cancel took {:?}", start.elapsed());
    let sleeper = read_pid(&h.ws.join("sleep.pid"));
    let shell = read_pid(&h.ws.join("bash.pid"));
    assert!(wait_gone(sleeper), "sleep {sleeper} survived the cancel");
    assert!(wait_gone(shell), "bash {shell} survived the cancel");
    assert_eq!(h.bodies().len(), 1);

    let out = h.run("try something else").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, "resumed");
    let body = h.body(1);
    assert_valid_conversation(&body);
    let m = messages(&body);
    assert_eq!(m.len(), 3);
    let res = tool_results(&m[2]);
    assert_eq!(res.len(), 1);
    assert_eq!(res[0].1, "Error: Cancelled by the user");
    assert!(res[0].2);
    assert_eq!(texts(&m[2]), vec!["try something else"]);
}

#[tokio::test]
async fn cancel_skips_the_remaining_calls_of_the_response() {
    let mut h = Harness::new(vec![
        calls(&[
            ("bash", json!({"command": "echo started > started.txt; sleep 30"})),
            ("write_file", json!({"path": "late.txt", "content": "x"})),
        ]),
        Step::text("ok"),
    ])
    .await;
    let token = CancellationToken::new();
    let t = token.clone();
    let started = h.ws.join("started.txt");
    tokio::spawn(async move {
        wait_for_line(&started).await;
        t.cancel();
    });
    let out = h.run_with("x", &token).await;
    assert_eq!(out.reason, FinishReason::Cancelled);
    assert!(!h.ws.join("late.txt").exists(), "a call after the cancel ran");
    h.run("y").await;
    let body = h.body(1);
    assert_valid_conversation(&body);
    let res = tool_results(&messages(&body)[2]);
    assert_eq!(res.len(), 2);
    assert!(res.iter().all(|r| r.2 && r.1 == "Error: Cancelled by the user"), "{res:?}");
}

#[tokio::test]
async fn cancel_during_a_model_request() {
    let mut h = Harness::new(vec![Step::Hang, Step::text("back")]).await;
    let token = CancellationToken::new();
    let t = token.clone();
    let mock = h.mock.clone();
    tokio::spawn(async move {
        // The request is at the model, which never answers.
        mock.wait_for_requests(1, WAIT).await;
        t.cancel();
    });
    let start = Instant::now();
    let out = h.run_with("first", &token).await;
    assert_eq!(out.reason, FinishReason::Cancelled);
    assert!(start.elapsed() < Duration::from_secs(5), "cancel took {:?}", start.elapsed());
    let out = h.run("second").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, "back");
    let body = h.body(1);
    assert_valid_conversation(&body);
    let m = messages(&body);
    assert_eq!(m.len(), 1);
    assert_eq!(texts(&m[0]), vec!["first", "second"]);
}

#[tokio::test]
async fn already_cancelled_sends_nothing() {
    let mut h = Harness::new(vec![Step::text("never")]).await;
    let token = CancellationToken::new();
    token.cancel();
    let out = h.run_with("x", &token).await;
    assert_eq!(out.reason, FinishReason::Cancelled);
    // The next run's request is the model's first: nothing was sent before it.
    let out = h.run("y").await;
    assert_eq!(out.final_text, "never");
    assert_eq!(h.bodies().len(), 1);
    assert_eq!(texts(&messages(&h.body(0))[0]), vec!["x", "y"]);
}

/// Waits (bounded) until a command has written a whole line to `path`.
async fn wait_for_line(path: &std::path::Path) {
    let deadline = Instant::now() + WAIT;
    while !std::fs::read_to_string(path).is_ok_and(|t| t.ends_with('\n')) {
        assert!(Instant::now() < deadline, "{} was never written", path.display());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn tasks_planning_style_through_the_loop() {
    let cfg = AgentConfig { planning: PlanningStyle::Tasks, reminder_rounds: 1, ..AgentConfig::default() };
    let upd = |id: &str, s: &str| ("update_todo", json!({"id": id, "status": s}));
    let mut h = Harness::with_cfg(
        vec![
            calls(&[
                ("create_todos", json!({"items": ["Read", "Edit"]})),
                upd("1", "running"),
                upd("2", "running"),
                upd("1", "completed"),
                upd("1", "running"),
                upd("9", "completed"),
                upd("2", "pending"),
                ("todo", json!({"items": []})),
            ]),
            bash("echo 1"),
            call("create_todos", json!({"items": ["Test"]})),
            Step::text("done"),
        ],
        cfg,
    )
    .await;
    let out = h.run("tasks").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    let b0 = h.body(0);
    assert_eq!(tool_names(&b0), offered(PlanningStyle::Tasks, false));
    assert!(tool_names(&b0).iter().any(|n| n == "create_todos"));
    assert!(system_text(&b0).contains("create_todos"));
    let got = results(&h.body(1));
    let texts: Vec<&str> = got.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        texts,
        vec![
            "[ ] #1: Read\n[ ] #2: Edit\n\n(0/2 completed)",
            "[>] #1: Read\n[ ] #2: Edit\n\n(0/2 completed)",
            "Error: Only one task can be in_progress at a time (step 1 is running)",
            "[x] #1: Read\n[ ] #2: Edit\n\n(1/2 completed)",
            "Error: invalid transition for step 1: completed -> running (steps only move forward: pending -> running -> completed or failed)",
            "Error: no step with id '9' (known ids: 1, 2)",
            "Error: invalid status 'pending' for update_todo: use running, completed or failed",
            "Unknown tool: todo",
        ]
    );
    assert_eq!(got.iter().map(|r| r.2).collect::<Vec<_>>(), vec![false, false, true, false, true, true, true, true]);
    // Planning calls reset the reminder count; a round without one is nagged (reminder_rounds 1).
    assert!(!last_has_reminder(&h.body(1)));
    assert!(last_has_reminder(&h.body(2)));
    assert_eq!(result_texts(&h.body(3)), vec!["[x] #1: Read\n[ ] #2: Edit\n[ ] #3: Test\n\n(1/3 completed)"]);
    assert!(!last_has_reminder(&h.body(3)));
}

#[tokio::test]
async fn todo_style_offers_todo_only() {
    let mut h = Harness::new(vec![call("create_todos", json!({"items": ["x"]})), Step::text("ok")]).await;
    h.run("x").await;
    let b0 = h.body(0);
    assert_eq!(tool_names(&b0), offered(PlanningStyle::Todo, false));
    assert_eq!(tool_names(&b0)[4], "todo");
    let todo = &b0["tools"][4]["input_schema"]["properties"]["items"]["items"]["properties"]["status"]["enum"];
    assert_eq!(todo, &json!(["pending", "in_progress", "completed"]));
    assert_eq!(result_texts(&h.body(1)), vec!["Unknown tool: create_todos"]);
}
