//! Subagents (the seeds' s04, `task`), on the engine against the scripted model: what a child is sent, what
//! its parent reads back, children at once, a child stopped alone, the parent stopped with its children,
//! the summary a child that stops short is asked for, agents and their files.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use stepwise::agent::AgentConfig;
use stepwise::plan::Mode;
use stepwise_tests::mock::{first_user_text, Step, Turn};
use stepwise_tests::sent::tool_names;

fn task(id: &str, prompt: &str, description: &str) -> (String, Value) {
    (id.to_string(), json!({"prompt": prompt, "description": description}))
}

/// One parent turn making these `task` calls (ids chosen).
fn tasks(list: &[(String, Value)]) -> Step {
    let mut t = Turn::default();
    for (id, input) in list {
        t = t.with_tool_id(id.clone(), "task", input.clone());
    }
    t.into()
}

/// The bodies of the requests whose conversation began with `key`, in the order they came.
fn requests_of(h: &Harness, key: &str) -> Vec<Value> {
    h.bodies().into_iter().filter(|b| first_user_text(b).contains(key)).collect()
}

/// The result the parent read for the call `id`.
fn result_of(body: &Value, id: &str) -> (String, bool) {
    let found = messages(body).iter().flat_map(tool_results).find(|(i, _, _)| i == id);
    let (_, text, is_error) = found.unwrap_or_else(|| panic!("no result for {id} in {body}"));
    (text, is_error)
}

/// Waits (polling the collected events, never a fixed sleep) until `pred` holds for one of them.
async fn until(h: &Harness, what: &str, pred: impl Fn(&Ev) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !h.events.events().iter().any(&pred) {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}: {:?}", h.events.events());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn child_started<'a>(id: &'a str, tool: &'a str) -> impl Fn(&Ev) -> bool + 'a {
    move |e| matches!(e, Ev::Child { id: i, ev } if i == id && matches!(&**ev, Ev::ToolStarted { name, .. } if name == tool))
}

#[tokio::test]
async fn a_child_gets_only_its_prompt_without_task_and_its_parent_reads_its_text_and_the_line() {
    let h = Harness::new(vec![
        tasks(&[task("t1", "CHILD-A: what does a.txt say?", "read a.txt")]),
        Step::text("parent done"),
    ]);
    let mut h = h.await;
    std::fs::write(h.ws.path().join("a.txt"), "forty-two\n").unwrap();
    h.mock.route(
        "CHILD-A",
        vec![
            Turn::default().with_tool("read_file", json!({"path": "a.txt"})).with_usage(100, 10).into(),
            Turn::text("a.txt says forty-two.").with_usage(120, 5).into(),
        ],
    );
    let out = h.run("find out what a.txt says, with a subagent").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");

    let parent = h.body(0);
    assert!(tool_names(&parent).contains(&"task".to_string()), "the parent is offered task");
    let child = requests_of(&h, "CHILD-A");
    assert_eq!(child.len(), 2, "two rounds of the child");
    assert_eq!(messages(&child[0]).len(), 1, "the child's first request holds its prompt alone: {}", child[0]);
    assert_eq!(texts(&messages(&child[0])[0]), vec!["CHILD-A: what does a.txt say?"]);
    let offered = tool_names(&child[0]);
    assert!(!offered.contains(&"task".to_string()) && offered.contains(&"read_file".to_string()), "{offered:?}");
    assert!(system_text(&child[0]).contains("You are a subagent"), "{}", system_text(&child[0]));

    let last = h.bodies().last().cloned().unwrap();
    assert!(!first_user_text(&last).contains("CHILD-A"), "the parent's request is last");
    let (text, is_error) = result_of(&last, "t1");
    assert!(!is_error);
    assert!(text.starts_with("a.txt says forty-two."), "{text}");
    assert!(text.ends_with("(subagent sa-1: 2 rounds, 235 tokens, done)"), "{text}");
    assert!(
        out.usage.input_tokens >= 220 && out.usage.output_tokens >= 15,
        "the child's tokens count: {:?}",
        out.usage
    );

    let evs = h.events.events();
    assert!(evs.iter().any(child_started("sa-1", "read_file")), "the child's call is told as its own");
    let states: Vec<String> = evs
        .iter()
        .filter_map(|e| if let Ev::Subagent { state, .. } = e { Some(state.clone()) } else { None })
        .collect();
    assert_eq!(states.first().map(String::as_str), Some("running"));
    assert_eq!(states.last().map(String::as_str), Some("done"));
    assert!(
        !evs.iter().any(|e| matches!(e, Ev::ToolStarted { name, .. } if name == "read_file")),
        "the child's calls are not the parent's"
    );
}

