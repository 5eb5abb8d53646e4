//! Shell commands through the client's terminals when it offers them (`clientCapabilities.terminal`):
//! the test client really runs each command, and the tests check the protocol sequence (permission, then
//! the call `in_progress`, `terminal/create`, the call showing the terminal, `wait_for_exit`, `output`,
//! `release`),
//! the result text the model gets, and `terminal/kill` on cancel and on the shell timeout.

mod common;

use common::{call, read_pid, result_texts, results, wait_gone};
use serde_json::{json, Value};
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::acp_client::{statuses, AcpClient};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;

fn allow(client: &mut AcpClient) {
    client.on_request = Box::new(|method, params| match method {
        "session/request_permission" => Ok(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})),
        other => panic!("unexpected request {other}: {params}"),
    });
}

/// What the agent sent about one call, in order: its requests by method, and the call's updates as
/// `update:<status>` (or `update` without one) with their content types.
fn sequence(received: &[Value], call: &str) -> Vec<String> {
    received
        .iter()
        .filter_map(|m| match m["method"].as_str()? {
            "session/update" if m["params"]["update"]["toolCallId"] == call => {
                let u = &m["params"]["update"];
                // A `tool_call` without a status is `pending`, the protocol's default.
                let status = match (u["status"].as_str(), u["sessionUpdate"] == "tool_call") {
                    (Some(s), _) => format!(":{s}"),
                    (None, true) => ":pending".into(),
                    (None, false) => String::new(),
                };
                let content: Vec<&str> =
                    u["content"].as_array().into_iter().flatten().filter_map(|c| c["type"].as_str()).collect();
                Some(format!(
                    "{}{status}{}",
                    u["sessionUpdate"].as_str()?,
                    if content.is_empty() { String::new() } else { format!(" [{}]", content.join(",")) }
                ))
            }
            "session/update" => None,
            method => Some(method.to_string()),
        })
        .collect()
}

