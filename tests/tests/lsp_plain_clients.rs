//! Clients without stepwise-specific code (eglot, Helix, Kakoune) ignore `stepwise/*` notifications and
//! show no code lenses; they see plan changes and reminders as `window/logMessage`, one line each.

use serde_json::{json, Value};
use stepwise_tests::lsp_client::Incoming;
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

fn item(id: &str, text: &str, status: &str) -> Value {
    json!({"id": id, "text": text, "status": status})
}

fn log_lines(ed: &TestEditor) -> Vec<(i64, String)> {
    ed.transcript()
        .into_iter()
        .filter_map(|m| match m {
            Incoming::Notification { method, params } if method == "window/logMessage" => {
                Some((params["type"].as_i64().unwrap_or(0), params["message"].as_str().unwrap_or("").to_string()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_changes_and_reminders_arrive_as_log_messages() {
    let (dir, state) = folder_and_state("plain");
    dir.write("a.txt", "alpha\n");
    let read = || Step::tool("read_file", json!({"path": "a.txt"}));
    let mock = MockModel::start(vec![
        Step::tool(
            "todo",
            json!({"items": [item("1", "Read a.txt", "in_progress"), item("2", "Say\nwhat  it is", "pending")]}),
        ),
        // Three rounds without a plan update: the model is reminded.
        read(),
        read(),
        read(),
        Step::tool(
            "todo",
            json!({"items": [item("1", "Read a.txt", "completed"), item("2", "Say what it is", "completed")]}),
        ),
        Step::text("It says alpha."),
    ])
    .await;
    let ed = editor(ClientPreset::Bare, &dir, &state, &mock).start().await;
    let run = ed.run("What does a.txt say?").await;
    assert_eq!(run.reason(), "end_turn");
    assert!(!run.of("stepwise/reminder").is_empty(), "the model was reminded");

    let name = dir.path().canonicalize().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    let lines = log_lines(&ed);
    let plan_lines: Vec<&str> =
        lines.iter().filter(|(_, m)| m.starts_with("stepwise plan")).map(|(_, m)| m.as_str()).collect();
    assert_eq!(
        plan_lines,
        vec![
            format!("stepwise plan ({name}) 0/2: [>] Read a.txt | [ ] Say what it is"),
            format!("stepwise plan ({name}) 2/2: [x] Read a.txt | [x] Say what it is"),
        ]
    );
    let reminders: Vec<&str> =
        lines.iter().filter(|(_, m)| m.starts_with("stepwise reminder")).map(|(_, m)| m.as_str()).collect();
    assert_eq!(reminders.len(), run.of("stepwise/reminder").len());
    assert_eq!(reminders[0], format!("stepwise reminder ({name}): <reminder>Update your todos.</reminder>"));
    for (typ, m) in &lines {
        assert!(!m.contains('\n'), "one line each: {m:?}");
        assert!(*typ == 3 || *typ == 4, "Info or Log: {typ}");
    }
    // The plan line arrives in order with the plan notification it mirrors.
    let order: Vec<String> = ed
        .transcript()
        .iter()
        .filter_map(|m| match m {
            Incoming::Notification { method, params } if method == "window/logMessage" => {
                params["message"].as_str().filter(|t| t.starts_with("stepwise plan")).map(|_| "log".to_string())
            }
            Incoming::Notification { method, .. } if method == "stepwise/plan" => Some("plan".to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["plan", "log", "plan", "log"]);
    ed.finish().await;
}
