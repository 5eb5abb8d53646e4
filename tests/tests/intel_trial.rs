//! The language servers' rights are decided before the first model request while the sandbox's trial
//! still runs: where the kernel offers Landlock they count on it, so the start does not wait for the
//! trial (issue 39). Where the trial then fails (a container refusing the confinement; a debug build
//! pretends it with `STEPWISE_TEST_TRIAL_FAILS=1`), no server starts unconfined: the round says why, the
//! failure is remembered (the state directory's `sandbox-trials-failed`), and whether to trust the
//! workspace is asked at the next run: in the CLI by the next process (which waits for the trial, as on
//! a machine without a sandbox), in the sidecar at the next prompt. A workspace trusted before gets its
//! servers unconfined at once. The server (tests/intel/crash_server.py --nul) touches a marker as it starts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use stepwise_tests::acp_agent::{permissions, ScriptedAgent};
use stepwise_tests::intel::{block_lines, diagnostics_block, marker_server, py_server, scripts, Env};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;

const T: Duration = Duration::from_secs(60);
const FAILS: (&str, &str) = ("STEPWISE_TEST_TRIAL_FAILS", "1");

/// A CLI run's environment whose one server for `.py` touches the marker returned as it starts.
fn cli_env() -> (Env, PathBuf) {
    let e = Env::new(None);
    let marker = e.state.join("started");
    e.server("fake", &marker_server(&marker));
    (e, marker)
}

fn write_step(n: usize) -> Step {
    Step::tool("write_file", json!({"path": "m.py", "content": format!("x = {n}\n")}))
}

fn name(folder: &Path) -> String {
    folder.file_name().unwrap().to_string_lossy().into_owned()
}

/// The line of a run whose servers counted on the sandbox when its trial failed.
fn failed_trial(folder: &Path) -> String {
    format!(
        "language servers do not start in {}: the sandbox cannot start here (the trial command was refused (STEPWISE_TEST_TRIAL_FAILS=1, a debug build pretending)); whether to trust the workspace is asked at the next run",
        name(folder)
    )
}

fn lines(block: Option<String>) -> Vec<String> {
    block.map(|b| block_lines(&b)).unwrap_or_default()
}

fn trust(state: &Path, ws: &Path) {
    let root = std::fs::canonicalize(ws).unwrap();
    std::fs::write(state.join("trusted-language-servers"), format!("{}\n", root.display())).unwrap();
}

#[tokio::test]
async fn in_the_cli_a_failed_trial_starts_no_server_and_the_next_run_asks() {
    let (e, marker) = cli_env();
    let ws = TempDir::new("intel-trial-cli");
    ws.write("m.py", "x = 0\n");

    // The first run counted on the sandbox (its start did not wait for the trial), which then failed.
    let mock = MockModel::start(vec![write_step(1), Step::text("done")]).await;
    let o = e.run(&mock, &ws, &[FAILS], "work").await;
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let line = failed_trial(ws.path());
    assert_eq!(lines(diagnostics_block(&mock, 1)), [format!("m.py: not checked ({line})")]);
    assert!(stderr.contains(&format!("stepwise: {line}")), "{stderr}");
    assert!(!marker.exists(), "a server started unconfined without trust");
    let failed = std::fs::read_to_string(e.state.join("sandbox-trials-failed")).unwrap_or_default();
    assert!(failed.lines().count() == 1 && failed.ends_with("\tnetwork false\n"), "{failed:?}");

    // The next process waits for the trial and asks (a run without a terminal says no, and why).
    let mock = MockModel::start(vec![write_step(2), Step::text("done")]).await;
    let o = e.run(&mock, &ws, &[FAILS], "work").await;
    let stderr = String::from_utf8_lossy(&o.stderr);
    let asked = format!("not starting language servers in {}: no sandbox holds them", ws.path().display());
    assert!(stderr.contains(&asked), "{stderr}");
    let refused = format!(
        "m.py: not checked (language servers do not start in {} without the sandbox unless the workspace is trusted)",
        name(ws.path())
    );
    assert_eq!(lines(diagnostics_block(&mock, 1)), [refused]);
    assert!(!marker.exists(), "a server started unconfined without trust");
    let again = std::fs::read_to_string(e.state.join("sandbox-trials-failed")).unwrap_or_default();
    assert_eq!(again, failed, "a failure known is not recorded twice");
}

