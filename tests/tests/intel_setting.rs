//! The `diagnostics` setting in every adapter, against a server that reports thousands of errors for every
//! change (tests/intel/flood_server.py): `auto` tells the model (a block), `tool` offers the tools and
//! tells nothing by itself, `off` offers no tool (and starts no server). The CLI and ACP read
//! `STEPWISE_DIAGNOSTICS`; the sidecar its `diagnostics` setting.

use std::time::Duration;

use serde_json::json;
use stepwise_tests::acp_agent::ScriptedAgent;
use stepwise_tests::intel::{diagnostics_block, scripts, show, tool_names, Env};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::sent::intel_tools;
use stepwise_tests::TempDir;

const T: Duration = Duration::from_secs(60);

fn script() -> Vec<Step> {
    vec![Step::tool("write_file", json!({"path": "m.py", "content": "x = 2\n"})), Step::text("done")]
}

/// What the model saw: whether each code-intelligence tool was offered, and whether a block came.
fn seen(mock: &MockModel) -> (Vec<bool>, bool) {
    let names = tool_names(mock);
    (intel_tools().iter().map(|t| names.iter().any(|n| n == t)).collect(), diagnostics_block(mock, 1).is_some())
}

fn expected(mode: &str) -> (Vec<bool>, bool) {
    let n = intel_tools().len();
    match mode {
        "auto" => (vec![true; n], true),
        "tool" => (vec![true; n], false),
        _ => (vec![false; n], false),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_follows_the_setting() {
    for mode in ["auto", "tool", "off"] {
        let ws = TempDir::new("intel-setting-cli");
        ws.write("m.py", "x = 1\n");
        let mock = MockModel::start(script()).await;
        let e = Env::new(None);
        e.fake_server("flood", "flood_server.py", &["10"]);
        let o = e.run(&mock, &ws, &[("STEPWISE_DIAGNOSTICS", mode)], "work").await;
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        assert_eq!(seen(&mock), expected(mode), "{mode}\n{}", show(&o));
    }
    // A value it does not know is an error that names it.
    let ws = TempDir::new("intel-setting-cli");
    let mock = MockModel::start(script()).await;
    let o = Env::new(None).run(&mock, &ws, &[("STEPWISE_DIAGNOSTICS", "sometimes")], "work").await;
    assert_ne!(o.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("STEPWISE_DIAGNOSTICS must be auto, tool or off"),
        "{}",
        show(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sidecar_follows_the_setting() {
    for mode in ["auto", "tool", "off"] {
        let (dir, state) = folder_and_state("intel-setting-lsp");
        let config = TempDir::new("intel-setting-lsp-config");
        dir.write("m.py", "x = 1\n");
        let flood = scripts().join("flood_server.py");
        let servers = json!({"servers": {"flood": {"command": ["python3", flood, "10"], "extensions": ["py"]}}});
        config.write("stepwise/language-servers.json", &servers.to_string());
        let mock = MockModel::start(script()).await;
        // A client that does not answer `stepwise/query`: stepwise starts the server itself, in the sandbox
        // (the default), or, where the machine has none, in this folder trusted beforehand.
        std::fs::write(state.join("trusted-language-servers"), format!("{}\n", dir.path().display())).unwrap();
        let ed = auto_editor(ClientPreset::Neovim, &dir, &state, &mock)
            .binary()
            .option("diagnostics", json!(mode))
            .ignore(&["window/showMessage"])
            .env("XDG_CONFIG_HOME", &config.path().display().to_string())
            .env("STEPWISE_DIAGNOSTICS_WAIT_MS", "8000")
            .start()
            .await;
        let ws = ed.folder_uri(0);
        let run = ed.start_run(&ws, "work").await;
        assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");
        assert_eq!(seen(&mock), expected(mode), "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_follows_the_setting() {
    for mode in ["auto", "tool", "off"] {
        let config = TempDir::new("intel-setting-acp-config");
        let agent = ScriptedAgent::new("intel-setting-acp", MockModel::start(script()).await)
            .env("STEPWISE_DIAGNOSTICS", mode)
            .env("XDG_CONFIG_HOME", config.path().display().to_string())
            .env("STEPWISE_DIAGNOSTICS_WAIT_MS", "8000");
        agent.ws.write("m.py", "x = 1\n");
        let flood = scripts().join("flood_server.py");
        let servers = json!({"servers": {"flood": {"command": ["python3", flood, "10"], "extensions": ["py"]}}});
        config.write("stepwise/language-servers.json", &servers.to_string());
        std::fs::write(agent.state.join("trusted-language-servers"), format!("{}\n", agent.ws.path().display()))
            .unwrap();
        let mut client = agent.spawn();
        client.on_request = Box::new(|_, _| Ok(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})));
        client.initialize(false, false).await;
        let r = client.call("session/new", json!({"cwd": agent.ws.path(), "mcpServers": []})).await;
        let sid = r["sessionId"].as_str().unwrap().to_string();
        let (resp, _) = client.prompt(&sid, "work").await;
        assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
        assert_eq!(seen(&agent.mock), expected(mode), "{mode}");
    }
}
