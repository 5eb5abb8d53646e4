//! MCP tools in the engine, against real servers nobody here wrote (FastMCP from the Python SDK and the
//! reference `server-everything`, installed by tests/mcp/setup.sh): the model (the scripted mock) calls
//! `mcp__<server>__<tool>` and reads the results; servers that crash, hang or print garbage are reported
//! or answered with error results and the run goes on; the servers stop with the session. The client itself
//! against the same servers: a crash ends every call waiting at once, the server's requests mid-call are
//! answered, streamable HTTP answered with events or JSON bodies, a session the server forgot begun again and
//! the session ended when the servers go.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use stepwise::agent::AgentConfig;
use stepwise::host::{Approval, Ask, DiskHost};
use stepwise::mcp::config::{merge, parse};
use stepwise::mcp::{McpSet, Origin, Timeouts};
use stepwise::plan::PlanningStyle;
use stepwise_tests::mcp_servers::{everything_stdio, fastmcp_stdio, gone, tools, HttpServer};
use stepwise_tests::mock::Step;
use stepwise_tests::sent::{offered, tool_names};

/// Starts `servers` (an `mcpServers` map) for `root`, collecting what is reported.
fn start(servers: Value, root: &std::path::Path, timeout: Timeouts) -> (Arc<McpSet>, Arc<Mutex<Vec<String>>>) {
    let (parsed, bad) = parse(&servers);
    assert!(bad.is_empty(), "{bad:?}");
    let reported = Arc::new(Mutex::new(Vec::new()));
    let r = reported.clone();
    let report: stepwise::mcp::Report = Arc::new(move |line: &str| r.lock().unwrap().push(line.to_string()));
    let set = McpSet::start(merge([(Origin::User, parsed)]), root.to_path_buf(), timeout, None, report);
    (set, reported)
}

fn tool<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test]
async fn tools_of_real_servers_are_offered_in_order_and_called() {
    tools();
    let mut h = Harness::new(vec![
        call("mcp__py__add", json!({"a": 2, "b": 40})),
        call("mcp__py__fail", json!({"reason": "the test asked"})),
        call("mcp__everything__echo", json!({"message": "hi there"})),
        call("mcp__everything__get-tiny-image", json!({})),
        Step::text("done"),
    ])
    .await;
    let (set, reported) =
        start(json!({"py": fastmcp_stdio(), "everything": everything_stdio()}), h.ws.path(), Timeouts::default());
    h.cfg.mcp.set = Some(set);
    let out = h.run("use the tools").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    assert!(reported.lock().unwrap().is_empty(), "{:?}", reported.lock().unwrap());

    // From the first request on: the built-in tools, then the servers' sorted by server and tool.
    let first = h.body(0);
    let names = tool_names(&first);
    let built_in = offered(PlanningStyle::Todo, false);
    assert_eq!(names[..built_in.len()], built_in);
    let mcp: Vec<&String> = names.iter().filter(|n| n.starts_with("mcp__")).collect();
    let mut sorted = mcp.clone();
    sorted.sort();
    assert_eq!(mcp, sorted);
    for n in ["mcp__py__add", "mcp__py__hang", "mcp__everything__echo", "mcp__everything__get-sum"] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
    assert!(mcp.iter().all(|n| n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))));
    // The server's own input schema and description.
    let add = tool(&first, "mcp__py__add");
    assert_eq!(add["description"], "Add two integers.");
    assert_eq!(add["input_schema"]["properties"]["a"]["type"], "integer");
    assert_eq!(add["input_schema"]["required"], json!(["a", "b"]));
    // Byte-identical in every request of the run (the prompt cache's prefix).
    for i in 1..5 {
        assert_eq!(h.body(i)["tools"], first["tools"], "request {i}");
    }

    let result = |i: usize| results(&h.body(i)).remove(0);
    assert_eq!(result(1).1, "sum=42");
    assert!(!result(1).2);
    let (_, text, is_error) = result(2);
    assert!(is_error && text.starts_with("Error: ") && text.contains("failed on purpose: the test asked"), "{text}");
    assert_eq!(result(3), (result(3).0, "Echo: hi there".to_string(), false));
    let (_, text, is_error) = result(4);
    assert!(!is_error && text.contains("[image: image/png]"), "{text}");
}

#[tokio::test]
async fn streamable_http_server() {
    let dir = TempDir::new("mcp-http");
    let server = HttpServer::start(dir.path());
    let mut h = Harness::new(vec![call("mcp__web__add", json!({"a": 1, "b": 2})), Step::text("done")]).await;
    let (set, reported) = start(json!({"web": {"type": "http", "url": server.url}}), h.ws.path(), Timeouts::default());
    h.cfg.mcp.set = Some(set);
    let out = h.run("add over http").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    assert!(reported.lock().unwrap().is_empty(), "{:?}", reported.lock().unwrap());
    assert_eq!(results(&h.body(1))[0].1, "sum=3");
}