#[tokio::test]
async fn in_the_cli_a_trusted_workspace_gets_its_servers_when_the_trial_fails() {
    let (e, marker) = cli_env();
    let ws = TempDir::new("intel-trial-trusted");
    ws.write("m.py", "x = 0\n");
    trust(e.state.path(), ws.path());

    let mock = MockModel::start(vec![write_step(1), Step::text("done")]).await;
    let o = e.run(&mock, &ws, &[FAILS], "work").await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The server started (unconfined: the sandbox cannot) and its check is clean: no block.
    assert_eq!(diagnostics_block(&mock, 1), None);
    assert!(marker.exists(), "the trusted workspace's server did not start");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_sidecar_a_failed_trial_is_asked_about_at_the_next_prompt() {
    let (dir, state) = folder_and_state("intel-trial-lsp");
    let config = TempDir::new("intel-trial-lsp-config");
    dir.write("m.py", "x = 0\n");
    let marker: PathBuf = state.join("started");
    py_server(&config, "fake", &marker_server(&marker));
    let script = vec![write_step(1), Step::text("done"), write_step(2), Step::text("done")];
    let mock = MockModel::start(script).await;
    let ed = auto_editor(ClientPreset::Neovim, &dir, &state, &mock)
        .binary()
        .option("sandbox", json!("workspace-write"))
        .option("diagnostics", json!("auto"))
        .policy("window/showMessageRequest", Policy::Queue)
        .ignore(&["window/showMessage"])
        .env("XDG_CONFIG_HOME", &config.path().display().to_string())
        .env("STEPWISE_DIAGNOSTICS_WAIT_MS", "8000")
        .env(FAILS.0, FAILS.1)
        .start()
        .await;
    let ws = ed.folder_uri(0);

    let run = ed.start_run(&ws, "work").await;
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(lines(diagnostics_block(&mock, 1)), [format!("m.py: not checked ({})", failed_trial(dir.path()))]);
    assert!(!marker.exists(), "a server started unconfined without trust");

    // The next prompt asks; a yes starts the server for that run's round.
    let run = ed.start_run(&ws, "more").await;
    let (id, params) = ed.await_request("window/showMessageRequest", T).await;
    let message = params["message"].as_str().unwrap_or("");
    assert!(message.starts_with("No sandbox can hold language servers here. Run fake in "), "{params}");
    ed.respond(&id, json!({"title": "Trust this folder"}));
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert_eq!(diagnostics_block(&mock, 3), None);
    assert!(marker.exists(), "the trusted server did not start");
}

#[tokio::test]
async fn in_the_cli_servers_that_counted_on_the_sandbox_run_confined() {
    let e = Env::new(None);
    let ws = TempDir::new("intel-trial-confined");
    ws.write("m.py", "x = 0\n");
    // The server tries to write beside the workspace and in it, then serves.
    let (outside, inside) = (e.state.join("outside"), ws.join("inside"));
    let script = scripts().join("crash_server.py");
    let start = format!(
        "touch '{}'; touch '{}'; exec python3 '{}' --nul",
        outside.display(),
        inside.display(),
        script.display()
    );
    e.server("fake", &["sh", "-c", &start]);

    let mock = MockModel::start(vec![write_step(1), Step::text("done")]).await;
    let o = e.run(&mock, &ws, &[], "work").await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(diagnostics_block(&mock, 1), None, "the server did not check m.py");
    assert!(inside.exists(), "the server did not start, or could not write in the workspace");
    assert!(!outside.exists(), "the server wrote outside the workspace: it ran unconfined");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_failed_trial_is_asked_about_at_the_next_prompt() {
    let config = TempDir::new("intel-trial-acp-config");
    let mock = MockModel::start(vec![write_step(1), Step::text("done"), write_step(2), Step::text("done")]).await;
    let agent = ScriptedAgent::new("intel-trial-acp", mock)
        .env("XDG_CONFIG_HOME", config.path().display().to_string())
        .env("STEPWISE_DIAGNOSTICS_WAIT_MS", "8000")
        .env("STEPWISE_SANDBOX", "workspace-write")
        .env(FAILS.0, FAILS.1);
    agent.ws.write("m.py", "x = 0\n");
    let marker = agent.state.join("started");
    py_server(&config, "fake", &marker_server(&marker));

    let (mut client, sid) = agent.session().await;
    let asked = permissions(&mut client, &["trust"]);
    let (resp, _) = client.prompt(&sid, "work").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let line = failed_trial(agent.ws.path());
    assert_eq!(lines(diagnostics_block(&agent.mock, 1)), [format!("m.py: not checked ({line})")]);
    assert!(asked.lock().unwrap().is_empty(), "asked in the run that counted on the sandbox");
    assert!(!marker.exists(), "a server started unconfined without trust");

    let (resp, _) = client.prompt(&sid, "more").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "stepwise-language-servers-trust", "{asked:?}");
    assert_eq!(diagnostics_block(&agent.mock, 3), None);
    assert!(marker.exists(), "the trusted server did not start");
}