fn first_call_id(received: &[Value]) -> String {
    let call = received.iter().find(|m| m["params"]["update"]["sessionUpdate"] == "tool_call").expect("a tool call");
    call["params"]["update"]["toolCallId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn commands_run_in_the_clients_terminal_and_the_model_reads_their_result() {
    let mock = MockModel::start(vec![
        call("bash", json!({"command": "echo made > made.txt; cat made.txt; exit 3"})),
        call("bash", json!({"command": "true"})),
        // 300,000 bytes: the client keeps the newest 200,000, the model reads at most 50,000 characters.
        call("bash", json!({"command": "head -c 300000 /dev/zero | tr '\\0' x"})),
        Step::text("done"),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.with_terminal().await;
    allow(&mut client);
    let sid = client.new_session(ws.path()).await;
    let from = client.received.len();
    let (resp, _) = client.prompt(&sid, "run it").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");

    // It ran for real, in the session folder, through the terminal.
    assert_eq!(ws.read("made.txt"), "made\n");
    let turn = &client.received[from..];
    let id = first_call_id(turn);
    let seen = sequence(turn, &id);
    assert_eq!(
        seen[..10],
        [
            "tool_call:pending",
            "session/request_permission",
            "tool_call_update:in_progress",
            "terminal/create",
            "tool_call_update [terminal]",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release",
            "tool_call_update:failed [terminal]",
            // The next call's request follows; nothing more about this one.
            "session/request_permission",
        ],
        "{seen:#?}"
    );
    let create = turn.iter().find(|m| m["method"] == "terminal/create").unwrap();
    let cwd = std::fs::canonicalize(ws.path()).unwrap().display().to_string();
    assert_eq!(
        create["params"],
        json!({
            "sessionId": sid, "command": "bash", "args": ["-c", "echo made > made.txt; cat made.txt; exit 3"],
            "cwd": cwd, "outputByteLimit": 200000
        })
    );
    // The call shows the terminal the client created (its first: `term-1`), start to end.
    let shown: Vec<&Value> = turn
        .iter()
        .filter(|m| m["params"]["update"]["toolCallId"] == id.as_str())
        .filter_map(|m| m["params"]["update"]["content"].as_array())
        .flatten()
        .collect();
    assert!(shown.iter().all(|c| c["type"] == "terminal" && c["terminalId"] == "term-1"), "{shown:?}");

    // The model reads what it would from a local command.
    let reqs = mock.requests();
    assert_eq!(results(&reqs[1].body)[0].1, "made\n[exit code: 3]");
    assert!(results(&reqs[1].body)[0].2, "a failed command is an error result");
    assert_eq!(result_texts(&reqs[2].body), ["(no output)"]);
    let long = &result_texts(&reqs[3].body)[0];
    // The note (46 characters) and the 200,000 kept, less the 50,000 read: 150,046 elided in the middle.
    assert!(long.starts_with("... [earlier output elided by the editor] ...\nxxxx"), "{}", &long[..80]);
    assert!(
        long.contains("\n... [150046 characters elided] ...\n") && long.ends_with("xxxx"),
        "{}",
        &long[24_990..25_060]
    );
    assert!(long.chars().count() < 50_100);
}

/// A command that records its shell's pid and a background child's, then waits.
const LONG_COMMAND: &str = "echo $$ > bash.pid; sleep 300 & echo $! > bg.pid; wait";

#[tokio::test]
async fn cancel_kills_and_releases_the_terminal() {
    let mock = MockModel::start(vec![call("bash", json!({"command": LONG_COMMAND})), Step::text("Back.")]).await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.with_terminal().await;
    allow(&mut client);
    let sid = client.new_session(ws.path()).await;
    let id =
        client.request("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]})).await;
    let wait = client.until(|m| m["method"] == "terminal/wait_for_exit").await;
    // Answered when the command ends, which the cancel brings about.
    client.answer_if_request(&wait).await;
    let (shell, bg) = (read_pid(&ws.join("bash.pid")), read_pid(&ws.join("bg.pid")));

    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let resp = client.response(id).await;
    assert_eq!(resp["result"]["stopReason"], "cancelled", "{resp}");
    // The release may come before the prompt's answer (then `response` answered it already).
    let released = |m: &Value| m["method"] == "terminal/release";
    if !client.received.iter().any(released) {
        let release = client.until(released).await;
        client.answer_if_request(&release).await;
    }
    let killed =
        client.received.iter().any(|m| m["method"] == "terminal/kill" && m["params"]["terminalId"] == "term-1");
    assert!(killed, "terminal/kill before terminal/release");
    assert!(wait_gone(shell), "the shell {shell} outlived the cancel");
    assert!(wait_gone(bg), "its child {bg} outlived the cancel");

    let (resp, _) = client.prompt(&sid, "go on").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    assert_eq!(result_texts(&mock.requests()[1].body), ["Error: Cancelled by the user"]);
}

#[tokio::test]
async fn the_shell_timeout_kills_the_terminal() {
    let mock = MockModel::start(vec![call("bash", json!({"command": LONG_COMMAND})), Step::text("Too slow.")]).await;
    let agent = ScriptedAgent::new("acp-ws", mock).env("STEPWISE_BASH_TIMEOUT", "1");
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.with_terminal().await;
    allow(&mut client);
    let sid = client.new_session(ws.path()).await;
    let from = client.received.len();
    let (resp, _) = client.prompt(&sid, "wait").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let (shell, bg) = (read_pid(&ws.join("bash.pid")), read_pid(&ws.join("bg.pid")));
    assert!(wait_gone(shell) && wait_gone(bg), "the command outlived its timeout");
    let turn = &client.received[from..];
    let seen = sequence(turn, &first_call_id(turn));
    let requests: Vec<&str> = seen.iter().filter(|s| s.starts_with("terminal/")).map(String::as_str).collect();
    assert_eq!(requests, ["terminal/create", "terminal/wait_for_exit", "terminal/kill", "terminal/release"]);
    assert_eq!(seen.last().unwrap(), "tool_call_update:failed [terminal]");
    assert_eq!(result_texts(&mock.requests()[1].body), ["Error: Timeout (1s)"]);
}

#[tokio::test]
async fn a_refused_terminal_runs_nothing_and_tells_the_model_why() {
    let mock =
        MockModel::start(vec![call("bash", json!({"command": "echo ran > ran.txt"})), Step::text("Refused.")]).await;
    let agent = ScriptedAgent::new("acp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.with_terminal().await;
    client.refuse_terminals();
    allow(&mut client);
    let sid = client.new_session(ws.path()).await;
    let (resp, updates) = client.prompt(&sid, "run it").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    // Not run anywhere: the client said no, and the agent does not run it locally instead.
    assert!(!ws.join("ran.txt").exists());
    let call = updates.iter().find(|u| u["sessionUpdate"] == "tool_call").expect("the call");
    let id = call["toolCallId"].as_str().unwrap();
    // Allowed, it was running (`in_progress`) when the client refused the terminal.
    assert_eq!(statuses(&updates, id), ["pending", "in_progress", "failed"]);
    assert_eq!(
        result_texts(&mock.requests()[1].body),
        ["Error: the editor could not run the command: Permission denied for terminal/create"]
    );
}

/// With the sandbox on, a command runs in it here (not in the client's terminal, which would run it
/// with the user's full rights) and asks nothing; one the sandbox stopped is offered through
/// `session/request_permission`, and the approved run outside the sandbox goes to the client's terminal.
#[tokio::test]
async fn sandboxed_commands_run_here_and_a_stopped_one_runs_outside_only_when_permitted() {
    let outside = TempDir::new("acp-sandbox-outside");
    let (a, b) = (outside.join("a"), outside.join("b"));
    let (to_a, to_b) = (format!("echo x > {}", a.display()), format!("echo x > {}", b.display()));
    let mock = MockModel::start(vec![
        call("bash", json!({"command": "echo in > src/inside; echo ran"})),
        call("bash", json!({"command": to_a})),
        call("bash", json!({"command": to_b})),
        Step::text("done"),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-sandbox", mock).env("STEPWISE_SANDBOX", "workspace-write");
    let (ws, mock) = (&agent.ws, &agent.mock);
    std::fs::create_dir_all(ws.join("src")).unwrap();
    let mut client = agent.with_terminal().await;
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let mut answers = ["allow_once", "reject_once"].into_iter();
    client.on_request = Box::new(move |method, params| match method {
        "session/request_permission" => {
            seen.lock().unwrap().push(params["toolCall"]["title"].as_str().unwrap_or_default().to_string());
            let option = answers.next().expect("more permission requests than expected");
            Ok(json!({"outcome": {"outcome": "selected", "optionId": option}}))
        }
        other => panic!("unexpected request {other}: {params}"),
    });
    let sid = client.new_session(ws.path()).await;
    let from = client.received.len();
    let (resp, _) = client.prompt(&sid, "run them").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");

    let name = ws.path().file_name().unwrap().to_str().unwrap();
    let question = |c: &str| {
        format!("The sandbox stopped a shell command; stepwise wants to run it outside the sandbox in {name}: {c} (it stopped: ")
    };
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "the sandboxed command asked nothing: {asked:?}");
    for (q, c) in asked.iter().zip([&to_a, &to_b]) {
        assert!(q.starts_with(&question(c)), "{q}");
        // What the sandbox stopped: the error line naming the path outside.
        let stopped = &q[question(c).len()..];
        assert!(stopped.contains(c.rsplit(' ').next().unwrap()), "{q}");
    }
    assert_eq!(ws.read("src/inside"), "in\n");
    assert!(a.exists() && !b.exists(), "only the permitted command ran outside the sandbox");
    // Only the run outside the sandbox went to the client's terminal.
    let created: Vec<&Value> = client.received[from..].iter().filter(|m| m["method"] == "terminal/create").collect();
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0]["params"]["args"], json!(["-c", to_a]));

    let reqs = mock.requests();
    let texts: Vec<String> = reqs[1..].iter().map(|r| result_texts(&r.body).join("|")).collect();
    assert_eq!(texts[0], "ran");
    assert!(texts[1].starts_with("[sandbox: the command was stopped by the sandbox ("), "{}", texts[1]);
    assert!(texts[1].contains("the user approved running it again outside the sandbox"), "{}", texts[1]);
    assert!(texts[2].contains("Permission denied") && texts[2].contains("the user declined"), "{}", texts[2]);
}