#[tokio::test]
async fn a_child_at_its_round_limit_is_asked_once_more_with_no_tools_and_returns_its_summary() {
    let mut h = Harness::new(vec![tasks(&[task("t1", "CHILD-L: read forever", "loop")]), Step::text("ok")]).await;
    std::fs::write(h.ws.path().join("a.txt"), "x\n").unwrap();
    let mut steps: Vec<Step> = (0..30).map(|_| call("read_file", json!({"path": "a.txt"}))).collect();
    steps.push(Step::text("I read a.txt thirty times; it holds x."));
    h.mock.route("CHILD-L", steps);
    let out = h.run("delegate the loop").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");

    let child = requests_of(&h, "CHILD-L");
    assert_eq!(child.len(), 31, "30 rounds, then the summary");
    let summary = &child[30];
    assert!(tool_names(summary).is_empty(), "the summary is asked with no tools: {:?}", tool_names(summary));
    let asked = texts(last_message(summary)).join("\n");
    assert!(asked.contains("You stopped (it reached its limit of 30 rounds)"), "{asked}");

    let (text, _) = result_of(h.bodies().last().unwrap(), "t1");
    assert!(text.starts_with("I read a.txt thirty times"), "{text}");
    assert!(text.contains("(subagent sa-1: 30 rounds, "), "{text}");
    assert!(text.ends_with("it reached its limit of 30 rounds; asked once more, it summarized)"), "{text}");
}

#[tokio::test]
async fn a_child_that_fails_is_asked_for_its_summary_and_a_child_that_ends_silent_too() {
    let parent = tasks(&[task("t1", "CHILD-F: fail", "fails"), task("t2", "CHILD-S: silent", "silent")]);
    let mut h = Harness::new(vec![parent, Step::text("ok")]).await;
    h.mock.route("CHILD-F", vec![Step::http_error(400), Step::text("I could not start: the provider refused.")]);
    h.mock.route("CHILD-S", vec![Step::text(""), Step::text("Nothing to report but this.")]);
    let out = h.run("two children").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    let last = h.bodies().last().cloned().unwrap();
    let (failed, _) = result_of(&last, "t1");
    assert!(failed.starts_with("I could not start"), "{failed}");
    assert!(failed.contains(", it failed: "), "{failed}");
    let (silent, _) = result_of(&last, "t2");
    assert!(silent.starts_with("Nothing to report but this."), "{silent}");
    assert!(silent.ends_with("it ended without text; asked once more, it summarized)"), "{silent}");
    let failed_state = h
        .events
        .events()
        .iter()
        .any(|e| matches!(e, Ev::Subagent { call, state, .. } if call == "t1" && state == "failed"));
    assert!(failed_state, "the failed child is told failed");
}

#[tokio::test]
async fn children_of_one_response_run_at_the_same_time() {
    let parent = tasks(&[task("ta", "CHILD-A: look", "a"), task("tb", "CHILD-B: look", "b")]);
    let mut h = Harness::new(vec![parent, Step::text("both back")]).await;
    std::fs::write(h.ws.path().join("a.txt"), "x\n").unwrap();
    // A's first answer comes late: if the children ran one after the other, B would ask nothing before it.
    let slow = Turn::default().with_tool("read_file", json!({"path": "a.txt"})).with_delay_ms(400);
    h.mock.route("CHILD-A", vec![slow.into(), Step::text("A done")]);
    h.mock.route("CHILD-B", vec![call("read_file", json!({"path": "a.txt"})), Step::text("B done")]);
    let out = h.run("two at once").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    let order: Vec<String> = h
        .bodies()
        .iter()
        .map(first_user_text)
        .map(|t| {
            if t.contains("CHILD-A") {
                "A".into()
            } else if t.contains("CHILD-B") {
                "B".into()
            } else {
                "P".into()
            }
        })
        .collect();
    let (a2, b1) = (order.iter().rposition(|x| x == "A").unwrap(), order.iter().position(|x| x == "B").unwrap());
    assert!(b1 < a2, "B asked before A's second request: {order:?}");
    let last = h.bodies().last().cloned().unwrap();
    assert!(result_of(&last, "ta").0.starts_with("A done") && result_of(&last, "tb").0.starts_with("B done"));
}

