//! The command line with MCP servers and instruction files: a workspace `.mcp.json` starts nothing until
//! trusted on a terminal (`--yes` does not cover it), trust is remembered per content, servers are gone
//! when stepwise ends (also after `kill -9`), instruction files reach the system prompt, and `doctor`
//! lists both.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Stdio};

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::stepwise_binary;
use stepwise_tests::mcp_servers::{alive, fastmcp_stdio, gone, tools};
use stepwise_tests::mock::{MockModel, Step, Turn};
use stepwise_tests::pty::Pty;
use stepwise_tests::sent::tool_names;
use stepwise_tests::TempDir;

/// A `stepwise` with a clean environment, its own config and state folders, and the mock model.
fn stepwise(home: &TempDir, mock: Option<&MockModel>) -> Command {
    let mut cmd = Command::new(stepwise_binary(false));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("STEPWISE_STATE_DIR", home.join("state"))
        .env("NO_COLOR", "1")
        .env("STEPWISE_SANDBOX", "off")
        .current_dir(home.path());
    if let Some(m) = mock {
        cmd.env("ANTHROPIC_BASE_URL", m.url()).env("ANTHROPIC_API_KEY", "k").env("MODEL_ID", "m");
    }
    cmd
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let o = cmd.stdin(Stdio::null()).output().unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code().unwrap_or(-1), s(&o.stdout), s(&o.stderr))
}