#[tokio::test]
async fn crashes_and_hangs_are_error_results_and_the_run_goes_on() {
    tools();
    let mut h = Harness::new(vec![
        call("mcp__py__hang", json!({})),
        call("mcp__py__crash", json!({})),
        call("mcp__py__add", json!({"a": 1, "b": 1})),
        call("mcp__ok__add", json!({"a": 1, "b": 1})),
        Step::text("still here"),
    ])
    .await;
    let timeouts = Timeouts { start: Duration::from_secs(60), call: Duration::from_secs(2) };
    let (set, reported) = start(json!({"py": fastmcp_stdio(), "ok": fastmcp_stdio()}), h.ws.path(), timeouts);
    h.cfg.mcp.set = Some(set);
    let out = h.run("try everything").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    assert_eq!(out.final_text, "still here");
    assert!(reported.lock().unwrap().is_empty(), "{:?}", reported.lock().unwrap());

    let (_, text, is_error) = results(&h.body(1)).remove(0);
    assert!(is_error && text.contains("MCP tool hang of py timed out after 2s (STEPWISE_MCP_TIMEOUT)"), "{text}");
    let (_, text, is_error) = results(&h.body(2)).remove(0);
    assert!(is_error && text.starts_with("Error: MCP server py failed"), "{text}");
    // The crashed server stays down; the other one still answers.
    let (_, text, is_error) = results(&h.body(3)).remove(0);
    assert!(is_error && text.starts_with("Error: MCP server py failed"), "{text}");
    assert_eq!(results(&h.body(4))[0].1, "sum=2");
}

#[tokio::test]
async fn servers_that_fail_to_start_are_reported_and_left_out() {
    let mut h = Harness::new(vec![call("mcp__garbage__x", json!({})), Step::text("ok")]).await;
    let servers = json!({
        "garbage": {"command": "bash", "args": ["-c", "echo 'this is not JSON-RPC'; echo '{\"jsonrpc\": 7}'; exec sleep 600"]},
        "dies": {"command": "bash", "args": ["-c", "head -c 1000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo 'missing config' >&2; exit 3"]},
        "absent": {"command": "/nonexistent/mcp-server"},
        "nobody": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
    });
    let timeouts = Timeouts { start: Duration::from_secs(3), call: Duration::from_secs(3) };
    let (set, reported) = start(servers, h.ws.path(), timeouts);
    h.cfg.mcp.set = Some(set);
    let out = h.run("go").await;
    assert_eq!(out.reason, FinishReason::EndTurn, "{out:?}");
    let reported = reported.lock().unwrap().clone();
    assert_eq!(reported.len(), 4, "{reported:?}");
    let line = |name: &str| {
        reported
            .iter()
            .find(|l| l.starts_with(&format!("MCP server '{name}' failed to start: ")))
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {reported:?}"))
    };
    assert!(line("garbage").contains("did not start within 3s (STEPWISE_MCP_START_TIMEOUT)"), "{reported:?}");
    assert!(
        line("dies").contains("it exited with code 3: ")
            && line("dies").ends_with("\nmissing config; its tools are left out"),
        "{reported:?}"
    );
    assert!(line("dies").len() < 1000, "a megabyte line on stderr is cut: {}", line("dies").len());
    assert!(
        line("absent").contains("it exited with code 127") && line("absent").contains("/nonexistent/mcp-server"),
        "{reported:?}"
    );
    assert!(line("nobody").ends_with("its tools are left out"), "{reported:?}");
    assert!(!tool_names(&h.body(0)).iter().any(|n| n.starts_with("mcp__")));
    assert_eq!(results(&h.body(1))[0].1, "Unknown tool: mcp__garbage__x");
}

#[tokio::test]
async fn calls_ask_like_shell_commands_and_a_denial_runs_nothing() {
    tools();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let a = asked.clone();
    let approver: stepwise::host::disk::Approver = Arc::new(move |ask: &Ask<'_>| {
        a.lock().unwrap().push(ask.question("proj"));
        let answer = if matches!(ask, Ask::Tool { tool: "pid", .. }) { Approval::Allow } else { Approval::Deny };
        Box::pin(async move { answer })
    });
    let mut h = Harness::new(vec![
        call("mcp__py__add", json!({"a": 1, "b": 1})),
        call("mcp__py__pid", json!({})),
        Step::text("ok"),
    ])
    .await;
    h.host = DiskHost::new(h.ws.path(), Some(approver)).unwrap();
    let (set, _) = start(json!({"py": fastmcp_stdio()}), h.ws.path(), Timeouts::default());
    h.cfg.mcp.set = Some(set);
    h.run("go").await;
    assert_eq!(
        *asked.lock().unwrap(),
        [
            "stepwise wants to use the MCP tool add of py in proj",
            "stepwise wants to use the MCP tool pid of py in proj"
        ]
    );
    let (_, text, is_error) = results(&h.body(1)).remove(0);
    assert!(is_error && text.contains("denied by the user"), "{text}");
    let (_, pid, is_error) = results(&h.body(2)).remove(0);
    assert!(!is_error, "{pid}");

    // The session ends: the server (a process group of its own) goes with it.
    let pid: i32 = pid.trim().parse().unwrap();
    assert!(stepwise_tests::mcp_servers::alive(pid));
    h.cfg = AgentConfig::default();
    assert!(gone(pid), "MCP server {pid} outlived its session");
}