#[tokio::test]
async fn a_child_stopped_alone_ends_cancelled_with_its_summary_while_the_other_finishes() {
    let parent = tasks(&[task("ta", "CHILD-A: wait", "waits"), task("tb", "CHILD-B: read", "reads")]);
    let h = Harness::new(vec![parent, Step::text("parent done")]).await;
    std::fs::write(h.ws.path().join("a.txt"), "x\n").unwrap();
    h.mock.route("CHILD-A", vec![call("bash", json!({"command": "sleep 30"})), Step::text("I was waiting on sleep.")]);
    // B's first answer waits until A is stopped: B's end comes after A's stop, in one run.
    let late = Turn::default().with_tool("read_file", json!({"path": "a.txt"})).with_delay_ms(300);
    h.mock.route("CHILD-B", vec![late.into(), Step::text("B read it")]);
    let work = h.work.clone();
    let stop = async {
        until(&h, "A's command", child_started("sa-1", "bash")).await;
        assert!(work.subagents().cancel("sa-1"), "sa-1 runs");
    };
    let (out, ()) = {
        let events = &h.events;
        let run = async {
            let ticket = work.begin().unwrap();
            work.prompt(&ticket, "two children", &h.llm, &h.host, events, &h.cfg).await
        };
        tokio::join!(tokio::time::timeout(Duration::from_secs(30), run), stop)
    };
    let out = out.expect("the run ends");
    assert_eq!(out.reason, FinishReason::EndTurn, "the parent goes on: {out:?}");
    let last = h.bodies().last().cloned().unwrap();
    let (a, _) = result_of(&last, "ta");
    assert!(a.starts_with("I was waiting on sleep."), "{a}");
    assert!(a.ends_with("it was cancelled; asked once more, it summarized)"), "{a}");
    let (b, _) = result_of(&last, "tb");
    assert!(b.starts_with("B read it") && b.ends_with("done)"), "{b}");
    assert!(!work.subagents().cancel("sa-1"), "nothing runs by that id any more");
}

#[tokio::test]
async fn the_parent_cancelled_while_three_children_run_ends_them_all_each_result_saying_so() {
    let ids = ["t1", "t2", "t3"];
    let parent: Vec<(String, Value)> =
        ids.iter().enumerate().map(|(i, id)| task(id, &format!("CHILD-{i}: wait"), "waits")).collect();
    let h = Harness::new(vec![tasks(&parent)]).await;
    for i in 0..3 {
        h.mock.route(format!("CHILD-{i}"), vec![call("bash", json!({"command": format!("sleep 3{i}")}))]);
    }
    let work = h.work.clone();
    let ticket = work.begin().unwrap();
    let stopper = ticket.cancel.clone();
    let run = work.prompt(&ticket, "three children", &h.llm, &h.host, &h.events, &h.cfg);
    let bash_started =
        |e: &Ev| matches!(e, Ev::Child { ev, .. } if matches!(&**ev, Ev::ToolStarted { name, .. } if name == "bash"));
    let watch = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while h.events.events().iter().filter(|e| bash_started(e)).count() < 3 {
            assert!(tokio::time::Instant::now() < deadline, "three commands did not start: {:?}", h.events.events());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        stopper.cancel();
    };
    let (out, ()) = tokio::join!(run, watch);
    assert_eq!(out.reason, FinishReason::Cancelled, "{out:?}");
    let session = h.session().await;
    let results = tool_results(&serde_json::to_value(session.messages.last().unwrap()).unwrap());
    assert_eq!(results.len(), 3, "every call has its result");
    for (id, text, _) in results {
        assert!(text.contains("cancelled"), "{id}: {text}");
    }
}

