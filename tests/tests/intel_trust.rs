//! Language servers without a sandbox start only in a folder the user trusted. In the sidecar (a message
//! request) and over ACP (a permission request) the question does not hold up the run; a server waits for
//! the answer within the round's wait. An answer that fails, is cancelled, refuses or never comes (the
//! `approvalTimeoutSecs` setting) is a no: nothing starts and the model is told why. A yes is remembered
//! (the state directory's `trusted-language-servers`, as a trusted `.mcp.json` is): not asked again.
//! The server (tests/intel/crash_server.py --nul) touches a marker when it starts.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::intel::{block_lines, diagnostics_block, marker_server, py_server};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;

const T: Duration = Duration::from_secs(60);
const QUESTION: &str = "No sandbox can hold language servers here. Run fake in ";

fn write_step(n: usize) -> Step {
    Step::tool("write_file", json!({"path": "m.py", "content": format!("x = {n}\n")}))
}

/// The one line of a refused folder.
fn refused(block: Option<String>, folder: &Path) -> bool {
    let name = folder.file_name().unwrap().to_string_lossy();
    let want = format!(
        "m.py: not checked (language servers do not start in {name} without the sandbox unless the workspace is trusted)"
    );
    block.is_some_and(|b| block_lines(&b) == [want])
}

fn trusted_list(state: &TempDir) -> String {
    std::fs::read_to_string(state.join("trusted-language-servers")).unwrap_or_default()
}

struct Sidecar<'a> {
    dir: &'a TempDir,
    state: &'a TempDir,
    config: &'a TempDir,
    /// The servers the question names.
    names: &'a str,
}

