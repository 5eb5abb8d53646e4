//! Background commands through the engine and the mock model: a dev server serves later commands, its
//! log is read, it is stopped with nothing left; a task that ends is told in the next request; a task
//! outlives the thread that started it.

mod common;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use stepwise::background::{Background, Killer};
use stepwise_tests::mock::Step;

fn done() -> Step {
    Step::text("done")
}

/// A port free now on 127.0.0.1.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits up to `limit` for `port` to be free to bind again.
fn port_free_within(port: u16, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A `bash` command fetching `http://127.0.0.1:PORT/` (the server may take a moment to listen).
fn fetch(port: u16) -> String {
    format!(
        "python3 - <<'EOF'\nimport time, urllib.request\nfor i in range(200):\n    try:\n        print(urllib.request.urlopen('http://127.0.0.1:{port}/hello.txt').read().decode()); break\n    except Exception:\n        time.sleep(0.05)\nEOF"
    )
}

fn block_texts(body: &serde_json::Value) -> Vec<String> {
    messages(body).iter().flat_map(texts).filter(|t| t.starts_with("<background-results>")).collect()
}

#[tokio::test]
async fn a_background_server_answers_later_commands_shows_its_log_and_stops_with_nothing_left() {
    let port = free_port();
    let server = format!("echo $$ > server.pid; exec python3 -u -m http.server {port} --bind 127.0.0.1");
    let mut h = Harness::new(vec![
        call("background_run", json!({"command": server})),
        call("bash", json!({"command": fetch(port)})),
        call("check_background", json!({"task_id": "bg-1"})),
        call("kill_background", json!({"task_id": "bg-1"})),
        call("kill_background", json!({"task_id": "bg-9"})),
        done(),
    ])
    .await;
    h.ws.write("hello.txt", "hello from the workspace");
    let started = Instant::now();
    let out = h.run("serve and fetch").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    let started_text = &result_texts(&h.body(1))[0];
    assert!(started_text.starts_with("Background task bg-1 started: echo $$"), "{started_text}");
    assert_eq!(result_texts(&h.body(2)), vec!["hello from the workspace"], "the server answered the later command");
    let log = &result_texts(&h.body(3))[0];
    assert!(log.starts_with("bg-1: running\n"), "{log}");
    assert!(log.contains("\"GET /hello.txt HTTP/1.1\" 200"), "the request log: {log}");
    let killed = &result_texts(&h.body(4))[0];
    assert_eq!(killed, "bg-1: killed by kill_background (SIGTERM); none of its processes is left");
    let server_pid = read_pid(&h.ws.join("server.pid"));
    assert!(!process_alive(server_pid), "the server {server_pid} is still there after kill_background");
    assert!(port_free_within(port, Duration::from_secs(2)), "port {port} still taken");
    let unknown = &results(&h.body(5))[0];
    assert!(unknown.1.starts_with("Error: no background task bg-9 in this session (tasks: bg-1)"), "{unknown:?}");
    assert!(unknown.2, "an unknown id is an error result");
    // The kill's result told how it ended: no end report repeats it.
    assert!(h.bodies().iter().all(|b| block_texts(b).is_empty()));
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn a_task_that_exits_by_itself_is_told_in_the_next_request_once() {
    let mut h = Harness::new(vec![
        call("background_run", json!({"command": "echo building; echo oops >&2; touch finished; exit 7"})),
        call("bash", json!({"command": "while [ ! -f finished ]; do sleep 0.02; done; sleep 0.3; echo seen"})),
        call("bash", json!({"command": "echo next"})),
        done(),
    ])
    .await;
    let out = h.run("build in the background").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    let bodies = h.bodies();
    // Each request carries the conversation so far: the block is new in one request's last message.
    let told: Vec<(usize, String)> = bodies
        .iter()
        .enumerate()
        .flat_map(|(i, b)| {
            texts(last_message(b)).into_iter().filter(|t| t.starts_with("<background-")).map(move |t| (i, t))
        })
        .collect();
    assert_eq!(told.len(), 1, "told exactly once: {told:?}");
    let (i, block) = &told[0];
    // stdout and stderr in the order they arrived.
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines[..2], ["<background-results>", "bg-1: exited 7"], "{block}");
    assert_eq!(lines.len(), 5, "{block}");
    assert!(lines.contains(&"building") && lines.contains(&"oops") && lines[4] == "</background-results>");
    assert_eq!(block_texts(bodies.last().unwrap()).len(), 1, "kept in the conversation once");
    // In the user message of that round, after its tool results.
    let last = last_message(&bodies[*i]);
    let content = last["content"].as_array().unwrap();
    assert_eq!(content[0]["type"], "tool_result");
    assert_eq!(content.last().unwrap()["text"], block.as_str());
    assert_valid_conversation(&bodies[bodies.len() - 1]);
}

#[tokio::test]
async fn fifty_tasks_meet_the_cap_and_the_session_goes_on() {
    let starts: Vec<(&str, serde_json::Value)> =
        (0..50).map(|i| ("background_run", json!({"command": format!("sleep 300 # {i}")}))).collect();
    let mut h = Harness::new(vec![calls(&starts), call("check_background", json!({})), done()]).await;
    let out = h.run("start fifty").await;
    assert_eq!(out.reason, FinishReason::EndTurn);
    let firsts = result_texts(&h.body(1));
    assert_eq!(firsts.len(), 50);
    assert!(firsts[..10].iter().all(|t| t.starts_with("Background task bg-")), "{:?}", &firsts[..10]);
    for refused in &firsts[10..] {
        assert!(refused.contains("the most a session may have (10)"), "{refused}");
    }
    let list = &result_texts(&h.body(2))[0];
    assert_eq!(list.lines().count(), 10, "{list}");
    assert_eq!(h.work.background().running(), 10);
    h.work.background().kill_all_now();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_outlives_the_thread_that_started_it_and_dies_with_its_room() {
    let ws = TempDir::new("bg-thread");
    let bg = Arc::new(Background::default());
    let (root, room, handle) = (ws.path().to_path_buf(), bg.clone(), tokio::runtime::Handle::current());
    // A thread that starts the task and exits, as a tokio blocking thread may.
    std::thread::spawn(move || {
        handle.block_on(async {
            let started = stepwise::background::spawn(&root, "echo $$ > task.pid; exec sleep 300", None).await.unwrap();
            room.add("sleep", started);
        })
    })
    .join()
    .unwrap();
    let pid = read_pid(&ws.join("task.pid"));
    // A parent-death signal tied to the exited thread would have ended it by now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(process_alive(pid), "the task died with the thread that started it");
    assert!(bg.find("bg-1").unwrap().is_running());
    let said = bg.kill("bg-1", Killer::User).await.unwrap();
    assert_eq!(said, "bg-1: killed by the user (SIGTERM); none of its processes is left");
    assert!(!process_alive(pid));
    // The session going (its room dropped) ends what still runs, escapees included.
    let started =
        stepwise::background::spawn(ws.path(), "setsid sleep 300 & echo $! > esc.pid; wait", None).await.unwrap();
    bg.add("escape", started);
    let escaped = read_pid(&ws.join("esc.pid"));
    drop(bg);
    assert!(wait_gone(escaped), "a setsid child {escaped} outlived its session");
}

/// Sandboxed (network off), a server started in the background is reached by a later sandboxed `bash` on
/// the session's own loopback, and not from the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_background_server_answers_a_later_sandboxed_command() {
    use stepwise::sandbox::{SandboxMode, SandboxSettings};
    let settings = SandboxSettings { mode: SandboxMode::WorkspaceWrite, network: false, writable: Default::default() };
    if let Err(why) = stepwise::sandbox::availability(false) {
        eprintln!("CANNOT TRY: the sandbox cannot start here ({why})");
        return;
    }
    let port = free_port();
    let server = format!("exec python3 -u -m http.server {port} --bind 127.0.0.1");
    let cfg = stepwise::agent::AgentConfig { sandbox: settings, ..Default::default() };
    let mut h = Harness::with_cfg(
        vec![
            call("background_run", json!({"command": server})),
            call("bash", json!({"command": fetch(port)})),
            call("kill_background", json!({"task_id": "bg-1"})),
            done(),
        ],
        cfg,
    )
    .await;
    h.ws.write("hello.txt", "hello from the sandbox");
    let out = h.run("serve sandboxed").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    let isolation = stepwise::sandbox::network_isolation();
    let fetched = result_texts(&h.body(2));
    if fetched[0].is_empty() || !isolation.contains("namespace") {
        eprintln!("network isolation here: {isolation}; fetched: {fetched:?}");
    }
    assert_eq!(fetched, vec!["hello from the sandbox"], "the later sandboxed command reached the server");
    assert!(result_texts(&h.body(3))[0].starts_with("bg-1: killed by kill_background"));
}