#[tokio::test]
async fn an_unknown_agent_is_refused_naming_the_known_ones_and_plan_mode_runs_only_explore() {
    let cfg = AgentConfig { mode: Mode::Plan, ..AgentConfig::default() };
    let t = Turn::default()
        .with_tool_id("t1", "task", json!({"prompt": "CHILD-X: x", "agent": "nobody"}))
        .with_tool_id("t2", "task", json!({"prompt": "CHILD-G: g"}))
        .with_tool_id("t3", "task", json!({"prompt": "CHILD-E: look around", "agent": "explore"}));
    let mut h = Harness::with_cfg(vec![t.into(), Step::text("planned")], cfg).await;
    h.mock.route("CHILD-E", vec![Step::text("Found the entry point in main.rs.")]);
    let out = h.run("plan with an explorer").await;
    assert_eq!(out.reason, FinishReason::PlanReady, "{out:?}");
    let last = h.bodies().last().cloned().unwrap();
    let (unknown, is_error) = result_of(&last, "t1");
    assert!(
        is_error && unknown.contains("unknown agent 'nobody'") && unknown.contains("general, explore"),
        "{unknown}"
    );
    let (general, _) = result_of(&last, "t2");
    assert!(general.contains("only a read-only agent (explore) may run"), "{general}");
    let (explored, _) = result_of(&last, "t3");
    assert!(explored.starts_with("Found the entry point"), "{explored}");
    let child = requests_of(&h, "CHILD-E");
    let offered = tool_names(&child[0]);
    assert!(!offered.iter().any(|t| t == "write_file" || t == "edit_file" || t == "task"), "{offered:?}");
    assert!(!system_text(&child[0]).contains("Plan first"), "an explorer is not told to plan");
}

#[tokio::test]
async fn an_agent_file_narrows_the_tools_and_brings_its_prompt_claude_code_format() {
    let t = Turn::default().with_tool_id("t1", "task", json!({"prompt": "CHILD-R: review", "agent": "reviewer"}));
    let mut h = Harness::new(vec![t.into(), Step::text("reviewed")]).await;
    let dir = h.ws.path().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    let file =
        "---\nname: reviewer\ndescription: Reviews a change\ntools: Read, Grep\n---\nYou review code. Be terse.\n";
    std::fs::write(dir.join("reviewer.md"), file).unwrap();
    std::fs::write(dir.join("broken.md"), "no frontmatter here").unwrap();
    h.mock.route("CHILD-R", vec![Step::text("Looks fine.")]);
    let out = h.run("review it").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    assert!(system_text(&h.body(0)).contains("- reviewer: Reviews a change"), "the parent is told of the agent");
    let child = requests_of(&h, "CHILD-R");
    assert_eq!(tool_names(&child[0]), ["bash", "read_file"], "Read and Grep, as stepwise's tools");
    assert!(system_text(&child[0]).contains("You review code. Be terse."));
    let found = stepwise::subagents::agents::find(h.ws.path());
    assert_eq!(found.problems.len(), 1, "the broken file is said: {:?}", found.problems);
}

#[tokio::test]
async fn a_childs_write_over_what_another_child_changed_since_it_read_is_refused() {
    let parent = tasks(&[task("ta", "CHILD-A: rewrite f", "a"), task("tb", "CHILD-B: write f", "b")]);
    let mut h = Harness::new(vec![parent, Step::text("both back")]).await;
    std::fs::write(h.ws.path().join("f.txt"), "first\n").unwrap();
    // A reads at once; B writes a little later; A's write comes after both.
    let a_write =
        Turn::default().with_tool("write_file", json!({"path": "f.txt", "content": "A's\n"})).with_delay_ms(800);
    h.mock.route("CHILD-A", vec![call("read_file", json!({"path": "f.txt"})), a_write.into(), Step::text("A tried")]);
    let b_write =
        Turn::default().with_tool("write_file", json!({"path": "f.txt", "content": "B's\n"})).with_delay_ms(300);
    h.mock.route("CHILD-B", vec![b_write.into(), Step::text("B wrote")]);
    let out = h.run("two children, one file").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    assert_eq!(std::fs::read_to_string(h.ws.path().join("f.txt")).unwrap(), "B's\n", "B's write stands");
    let a = requests_of(&h, "CHILD-A");
    let told = results(&a[2]);
    assert_eq!(told[0].1, "Error: f.txt changed since you last read it; read it again", "{told:?}");
}

