//! Background commands in the sidecar: `stepwise/background` shows a running task and its output, the
//! user's `stepwise.killBackground` stops it; the editor's pipe closing ends every task.

use std::time::{Duration, Instant};

use serde_json::json;
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(10);

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !matches!(s.rsplit(')').next().unwrap_or("").trim_start().chars().next(), Some('Z' | 'X')))
}

fn gone_within(pid: i32, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

async fn pid_in(path: std::path::PathBuf) -> i32 {
    for _ in 0..500 {
        if let Some(p) = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse().ok()) {
            return p;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no pid in {}", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_sees_a_running_task_and_stops_it() {
    let (dir, state) = folder_and_state("bg-lsp");
    let mock = MockModel::start(vec![
        Step::tool("background_run", json!({"command": "echo $$ > task.pid; echo serving; exec sleep 300"})),
        Step::text("started"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    assert_eq!(ed.run("start the server").await.reason(), "end_turn");
    let running = ed
        .await_notification_matching(
            "stepwise/background",
            |v| {
                v["tasks"][0]["running"] == true
                    && v["tasks"][0]["tail"].as_str().is_some_and(|t| t.contains("serving"))
            },
            T,
        )
        .await;
    assert_eq!(running["workspace"], ws.as_str());
    assert_eq!(running["tasks"][0]["id"], "bg-1");
    assert_eq!(running["tasks"][0]["state"], "running");
    let pid = pid_in(dir.path().join("task.pid")).await;
    let said = ed.execute("stepwise.killBackground", json!({"taskId": "bg-1"})).await.unwrap();
    assert_eq!(said, "bg-1: killed by the user (SIGTERM); none of its processes is left");
    assert!(!alive(pid), "the task {pid} outlived its Stop");
    ed.await_notification_matching(
        "stepwise/background",
        |v| v["tasks"][0]["state"] == "killed by the user (SIGTERM)" && v["tasks"][0]["running"] == false,
        T,
    )
    .await;
    let unknown = ed.execute("stepwise.killBackground", json!({"taskId": "bg-5"})).await.unwrap_err();
    assert!(unknown.message.contains("no background task bg-5 in this session (tasks: bg-1)"), "{unknown:?}");
    // The updates between those two (the start, before its output) are the folder's too.
    for v in ed.drain("stepwise/background") {
        assert_eq!(v["workspace"], ws.as_str());
    }
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_vanishing_ends_every_task() {
    let (dir, state) = folder_and_state("bg-vanish");
    let mock = MockModel::start(vec![
        Step::tool(
            "background_run",
            json!({"command": "setsid sleep 300 & echo $! > esc.pid; echo $$ > task.pid; exec sleep 300"}),
        ),
        Step::text("started"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).binary().start().await;
    assert_eq!(ed.run("start it").await.reason(), "end_turn");
    let task = pid_in(dir.path().join("task.pid")).await;
    let escaped = pid_in(dir.path().join("esc.pid")).await;
    ed.vanish().await;
    assert!(gone_within(task, Duration::from_secs(5)), "the task {task} outlived its editor");
    assert!(gone_within(escaped, Duration::from_secs(5)), "a setsid child {escaped} outlived its editor");
}

/// A `$/progress` of the background tasks (`stepwise/background/<n>`) of this kind saying `message`.
fn tasks_progress(v: &serde_json::Value, kind: &str, message: &str) -> bool {
    v["token"].as_str().is_some_and(|t| t.starts_with("stepwise/background/"))
        && v["value"]["kind"] == kind
        && v["value"]["message"] == message
}

/// The status counts the running tasks, a progress of their own says how many run (between runs too), and
/// a task that ends after its run is sent without the model being asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_and_progress_count_running_tasks_and_a_late_end_is_sent() {
    let (dir, state) = folder_and_state("bg-count");
    let mock = MockModel::start(vec![
        Step::tool("background_run", json!({"command": "echo $$ > a.pid; exec sleep 300"})),
        Step::text("one"),
        Step::tool("background_run", json!({"command": "while [ ! -f go ]; do sleep 0.05; done; echo bye; exit 3"})),
        Step::text("two"),
    ])
    .await;
    let ed = auto_editor(ClientPreset::VsCode, &dir, &state, &mock).start().await;
    let first = ed.run("start one").await;
    let statuses = first.of("stepwise/status");
    assert!(statuses.first().unwrap().get("backgroundTasks").is_none(), "none ran yet: {statuses:?}");
    assert_eq!(statuses.last().unwrap()["backgroundTasks"], 1, "{statuses:?}");
    let begin = ed
        .await_notification_matching("$/progress", |v| tasks_progress(v, "begin", "1 background task running"), T)
        .await;
    let token = begin["token"].clone();

    let second = ed.run("start another").await;
    assert_eq!(second.of("stepwise/status").last().unwrap()["backgroundTasks"], 2);
    ed.await_notification_matching(
        "$/progress",
        |v| v["token"] == token && tasks_progress(v, "report", "2 background tasks running"),
        T,
    )
    .await;

    // bg-2 ends by itself, no run going: the editor hears it, the model is not asked.
    // The mock records a request once it has answered it.
    let asked = mock.wait_for_requests(4, T).await.len();
    std::fs::write(dir.path().join("go"), "").unwrap();
    let ended = ed
        .await_notification_matching(
            "stepwise/background",
            |v| v["tasks"].as_array().into_iter().flatten().any(|t| t["id"] == "bg-2" && t["running"] == false),
            T,
        )
        .await;
    let bg2 = ended["tasks"].as_array().unwrap().iter().find(|t| t["id"] == "bg-2").unwrap().clone();
    assert_eq!(bg2["state"], "exited 3");
    assert!(bg2["tail"].as_str().unwrap().contains("bye"), "{bg2}");
    ed.await_notification_matching(
        "$/progress",
        |v| v["token"] == token && tasks_progress(v, "report", "1 background task running"),
        T,
    )
    .await;
    assert_eq!(mock.requests().len(), asked, "the model was asked about a task's end");

    ed.execute("stepwise.killBackground", json!({"taskId": "bg-1"})).await.unwrap();
    ed.await_notification_matching(
        "$/progress",
        |v| v["token"] == token && tasks_progress(v, "end", "no background task running"),
        T,
    )
    .await;
    // bg-1's end is told too, and may come after the progress's: waited for, not left unread.
    ed.await_notification_matching(
        "stepwise/background",
        |v| v["tasks"].as_array().into_iter().flatten().any(|t| t["id"] == "bg-1" && t["running"] == false),
        T,
    )
    .await;
    ed.drain("stepwise/background");
    ed.finish().await;
}
