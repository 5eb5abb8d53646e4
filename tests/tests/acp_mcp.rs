//! MCP over ACP: `initialize` advertises http servers (stdio is always there); the servers a client
//! passes in `session/new` (stdio and http, real FastMCP servers) reach the model as
//! `mcp__<server>__<tool>` and their calls ask for permission; a workspace `.mcp.json` is asked about
//! first and starts nothing when refused; a server that fails is told in the thread.

mod common;

use std::sync::{Arc, Mutex};

use common::call;
use serde_json::{json, Value};
use stepwise_tests::acp_agent::{permissions, ScriptedAgent};
use stepwise_tests::acp_client::{chunks, of_kind, statuses};
use stepwise_tests::mcp_servers::{fastmcp_script, tools, HttpServer};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::sent::tool_names;
use stepwise_tests::TempDir;

#[tokio::test]
async fn client_servers_are_offered_and_an_untrusted_workspace_file_is_asked_about() {
    let t = tools();
    let dir = TempDir::new("acp-mcp-http");
    let http = HttpServer::start(dir.path());
    let mock = MockModel::start(vec![
        call("mcp__py__add", json!({"a": 20, "b": 22})),
        call("mcp__web__add", json!({"a": 1, "b": 2})),
        Step::text("done"),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-mcp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    ws.write(
        ".mcp.json",
        &json!({"mcpServers": {"repo": {"command": "bash", "args": ["-c", format!("touch {}", ws.join("marker").display())]}}})
            .to_string(),
    );
    let mut client = agent.spawn();
    let init = client.initialize(false, false).await;
    assert_eq!(init["agentCapabilities"]["mcpCapabilities"]["http"], true, "{init}");

    let asked = Arc::new(Mutex::new(Vec::<Value>::new()));
    let seen = asked.clone();
    client.on_request = Box::new(move |method, params| {
        assert_eq!(method, "session/request_permission", "unexpected request {method}: {params}");
        let mut seen = seen.lock().unwrap();
        seen.push(params.clone());
        // The workspace file first (refused), then the two calls (allowed).
        let option = if seen.len() == 1 { "distrust" } else { "allow_once" };
        Ok(json!({"outcome": {"outcome": "selected", "optionId": option}}))
    });
    let servers = json!([
        {"name": "py", "command": t.python, "args": [fastmcp_script(), "stdio"], "env": []},
        {"type": "http", "name": "web", "url": http.url, "headers": []},
        {"name": "dies", "command": "/bin/sh", "args": ["-c", "echo 'no token' >&2; exit 4"], "env": []},
    ]);
    let r = client.call("session/new", json!({"cwd": ws.path(), "mcpServers": servers})).await;
    let sid = r["sessionId"].as_str().unwrap().to_string();
    let (resp, updates) = client.prompt(&sid, "add").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");

    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 3, "{asked:?}");
    let title = |i: usize| asked[i]["toolCall"]["title"].as_str().unwrap_or("").to_string();
    assert!(
        title(0).contains(".mcp.json asks to start MCP servers") && title(0).contains("repo: bash -c touch"),
        "{}",
        title(0)
    );
    assert!(title(1).starts_with("stepwise wants to use the MCP tool add of py in "), "{}", title(1));
    assert!(title(2).starts_with("stepwise wants to use the MCP tool add of web in "), "{}", title(2));
    assert!(!ws.join("marker").exists(), "the refused .mcp.json started its server");

    let text = chunks(&updates, "agent_message_chunk");
    assert!(text.contains("MCP server 'dies' failed to start: it exited with code 4: no token"), "{text}");
    assert!(text.contains("MCP server 'repo' failed to start: the workspace's .mcp.json is not trusted"), "{text}");
    let reqs = mock.requests();
    let names = tool_names(&reqs[0].body);
    assert!(names.iter().any(|n| n == "mcp__py__add") && names.iter().any(|n| n == "mcp__web__add"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("mcp__repo") || n.starts_with("mcp__dies")), "{names:?}");
    let result =
        |i: usize| reqs[i].body["messages"].as_array().unwrap().last().unwrap()["content"][0]["content"].clone();
    assert_eq!(result(1), "sum=42");
    assert_eq!(result(2), "sum=3");
}

/// An MCP call that asks waits as `pending`: refused, it ends `failed` without running; allowed, it goes
/// `in_progress` before it ends. A server's tools allowed for the session ask nothing more, and are not
/// announced as waiting for a permission: the agent says what its engine will do.
#[tokio::test]
async fn an_mcp_tool_allowed_for_the_session_is_announced_running() {
    let t = tools();
    let mock = MockModel::start(vec![
        call("mcp__py__add", json!({"a": 5, "b": 6})),
        call("mcp__py__add", json!({"a": 1, "b": 2})),
        call("mcp__py__add", json!({"a": 3, "b": 4})),
        Step::text("done"),
    ])
    .await;
    let agent = ScriptedAgent::new("acp-mcp-ws", mock);
    let (ws, mock) = (&agent.ws, &agent.mock);
    let mut client = agent.initialized().await;
    let asked = permissions(&mut client, &["reject_once", "allow_always"]);
    let servers = json!([{"name": "py", "command": t.python, "args": [fastmcp_script(), "stdio"], "env": []}]);
    let r = client.call("session/new", json!({"cwd": ws.path(), "mcpServers": servers})).await;
    let sid = r["sessionId"].as_str().unwrap().to_string();
    let (resp, updates) = client.prompt(&sid, "add twice").await;
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");

    assert_eq!(asked.lock().unwrap().len(), 2, "asked again after 'allow for this session'");
    let calls = of_kind(&updates, "tool_call");
    let seen: Vec<Vec<&str>> = calls.iter().map(|c| statuses(&updates, c["toolCallId"].as_str().unwrap())).collect();
    assert_eq!(
        seen,
        [vec!["pending", "failed"], vec!["pending", "in_progress", "completed"], vec!["in_progress", "completed"]]
    );
    let reqs = mock.requests();
    let result =
        |i: usize| reqs[i].body["messages"].as_array().unwrap().last().unwrap()["content"][0]["content"].clone();
    assert_eq!(
        (result(1), result(2), result(3)),
        (json!("Error: MCP tool add of py denied by the user"), json!("sum=3"), json!("sum=7"))
    );
}