#[tokio::test]
async fn a_child_in_a_loop_is_stopped_by_the_duplicate_guard_and_still_returns_a_summary() {
    let mut h = Harness::new(vec![tasks(&[task("t1", "CHILD-L: echo", "loops")]), Step::text("ok")]).await;
    let again = || call("bash", json!({"command": "echo same"}));
    h.mock.route("CHILD-L", vec![again(), again(), Step::text("I kept echoing the same thing.")]);
    let out = h.run("delegate").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    let (text, _) = result_of(h.bodies().last().unwrap(), "t1");
    assert!(text.starts_with("I kept echoing"), "{text}");
    assert!(
        text.contains("(subagent sa-1: 2 rounds, ")
            && text.ends_with("it repeated a call in a loop; asked once more, it summarized)"),
        "{text}"
    );
    assert_eq!(requests_of(&h, "CHILD-L").len(), 3, "two rounds, then the summary");
}

#[tokio::test]
async fn at_most_four_children_run_at_once_and_the_fifth_waits_for_a_slot() {
    let list: Vec<(String, Value)> =
        (1..=5).map(|i| task(&format!("t{i}"), &format!("CHILD-{i}: work"), "works")).collect();
    let mut h = Harness::new(vec![tasks(&list), Step::text("all back")]).await;
    for i in 1..=5 {
        h.mock.route(
            format!("CHILD-{i}"),
            vec![call("bash", json!({"command": "sleep 0.3"})), Step::text(format!("child {i} done"))],
        );
    }
    let out = h.run("five children").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    let evs = h.events.events();
    let started = |e: &Ev| matches!(e, Ev::Subagent { state, rounds: 0, .. } if state == "running");
    let ended = |e: &Ev| matches!(e, Ev::Subagent { state, .. } if state == "done");
    let starts: Vec<usize> = evs.iter().enumerate().filter(|(_, e)| started(e)).map(|(i, _)| i).collect();
    let first_end = evs.iter().position(ended).expect("a child ended");
    assert_eq!(starts.len(), 5);
    assert!(
        starts[3] < first_end && starts[4] > first_end,
        "four at once, the fifth after one ended: {starts:?} / {first_end}"
    );
    let last = h.bodies().last().cloned().unwrap();
    for i in 1..=5 {
        assert!(result_of(&last, &format!("t{i}")).0.starts_with(&format!("child {i} done")));
    }
}

#[tokio::test]
async fn a_background_task_a_child_started_is_told_to_the_parent_not_to_the_child() {
    let mut h =
        Harness::new(vec![tasks(&[task("t1", "CHILD-G: start it", "starts a task")]), Step::text("seen")]).await;
    // The child starts a task that ends at once, then reads a file (a round for the end to be told in).
    std::fs::write(h.ws.path().join("a.txt"), "x\n").unwrap();
    h.mock.route(
        "CHILD-G",
        vec![
            call("background_run", json!({"command": "echo from-the-task"})),
            call("read_file", json!({"path": "a.txt"})),
            Step::text("Started it."),
        ],
    );
    let out = h.run("delegate a background task").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    for body in requests_of(&h, "CHILD-G") {
        assert!(!body.to_string().contains("<background-results>"), "not the child's: {body}");
    }
    // The parent's: in its request after the child, or (the task ended after that round closed) waiting for
    // the session's next request.
    let parent = h.bodies().last().cloned().unwrap();
    let sent = texts(last_message(&parent)).into_iter().find(|t| t.starts_with("<background-results>"));
    let bg = h.work.background();
    let task = bg.find("bg-1").expect("the child's task");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while task.is_running() && sent.is_none() {
        assert!(tokio::time::Instant::now() < deadline, "the task did not end");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let told = sent.or_else(|| bg.take_results()).expect("the task's end is the parent's to read");
    assert!(told.contains("bg-1: exited 0"), "{told}");
}