/// Calls `name` of the started servers directly (no model), with `input`.
async fn call_direct(set: &McpSet, name: &str, input: Value) -> stepwise::mcp::Answer {
    let tools = set.ready().await;
    let tool = tools.find(name).unwrap_or_else(|| panic!("no tool {name}"));
    tools.call(tool, &input).await
}

#[tokio::test]
async fn a_server_that_dies_mid_call_ends_every_waiting_call_at_once_saying_how() {
    tools();
    let dir = TempDir::new("mcp-dies");
    let timeouts = Timeouts { start: Duration::from_secs(60), call: Duration::from_secs(60) };
    let (set, _) = start(json!({"py": fastmcp_stdio()}), dir.path(), timeouts);
    set.ready().await;
    let started = std::time::Instant::now();
    let (hang, crash) =
        tokio::join!(call_direct(&set, "mcp__py__hang", json!({})), call_direct(&set, "mcp__py__crash", json!({})));
    // Both end when the server does, not at the call's time limit.
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    for answer in [&hang, &crash] {
        assert!(answer.is_error, "{answer:?}");
        assert!(
            answer.text.starts_with("Error: MCP server py failed: it exited with code 3")
                && answer.text.contains("\nits last output:\n")
                && answer.text.ends_with("\ncrashing on purpose"),
            "{}",
            answer.text
        );
    }
}

#[tokio::test]
async fn the_servers_requests_mid_call_are_answered_on_stdio_and_http() {
    tools();
    let dir = TempDir::new("mcp-asks");
    let server = HttpServer::start(dir.path());
    let servers = json!({"py": fastmcp_stdio(), "web": {"type": "http", "url": server.url}});
    let (set, reported) = start(servers, dir.path(), Timeouts::default());
    for name in ["mcp__py__ask_client", "mcp__web__ask_client"] {
        let answer = call_direct(&set, name, json!({})).await;
        // The ping is answered; roots, which stepwise does not offer, are refused as the spec says.
        assert_eq!(answer.text, "ping answered; roots refused with -32601", "{name}");
    }
    assert!(reported.lock().unwrap().is_empty(), "{:?}", reported.lock().unwrap());
}

#[tokio::test]
async fn streamable_http_answered_as_json_bodies() {
    let dir = TempDir::new("mcp-http-json");
    let server = HttpServer::start_with(dir.path(), &["json"]);
    let (set, reported) = start(json!({"web": {"type": "http", "url": server.url}}), dir.path(), Timeouts::default());
    assert_eq!(call_direct(&set, "mcp__web__add", json!({"a": 2, "b": 3})).await.text, "sum=5");
    let failed = call_direct(&set, "mcp__web__fail", json!({"reason": "json"})).await;
    assert!(failed.is_error && failed.text.contains("failed on purpose: json"), "{failed:?}");
    assert!(reported.lock().unwrap().is_empty(), "{:?}", reported.lock().unwrap());
}

// Two threads: the client's connections see the old server go while the test waits for the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_the_http_server_forgot_is_begun_again() {
    let dir = TempDir::new("mcp-http-renew");
    let server = HttpServer::start(dir.path());
    let (set, _) = start(json!({"web": {"type": "http", "url": server.url}}), dir.path(), Timeouts::default());
    assert_eq!(call_direct(&set, "mcp__web__add", json!({"a": 1, "b": 1})).await.text, "sum=2");
    // The server restarts on the same port: it knows the session no more (404), and a new one is begun.
    let port = server.port.to_string();
    drop(server);
    let _server = HttpServer::start_with(dir.path(), &[&port]);
    assert_eq!(call_direct(&set, "mcp__web__add", json!({"a": 2, "b": 2})).await.text, "sum=4");
    assert_eq!(call_direct(&set, "mcp__web__sessions", json!({})).await.text, "1");
}

#[tokio::test]
async fn the_http_session_is_ended_when_its_servers_go() {
    let dir = TempDir::new("mcp-http-delete");
    let server = HttpServer::start(dir.path());
    let config = json!({"web": {"type": "http", "url": server.url}});
    let (first, _) = start(config.clone(), dir.path(), Timeouts::default());
    assert_eq!(call_direct(&first, "mcp__web__sessions", json!({})).await.text, "1");
    let (second, _) = start(config, dir.path(), Timeouts::default());
    assert_eq!(call_direct(&second, "mcp__web__sessions", json!({})).await.text, "2");
    drop(first);
    // The first session's DELETE goes in the background: the server counts it gone soon after.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while call_direct(&second, "mcp__web__sessions", json!({})).await.text != "1" {
        assert!(std::time::Instant::now() < deadline, "the first session was never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
