//! MCP in the sidecar: servers from the editor setting `mcpServers` (a real FastMCP server) reach the
//! model; a workspace `.mcp.json` is asked about with a message request (the `approval` setting does not
//! cover it) and, refused, starts nothing; `stepwise/mcp` tells the editor which server runs and which
//! failed; a malformed setting is reported by name.

use std::time::Duration;

use serde_json::json;
use stepwise_tests::lsp_client::*;
use stepwise_tests::mcp_servers::{fastmcp_stdio, tools};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::sent::tool_names;

const T: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_servers_are_used_and_an_untrusted_mcp_json_is_asked_about() {
    tools();
    let (dir, state) = folder_and_state("lsp-mcp");
    let marker = dir.join("marker");
    dir.write(
        ".mcp.json",
        &json!({"mcpServers": {"repo": {"command": "bash", "args": ["-c", format!("touch {}", marker.display())]}}})
            .to_string(),
    );
    let mock = MockModel::start(vec![Step::tool("mcp__py__add", json!({"a": 3, "b": 4})), Step::text("done")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("mcpServers", json!({"py": fastmcp_stdio()}))
        .option("approval", json!("auto"))
        .policy("window/showMessageRequest", Policy::Queue)
        .env("XDG_CONFIG_HOME", &state.join("config").display().to_string())
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "add").await;
    let (id, params) = ed.await_request("window/showMessageRequest", T).await;
    let message = params["message"].as_str().unwrap_or("");
    assert!(
        message.contains(".mcp.json asks to start MCP servers") && message.contains("repo: bash -c touch"),
        "{params}"
    );
    ed.respond(&id, json!({"title": "Don't start them"}));
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    assert!(!marker.exists(), "the refused .mcp.json started its server");
    let reqs = mock.wait_for_requests(2, T).await;
    let names = tool_names(&reqs[0].body);
    assert!(
        names.iter().any(|n| n == "mcp__py__add") && !names.iter().any(|n| n.starts_with("mcp__repo")),
        "{names:?}"
    );
    assert_eq!(tool_results(&reqs[1].body), vec![("sum=7".to_string(), false)]);
    let warning = ed
        .await_notification_matching(
            "window/showMessage",
            |m| m["message"].as_str().is_some_and(|t| t.contains("MCP server 'repo' failed to start")),
            T,
        )
        .await;
    assert!(warning["message"].as_str().unwrap().contains("not trusted"), "{warning}");
    // The editor is told how each server started, to show the failed one beside the plan.
    // (It is sent as the servers are ready, so it is usually in the run's log, but need not be.)
    let mcp = match log.of("stepwise/mcp").pop() {
        Some(m) => m,
        None => ed.await_notification_matching("stepwise/mcp", |m| m["workspace"] == ws.as_str(), T).await,
    };
    let servers = mcp["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 2, "{mcp}");
    assert_eq!(
        (&servers[0]["name"], &servers[0]["origin"], &servers[0]["state"]),
        (&json!("py"), &json!("settings"), &json!("running"))
    );
    assert!(servers[0]["tools"].as_u64().is_some_and(|n| n >= 1) && servers[0].get("error").is_none(), "{mcp}");
    assert_eq!(
        (&servers[1]["name"], &servers[1]["origin"], &servers[1]["state"]),
        (&json!("repo"), &json!("workspace"), &json!("failed"))
    );
    assert!(
        servers[1]["error"].as_str().is_some_and(|e| e.contains("not trusted")) && servers[1]["tools"] == 0,
        "{mcp}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_mcp_servers_setting_is_reported_by_name() {
    let (dir, state) = folder_and_state("lsp-mcp-bad");
    let mock = MockModel::start(vec![Step::text("done")]).await;
    let ed = editor(ClientPreset::VsCode, &dir, &state, &mock)
        .option("mcpServers", json!({"broken": {"args": ["x"]}}))
        .start()
        .await;
    let m = ed
        .await_notification_matching(
            "window/showMessage",
            |m| m["message"].as_str().is_some_and(|t| t.contains("ignoring the setting mcpServers")),
            T,
        )
        .await;
    assert!(m["message"].as_str().unwrap().contains("server 'broken'"), "{m}");
    assert_eq!(ed.run("hi").await.reason(), "end_turn");
}