impl Sidecar<'_> {
    /// One sidecar (a client that does not answer `stepwise/query`, no sandbox), one run writing m.py;
    /// `answer` answers the trust question (`None`: it is not expected). The mock model's requests.
    async fn run(&self, policy: Policy, timeout_secs: u64, answer: Option<Result<Value, &str>>) -> MockModel {
        let mock = MockModel::start(vec![write_step(1), Step::text("done")]).await;
        let ed = auto_editor(ClientPreset::Neovim, self.dir, self.state, &mock)
            .binary()
            .option("sandbox", json!("off"))
            .option("diagnostics", json!("auto"))
            .option("approvalTimeoutSecs", json!(timeout_secs))
            .policy("window/showMessageRequest", policy)
            .ignore(&["window/showMessage"])
            .env("XDG_CONFIG_HOME", &self.config.path().display().to_string())
            .env("STEPWISE_DIAGNOSTICS_WAIT_MS", "8000")
            .start()
            .await;
        let ws = ed.folder_uri(0);
        let run = ed.start_run(&ws, "work").await;
        if let Some(answer) = answer {
            let (id, params) = ed.await_request("window/showMessageRequest", T).await;
            let question = QUESTION.replace("fake", self.names);
            assert!(params["message"].as_str().is_some_and(|m| m.starts_with(&question)), "{params}");
            let titles: Vec<&str> =
                params["actions"].as_array().unwrap().iter().filter_map(|a| a["title"].as_str()).collect();
            assert_eq!(titles, ["Trust this folder", "Don't start them"]);
            match answer {
                Ok(v) => ed.respond(&id, v),
                Err(why) => ed.respond_error(&id, -32603, why),
            }
        }
        let log = ed.await_run(&ws, &run, T).await;
        assert_eq!(log.reason(), "end_turn");
        mock
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_sidecar_a_failed_refused_or_unanswered_question_starts_nothing_and_a_yes_is_remembered() {
    let (dir, state) = folder_and_state("intel-trust-lsp");
    let config = TempDir::new("intel-trust-lsp-config");
    dir.write("m.py", "x = 0\n");
    let marker: PathBuf = state.join("started");
    py_server(&config, "fake", &marker_server(&marker));
    let side = Sidecar { dir: &dir, state: &state, config: &config, names: "fake" };

    // The editor fails the question.
    let mock = side.run(Policy::Queue, 300, Some(Err("the message was closed"))).await;
    assert!(refused(diagnostics_block(&mock, 1), dir.path()), "{:?}", diagnostics_block(&mock, 1));
    // Refused.
    let mock = side.run(Policy::Queue, 300, Some(Ok(json!({"title": "Don't start them"})))).await;
    assert!(refused(diagnostics_block(&mock, 1), dir.path()), "{:?}", diagnostics_block(&mock, 1));
    // Dismissed (null).
    let mock = side.run(Policy::Queue, 300, Some(Ok(Value::Null))).await;
    assert!(refused(diagnostics_block(&mock, 1), dir.path()), "{:?}", diagnostics_block(&mock, 1));
    // Never answered: no after the setting's timeout (1 s, well within the round's 8 s wait).
    let mock = side.run(Policy::NeverAnswer, 1, None).await;
    assert!(refused(diagnostics_block(&mock, 1), dir.path()), "{:?}", diagnostics_block(&mock, 1));
    assert!(!marker.exists(), "a server started without trust");
    assert_eq!(trusted_list(&state), "", "a no is not remembered");

    // Trusted: the server starts (its diagnostics are clean: no block), and the answer is kept.
    let mock = side.run(Policy::Queue, 300, Some(Ok(json!({"title": "Trust this folder"})))).await;
    assert_eq!(diagnostics_block(&mock, 1), None);
    assert!(marker.exists(), "the trusted server did not start");
    assert_eq!(trusted_list(&state).lines().count(), 1, "{}", trusted_list(&state));

    // The next sidecar does not ask (a question would never be answered, and the server would not
    // start within the round's wait): it starts the server.
    std::fs::remove_file(&marker).unwrap();
    let mock = side.run(Policy::NeverAnswer, 300, None).await;
    assert_eq!(diagnostics_block(&mock, 1), None, "asked again, or not started");
    assert!(marker.exists(), "the remembered trust did not start the server");
}

/// The look before the first request stops at the first server serving a file (whether to offer the
/// tools); the question still names every server that would run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_names_every_server_serving_the_workspace() {
    let (dir, state) = folder_and_state("intel-trust-names");
    let config = TempDir::new("intel-trust-names-config");
    dir.write("m.py", "x = 0\n");
    dir.write("sub/n.txt", "text\n");
    let marker: PathBuf = state.join("started");
    let server = json!({"command": marker_server(&marker), "extensions": ["py"]});
    let other = json!({"command": marker_server(&marker), "extensions": ["txt"]});
    config.write("stepwise/language-servers.json", &json!({"servers": {"fake": server, "other": other}}).to_string());
    let side = Sidecar { dir: &dir, state: &state, config: &config, names: "fake, other" };
    let mock = side.run(Policy::Queue, 300, Some(Ok(json!({"title": "Don't start them"})))).await;
    assert!(refused(diagnostics_block(&mock, 1), dir.path()), "{:?}", diagnostics_block(&mock, 1));
    assert!(!marker.exists(), "a server started without trust");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_failed_cancelled_or_refused_question_starts_nothing_and_a_yes_is_remembered() {
    let config = TempDir::new("intel-trust-acp-config");
    // Five sessions, one process each, each writing m.py once.
    let script: Vec<Step> = (1..=5).flat_map(|n| [write_step(n), Step::text("done")]).collect();
    let mock = MockModel::start(script).await;
    let agent = ScriptedAgent::new("intel-trust-acp", mock)
        .env("STEPWISE_SANDBOX", "off")
        .env("XDG_CONFIG_HOME", config.path().display().to_string())
        .env("STEPWISE_DIAGNOSTICS_WAIT_MS", "8000");
    agent.ws.write("m.py", "x = 0\n");
    let marker = agent.state.join("started");
    py_server(&config, "fake", &marker_server(&marker));

    let asked = Arc::new(Mutex::new(Vec::<Value>::new()));
    // One session with `answer` for the trust question (`None`: none expected); its request index.
    let session = |answer: Option<Result<&'static str, &'static str>>, first_request: usize| {
        let (agent, asked) = (&agent, asked.clone());
        async move {
            let before = asked.lock().unwrap().len();
            let mut client = agent.spawn();
            let seen = asked.clone();
            client.on_request = Box::new(move |method, params| {
                assert_eq!(method, "session/request_permission", "{params}");
                if params["toolCall"]["toolCallId"] != "stepwise-language-servers-trust" {
                    return Ok(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}));
                }
                seen.lock().unwrap().push(params.clone());
                match answer {
                    Some(Ok("cancelled")) => Ok(json!({"outcome": {"outcome": "cancelled"}})),
                    Some(Ok(option)) => Ok(json!({"outcome": {"outcome": "selected", "optionId": option}})),
                    Some(Err(why)) => Err((-32603, why.to_string())),
                    // Never answered by the client: the session would hold the servers for 300 s.
                    None => Err((-32603, "not expected".into())),
                }
            });
            client.initialize(false, false).await;
            let r = client.call("session/new", json!({"cwd": agent.ws.path(), "mcpServers": []})).await;
            let sid = r["sessionId"].as_str().unwrap().to_string();
            let (resp, _) = client.prompt(&sid, "work").await;
            assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
            let now = asked.lock().unwrap().clone();
            assert_eq!(now.len() - before, usize::from(answer.is_some()), "{now:?}");
            if let Some(q) = now.get(before) {
                let title = q["toolCall"]["title"].as_str().unwrap_or("");
                assert!(title.starts_with(QUESTION), "{title}");
            }
            diagnostics_block(&agent.mock, first_request + 1)
        }
    };
    let root = agent.ws.path().to_path_buf();
    for (i, answer) in [Err("the client failed"), Ok("cancelled"), Ok("distrust")].into_iter().enumerate() {
        let block = session(Some(answer), i * 2).await;
        assert!(refused(block.clone(), &root), "{answer:?}: {block:?}");
    }
    assert!(!marker.exists(), "a server started without trust");
    assert_eq!(trusted_list(&agent.state), "");

    assert_eq!(session(Some(Ok("trust")), 6).await, None);
    assert!(marker.exists(), "the trusted server did not start");
    std::fs::remove_file(&marker).unwrap();
    assert_eq!(session(None, 8).await, None, "asked again, or not started");
    assert!(marker.exists(), "the remembered trust did not start the server");
}