/// A `.mcp.json` whose server leaves a marker file when started (and then speaks MCP: FastMCP).
fn marker_config(ws: &TempDir, marker: &str) {
    let py = fastmcp_stdio();
    let script = format!("touch {}; exec \"$0\" \"$@\"", ws.join(marker).display());
    let args = std::iter::once(json!("-c"))
        .chain(std::iter::once(json!(script)))
        .chain(std::iter::once(py["command"].clone()));
    let args: Vec<Value> = args.chain(py["args"].as_array().unwrap().iter().cloned()).collect();
    ws.write(".mcp.json", &json!({"mcpServers": {"repo": {"command": "bash", "args": args}}}).to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_workspace_mcp_json_starts_nothing_even_with_yes() {
    tools();
    let mock = MockModel::start(vec![Step::text("done")]).await;
    let (home, ws) = (TempDir::new("mcp-home"), TempDir::new("mcp-ws"));
    marker_config(&ws, "started");
    let (code, _, err) =
        run(stepwise(&home, Some(&mock)).args(["run", "--yes", "--workspace"]).arg(ws.path()).arg("hi"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("not starting the MCP servers of") && err.contains("not trusted yet"), "{err}");
    assert!(!ws.join("started").exists(), "an untrusted .mcp.json started its server");
    let body = &mock.requests()[0].body;
    assert!(!tool_names(body).iter().any(|n| n.starts_with("mcp__")), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_is_asked_on_a_terminal_and_remembered_per_content() {
    tools();
    let mock =
        MockModel::start(vec![Step::text("first"), Step::text("second"), Step::text("third"), Step::text("fourth")])
            .await;
    let (home, ws) = (TempDir::new("mcp-home"), TempDir::new("mcp-ws"));
    marker_config(&ws, "started");
    let chat = |pty_end: &OwnedFd| {
        stepwise(&home, Some(&mock))
            .args(["chat", "--yes", "--workspace"])
            .arg(ws.path())
            .stdin(Stdio::from(pty_end.try_clone().unwrap()))
            .stdout(Stdio::null())
            .stderr(Stdio::from(pty_end.try_clone().unwrap()))
            .spawn()
            .unwrap()
    };
    // Refused on the terminal: nothing starts, and the question comes again next time.
    let (mut pty, end) = Pty::open(Duration::from_secs(60));
    let mut child = chat(&end);
    drop(end);
    pty.expect("asks to start MCP servers");
    pty.expect("repo: bash -c touch");
    pty.expect("[y/N]: ");
    pty.type_line("n");
    pty.type_line("hello");
    pty.expect("[end_turn");
    pty.type_line("exit");
    assert!(child.wait().unwrap().success());
    assert!(!ws.join("started").exists());

    // Trusted: the server starts and its tools are offered.
    let (mut pty, end) = Pty::open(Duration::from_secs(60));
    let mut child = chat(&end);
    drop(end);
    pty.expect("[y/N]: ");
    pty.type_line("y");
    pty.type_line("hello");
    pty.expect("[end_turn");
    pty.type_line("exit");
    assert!(child.wait().unwrap().success());
    assert!(ws.join("started").exists(), "the trusted .mcp.json did not start its server");
    let last = mock.requests().last().unwrap().body.clone();
    assert!(tool_names(&last).contains(&"mcp__repo__add".to_string()), "{last}");

    // Remembered: without a terminal it starts at once.
    std::fs::remove_file(ws.join("started")).unwrap();
    let (code, _, err) = run(stepwise(&home, Some(&mock)).args(["run", "--workspace"]).arg(ws.path()).arg("hi"));
    assert_eq!(code, 0, "{err}");
    assert!(ws.join("started").exists(), "the remembered trust was not used: {err}");

    // A changed file is a new question.
    std::fs::remove_file(ws.join("started")).unwrap();
    marker_config(&ws, "started-again");
    let (code, _, err) = run(stepwise(&home, Some(&mock)).args(["run", "--workspace"]).arg(ws.path()).arg("hi"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("not trusted yet") && !ws.join("started-again").exists(), "{err}");
}

/// The user's `mcp.json` with the FastMCP server as `py`, which first starts a helper of its own (as
/// `npx` or a language server would) that does not care about stdin: it writes its pid to `helper.pid`.
fn user_config(home: &TempDir) {
    let py = fastmcp_stdio();
    let script = format!("sleep 600 & echo $! > {}; exec \"$0\" \"$@\"", home.join("helper.pid").display());
    let mut args = vec![json!("-c"), json!(script), py["command"].clone()];
    args.extend(py["args"].as_array().unwrap().iter().cloned());
    home.write(
        "config/stepwise/mcp.json",
        &json!({"mcpServers": {"py": {"command": "bash", "args": args}}}).to_string(),
    );
}

/// The pid the model's `mcp__py__pid` call got, once the model has seen it.
fn pid_seen(mock: &MockModel) -> i32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(r) = mock.requests().get(1) {
            let content = &r.body["messages"][2]["content"][0];
            return content["content"].as_str().unwrap().trim().parse().unwrap_or_else(|_| panic!("{content}"));
        }
        assert!(std::time::Instant::now() < deadline, "the model never got the pid");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_end_with_stepwise_even_when_it_is_killed() {
    tools();
    for kill in [false, true] {
        let pid_call = Turn::default().with_tool("mcp__py__pid", json!({}));
        // Killed: the model's second answer never comes in time; otherwise the run ends there.
        let second = if kill { Turn::text("late").with_delay_ms(60_000) } else { Turn::text("done") };
        let mock = MockModel::start(vec![pid_call.into(), second.into()]).await;
        let home = TempDir::new("mcp-home");
        user_config(&home);
        let mut child = stepwise(&home, Some(&mock))
            .args(["run", "--yes", "--workspace"])
            .arg(home.path())
            .arg("pid")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = pid_seen(&mock);
        let helper: i32 = std::fs::read_to_string(home.join("helper.pid")).unwrap().trim().parse().unwrap();
        if kill {
            assert!(alive(pid) && alive(helper));
            // SAFETY: plain syscall on our child.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGKILL);
            }
        }
        child.wait().unwrap();
        assert!(gone(pid), "the MCP server {pid} outlived stepwise (killed: {kill})");
        assert!(gone(helper), "the MCP server's helper {helper} outlived stepwise (killed: {kill})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instruction_files_reach_the_system_prompt_and_doctor_lists_them() {
    let mock =
        MockModel::start(vec![Turn::default().with_tool("read_file", json!({"path": "x"})).into(), Step::text("done")])
            .await;
    let (home, ws) = (TempDir::new("mcp-home"), TempDir::new("mcp-ws"));
    home.write("config/stepwise/AGENTS.md", "Answer in French.\n");
    ws.write("AGENTS.md", "Run make test before you finish.\n");
    ws.write("CLAUDE.md", "ignored when AGENTS.md exists\n");
    ws.write(".mcp.json", r#"{"mcpServers": {"repo": {"command": "srv", "args": ["--x"]}, "bad": {}}}"#);
    let (code, _, err) =
        run(stepwise(&home, Some(&mock)).args(["run", "--yes", "--workspace"]).arg(ws.path()).arg("hi"));
    assert_eq!(code, 0, "{err}");
    let reqs = mock.requests();
    let system = reqs[0].body["system"].to_string();
    let user_file = home.path().canonicalize().unwrap().join("config/stepwise/AGENTS.md");
    let ws_file = ws.path().canonicalize().unwrap().join("AGENTS.md");
    let (u, w) = (system.find("Answer in French."), system.find("Run make test before you finish."));
    assert!(u.is_some() && w.is_some() && u < w, "{system}");
    for f in [&user_file, &ws_file] {
        assert!(system.contains(&format!("Instructions from {}:", f.display())), "{f:?} in {system}");
    }
    assert!(!system.contains("ignored when"));
    assert_eq!(reqs[1].body["system"], reqs[0].body["system"], "the system prompt changed within the run");

    let (code, out, _) = run(stepwise(&home, Some(&mock)).args(["doctor", "--json", "--workspace"]).arg(ws.path()));
    assert_eq!(code, 0, "{out}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let paths: Vec<&str> =
        doc["instructions"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, [user_file.to_str().unwrap(), ws_file.to_str().unwrap()]);
    assert_eq!(doc["instructions"][1]["scope"], "workspace");
    let servers = doc["mcpServers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{doc}");
    assert_eq!(servers[0]["name"], "repo");
    assert_eq!(servers[0]["state"], "untrusted");
    assert_eq!(servers[0]["command"], "srv");
    assert!(doc["mcpProblems"][0].as_str().unwrap().contains("server 'bad'"), "{doc}");

    let (_, text, _) = run(stepwise(&home, Some(&mock)).args(["doctor", "--workspace"]).arg(ws.path()));
    assert!(
        text.contains(&format!("instructions {} (", ws_file.display()))
            || text.contains(&ws_file.display().to_string()),
        "{text}"
    );
    assert!(text.contains("repo (stdio, workspace): srv --x [not trusted yet"), "{text}");
    assert!(Path::new(&user_file).exists());
}
