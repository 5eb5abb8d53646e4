//! The real `stepwise` binary against the mock model.
//!
//! `cargo test -p stepwise-tests` does not build another package's binary, so the first test that
//! needs it runs `cargo build -p stepwise --bin stepwise` once (same profile and target dir as this
//! test executable); cargo makes that a no-op when the binary is current.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use common::*;
use serde_json::json;
use stepwise_tests::mock::{MockModel, Step, Turn};
use stepwise_tests::sent::tool_names;
use tokio::io::AsyncWriteExt;

fn stepwise_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // <target>/<profile>/deps/<this test>
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let target_dir = profile_dir.parent().unwrap().to_path_buf();
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "stepwise", "--bin", "stepwise", "--manifest-path"])
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", &target_dir);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                cmd.arg("--release");
            }
            Some(other) => {
                cmd.args(["--profile", other]);
            }
            None => {}
        }
        let status = cmd.status().expect("cannot run cargo to build the stepwise binary");
        assert!(status.success(), "cargo build -p stepwise failed");
        let bin = profile_dir.join("stepwise");
        assert!(bin.exists(), "{} missing after the build", bin.display());
        bin
    })
}

/// A `stepwise` command with a clean environment: no inherited STEPWISE_*, MODEL_ID or provider
/// variables, run from an empty folder (so no stray `.env` is read).
fn stepwise(cwd: &Path) -> tokio::process::Command {
    let bin = stepwise_bin();
    let mut cmd = tokio::process::Command::new(bin);
    cmd.env_clear();
    // STEPWISE_PORTABLE_HOST: the suite runs again on the portable host paths (tests/tests/portable_host.rs).
    for keep in ["PATH", "HOME", "TMPDIR", "LANG", stepwise::host::PORTABLE_ENV] {
        if let Ok(v) = std::env::var(keep) {
            cmd.env(keep, v);
        }
    }
    // Today's behaviour for these tests; the sandbox's own turn it on (here, cli_terminal.rs,
    // acp_terminal.rs, lsp_control.rs, host_sandbox.rs).
    cmd.env("STEPWISE_SANDBOX", "off");
    cmd.current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    cmd
}

fn with_mock(cmd: &mut tokio::process::Command, mock: &MockModel) {
    cmd.env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "cli-key")
        .env("MODEL_ID", "cli-model")
        .env("STEPWISE_RETRY_BASE_MS", "10");
}

async fn output(cmd: &mut tokio::process::Command) -> Output {
    let child = cmd.spawn().unwrap();
    tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await.expect("stepwise hung").unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn show(o: &Output) -> String {
    format!("status {:?}\n--- stdout\n{}\n--- stderr\n{}", o.status, text(&o.stdout), text(&o.stderr))
}

fn plan_step() -> Step {
    Turn::text("Planning first.")
        .with_tool(
            "todo",
            json!({"items": [
                {"id": "1", "text": "Write the note", "status": "in_progress"},
                {"id": "2", "text": "Report", "status": "pending"}
            ]}),
        )
        .into()
}

#[tokio::test]
async fn run_prints_the_plan_and_the_final_text() {
    let mock = MockModel::start(vec![
        plan_step(),
        call("write_file", json!({"path": "note.txt", "content": "written by stepwise\n"})),
        Step::text("All done: note.txt is written."),
    ])
    .await;
    let ws = TempDir::new("cli-ws");
    let cwd = TempDir::new("cli-cwd");
    let mut cmd = stepwise(cwd.path());
    with_mock(&mut cmd, &mock);
    cmd.args(["run", "--workspace"]).arg(ws.path()).args(["--yes", "write", "a", "note"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.contains("[>] #1: Write the note\n[ ] #2: Report\n\n(0/2 completed)"), "{}", show(&o));
    assert!(out.contains("All done: note.txt is written."), "{}", show(&o));
    assert!(!out.contains('\x1b'), "no colour codes when stdout is not a terminal");
    assert_eq!(ws.read("note.txt"), "written by stepwise\n");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].header("x-api-key"), Some("cli-key"));
    assert_eq!(reqs[0].body["model"], "cli-model");
    assert_eq!(reqs[0].body["messages"][0]["content"][0]["text"], "write a note");
}

#[tokio::test]
async fn run_against_openai_provider() {
    let mock = MockModel::start(vec![Step::text("openai says hi")]).await;
    let ws = TempDir::new("cli-ws");
    let mut cmd = stepwise(ws.path());
    cmd.env("STEPWISE_PROVIDER", "openai")
        .env("OPENAI_BASE_URL", mock.openai_base())
        .env("OPENAI_API_KEY", "sk-cli")
        .env("MODEL_ID", "gpt-mock")
        .args(["run", "hi"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).contains("openai says hi"));
    let all = mock.requests();
    // With no window configured the server is asked for its own first (llama.cpp, vLLM), without the key.
    let asked: Vec<&str> = all.iter().filter(|r| r.method == "GET").map(|r| r.path.as_str()).collect();
    assert_eq!(asked, vec!["/props", "/v1/models"]);
    assert!(all.iter().filter(|r| r.method == "GET").all(|r| r.header("authorization").is_none()));
    let reqs: Vec<_> = all.into_iter().filter(|r| r.method == "POST").collect();
    assert_eq!(reqs[0].path, "/v1/chat/completions");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-cli"));
    assert_eq!(reqs[0].body["model"], "gpt-mock");
}

#[tokio::test]
async fn missing_model_or_key_fails_before_any_request() {
    let mock = MockModel::start(vec![Step::text("never")]).await;
    let ws = TempDir::new("cli-ws");

    let mut cmd = stepwise(ws.path());
    cmd.env("ANTHROPIC_BASE_URL", mock.url()).env("ANTHROPIC_API_KEY", "k").args(["run", "--yes", "task"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("MODEL_ID"), "{}", show(&o));

    let mut cmd = stepwise(ws.path());
    cmd.env("ANTHROPIC_BASE_URL", mock.url()).env("MODEL_ID", "m").args(["run", "--yes", "task"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("ANTHROPIC_API_KEY"), "{}", show(&o));

    // A run with everything configured is the model's first request.
    let mut cmd = stepwise(ws.path());
    with_mock(&mut cmd, &mock);
    cmd.args(["run", "--yes", "task"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(mock.requests().len(), 1, "a request reached the model without a model or a key");
}

#[tokio::test]
async fn provider_error_exits_1_with_the_message() {
    let body = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
    let mock = MockModel::start(vec![stepwise_tests::mock::HttpError::new(401).body(body).into()]).await;
    let ws = TempDir::new("cli-ws");
    let mut cmd = stepwise(ws.path());
    with_mock(&mut cmd, &mock);
    cmd.args(["run", "--yes", "task"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("401") && err.contains("invalid x-api-key"), "{}", show(&o));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn dotenv_is_read_and_real_env_wins() {
    let mock = MockModel::start(vec![Step::text("one"), Step::text("two")]).await;
    let ws = TempDir::new("cli-ws");
    let cwd = TempDir::new("cli-cwd");
    ws.write(
        ".env",
        &format!(
            "# test\nMODEL_ID=from-dotenv\nexport ANTHROPIC_API_KEY=\"dotenv-key\"\nANTHROPIC_BASE_URL={}\n",
            mock.url()
        ),
    );
    let mut cmd = stepwise(cwd.path());
    cmd.args(["run", "--workspace"]).arg(ws.path()).args(["--yes", "task"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));

    let mut cmd = stepwise(cwd.path());
    cmd.env("MODEL_ID", "from-env").args(["run", "--workspace"]).arg(ws.path()).args(["--yes", "task"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body["model"], "from-dotenv");
    assert_eq!(reqs[0].header("x-api-key"), Some("dotenv-key"));
    assert_eq!(reqs[1].body["model"], "from-env");
    assert_eq!(reqs[1].header("x-api-key"), Some("dotenv-key"));
}

/// The model can make a FIFO with a shell command. One in place of `.env`, `.mcp.json`, `AGENTS.md` or
/// `.gitignore` is not read: a plain open waits for a writer for ever, and the run hung before its first
/// request.
#[tokio::test]
async fn a_fifo_in_place_of_a_file_stepwise_reads_does_not_hold_up_the_run() {
    let mock = MockModel::start(vec![Step::text("answered")]).await;
    let ws = TempDir::new("cli-fifo");
    ws.write("main.py", "x = 1\n");
    for name in [".env", ".mcp.json", "AGENTS.md", ".gitignore"] {
        let path = std::ffi::CString::new(ws.join(name).into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a plain syscall on a path of our own.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "{name}");
    }
    let mut cmd = stepwise(ws.path());
    with_mock(&mut cmd, &mock);
    cmd.args(["run", "--yes", "hello"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stdout).contains("answered"), "{}", show(&o));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn dotenv_in_the_current_directory_and_workspace_first() {
    let mock = MockModel::start(vec![Step::text("one"), Step::text("two")]).await;
    let ws = TempDir::new("cli-ws");
    let cwd = TempDir::new("cli-cwd");
    cwd.write(".env", &format!("MODEL_ID=from-cwd\nANTHROPIC_API_KEY=cwd-key\nANTHROPIC_BASE_URL={}\n", mock.url()));
    let mut cmd = stepwise(cwd.path());
    cmd.args(["run", "--workspace"]).arg(ws.path()).args(["--yes", "task"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));

    ws.write(".env", "MODEL_ID=from-workspace\n");
    let mut cmd = stepwise(cwd.path());
    cmd.args(["run", "--workspace"]).arg(ws.path()).args(["--yes", "task"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body["model"], "from-cwd");
    assert_eq!(reqs[1].body["model"], "from-workspace", "the workspace's .env comes first");
    assert_eq!(reqs[1].header("x-api-key"), Some("cwd-key"), "the current directory's .env fills in the rest");
}

/// `stepwise chat --yes` against the mock with these lines on stdin, then end of input. Without cache
/// breakpoints (the switch read from the environment), so the history is sent exactly as kept.
async fn chat_with_lines(mock: &MockModel, lines: &[u8]) -> Output {
    let ws = TempDir::new("cli-ws");
    let mut cmd = stepwise(ws.path());
    with_mock(&mut cmd, mock);
    cmd.env("STEPWISE_PROMPT_CACHE", "off");
    cmd.args(["chat", "--yes"]).stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(lines).await.unwrap();
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await.unwrap().unwrap()
}

#[tokio::test]
async fn chat_keeps_the_conversation_and_quits_on_q() {
    let mock =
        MockModel::start(vec![Step::text("First answer."), Step::text("Second answer."), Step::text("never")]).await;
    let o = chat_with_lines(&mock, b"task one\n\ntask two\nq\ntask three\n").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.starts_with("stepwise >> "), "{}", show(&o));
    assert!(out.matches("stepwise >> ").count() >= 3, "{}", show(&o));
    assert!(out.contains("First answer.") && out.contains("Second answer."), "{}", show(&o));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "`q` quits: nothing after it is sent");
    assert_eq!(
        reqs[1].body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "task one"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "First answer."}]},
            {"role": "user", "content": [{"type": "text", "text": "task two"}]}
        ])
    );
}

#[tokio::test]
async fn chat_ends_at_end_of_input() {
    let mock = MockModel::start(vec![Step::text("Only answer.")]).await;
    let ws = TempDir::new("cli-ws");
    let mut cmd = stepwise(ws.path());
    with_mock(&mut cmd, &mock);
    cmd.args(["chat"]).stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"just one\n").await.unwrap();
    drop(stdin);
    let o = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn record_then_replay_without_the_model() {
    let mock = MockModel::start(vec![
        plan_step(),
        call("write_file", json!({"path": "out.txt", "content": "from the model\n"})),
        call("bash", json!({"command": "cat out.txt"})),
        Step::text("Wrote and checked out.txt."),
    ])
    .await;
    let files = TempDir::new("cli-files");
    let rec = files.join("session.jsonl");
    let ws1 = TempDir::new("cli-ws");
    let mut cmd = stepwise(ws1.path());
    with_mock(&mut cmd, &mock);
    // The `--flag=value` form.
    cmd.args(["run", "--yes"]).arg(format!("--record={}", rec.display())).arg("make out.txt");
    let live = output(&mut cmd).await;
    assert_eq!(live.status.code(), Some(0), "{}", show(&live));
    assert_eq!(mock.requests().len(), 4);
    assert_eq!(std::fs::read_to_string(&rec).unwrap().lines().count(), 4);
    drop(mock);

    // No model variables at all: the replay needs none.
    let ws2 = TempDir::new("cli-ws");
    let elsewhere = TempDir::new("cli-cwd");
    let mut cmd = stepwise(elsewhere.path());
    cmd.args(["run", "-y", "--replay"])
        .arg(&rec)
        .arg(format!("--workspace={}", ws2.path().display()))
        .arg("make out.txt");
    let replayed = output(&mut cmd).await;
    assert_eq!(replayed.status.code(), Some(0), "{}", show(&replayed));
    assert_eq!(text(&replayed.stdout), text(&live.stdout));
    assert_eq!(ws2.read("out.txt"), "from the model\n");
    assert!(text(&replayed.stdout).contains("Wrote and checked out.txt."));
}

#[tokio::test]
async fn demo_runs_the_scripted_session() {
    let cwd = TempDir::new("cli-cwd");
    let mut cmd = stepwise(cwd.path());
    cmd.arg("demo");
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.lines().next().unwrap_or("").contains("SCRIPTED"), "{}", show(&o));
    assert!(out.contains("(5/5 completed)"), "{}", show(&o));
    let tail = out.rsplit("--- hello.py after the session ---").next().unwrap();
    assert!(out.contains("--- hello.py after the session ---"), "{}", show(&o));
    assert!(
        tail.contains("def greet(name: str) -> str:\n    \"\"\"Return a friendly greeting for `name`.\"\"\""),
        "{tail}"
    );
    assert!(tail.contains("def shout(name: str) -> str:"), "{tail}");
    assert!(tail.contains("if __name__ == \"__main__\":\n    main()\n"), "{tail}");
    assert!(out.trim_end().ends_with("--- end (scripted demo) ---"), "{}", show(&o));
}

#[tokio::test]
async fn sigint_during_a_model_request_exits_130() {
    let mock = MockModel::start(vec![Step::Hang]).await;
    let ws = TempDir::new("cli-ws");
    let mut cmd = stepwise(ws.path());
    with_mock(&mut cmd, &mock);
    cmd.args(["run", "--yes", "wait for it"]);
    let child = cmd.spawn().unwrap();
    let pid = child.id().unwrap() as i32;
    // The Ctrl-C handler is registered before the request is sent.
    mock.wait_for_requests(1, WAIT).await;
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let o = tokio::time::timeout(Duration::from_secs(5), child.wait_with_output())
        .await
        .expect("no exit after SIGINT")
        .unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", show(&o));
}

#[tokio::test]
async fn usage_errors_exit_2() {
    let cwd = TempDir::new("cli-cwd");
    for args in [vec!["run"], vec!["frobnicate"], vec!["run", "--bogus", "x"], vec!["chat", "extra"], vec![]] {
        let mut cmd = stepwise(cwd.path());
        cmd.args(&args);
        let o = output(&mut cmd).await;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", show(&o));
        // A usage line says how it is used; nothing on stdout.
        assert!(text(&o.stderr).contains("Usage: stepwise"), "{args:?}: {}", show(&o));
        assert!(o.stdout.is_empty(), "{args:?}: {}", show(&o));
    }
    let mut cmd = stepwise(cwd.path());
    cmd.arg("--version");
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).starts_with("stepwise "));
}

#[tokio::test]
async fn run_hitting_the_output_limit_exits_1_and_says_so() {
    let cut = |t: &str| Step::Turn(Turn::text(t).with_stop_reason("max_tokens").with_cache_usage(10, 90, 0, 5));
    let mock = MockModel::start(vec![cut("a"), cut("b"), cut("c")]).await;
    let ws = TempDir::new("cli-ws");
    let mut cmd = stepwise(ws.path());
    with_mock(&mut cmd, &mock);
    cmd.env("STEPWISE_MAX_TOKENS", "77").env("STEPWISE_CONTEXT_WINDOW", "1000");
    cmd.args(["run", "--yes", "write", "a", "novel"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = text(&o.stderr);
    assert!(err.contains("error: the model's reply hit the output limit"), "{}", show(&o));
    // The end-of-run line: the whole prompt, its cached share, and context use of the window.
    assert!(
        err.contains("[max_tokens: 3 rounds, 300 input tokens (270 cached) / 15 output · context 10% of 1000]"),
        "{}",
        show(&o)
    );
    assert!(mock.requests().iter().all(|r| r.body["max_tokens"] == 77), "STEPWISE_MAX_TOKENS reaches the wire");
}

#[tokio::test]
async fn a_workspace_env_cannot_send_the_key_elsewhere() {
    let mock = MockModel::start(vec![Step::text("key received")]).await;
    let ws = TempDir::new("cli-ws");
    let state = TempDir::new("cli-state");
    ws.write(".env", &format!("ANTHROPIC_BASE_URL={}\n", mock.url()));
    let mut cmd = stepwise(ws.path());
    cmd.env("ANTHROPIC_API_KEY", "sk-from-the-environment")
        .env("MODEL_ID", "m")
        .env("STEPWISE_STATE_DIR", state.path());
    cmd.args(["run", "--yes", "hello"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = text(&o.stderr);
    let dotenv = std::fs::canonicalize(ws.join(".env")).unwrap();
    assert!(err.contains(&format!("ANTHROPIC_BASE_URL in {}", dotenv.display())), "{}", show(&o));
    assert!(!err.contains("sk-from-the-environment"));
    assert!(mock.requests().is_empty(), "the key never left");

    // The key in the same file as the URL: both were put there together, so they are used.
    ws.write(".env", &format!("ANTHROPIC_BASE_URL={}\nANTHROPIC_API_KEY=sk-in-the-file\n", mock.url()));
    let mut cmd = stepwise(ws.path());
    cmd.env("MODEL_ID", "m").env("STEPWISE_STATE_DIR", state.path());
    cmd.args(["run", "--yes", "hello"]);
    let o = output(&mut cmd).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(mock.requests()[0].header("x-api-key"), Some("sk-in-the-file"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_stepwise_leaves_no_command_running() {
    let mock = MockModel::start(vec![call(
        "bash",
        json!({"command": "echo $$ > shell.pid; sleep 300 & echo $! > bg.pid; sleep 300"}),
    )])
    .await;
    let ws = TempDir::new("cli-ws");
    let mut cmd = stepwise(ws.path());
    with_mock(&mut cmd, &mock);
    cmd.args(["run", "--yes", "wait", "forever"]);
    let child = cmd.spawn().unwrap();
    let pid = child.id().unwrap() as i32;
    let shell = read_pid(&ws.join("shell.pid"));
    let bg = read_pid(&ws.join("bg.pid"));
    // SAFETY: plain syscall on our child's pid.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = child.wait_with_output().await;
    assert!(wait_gone(shell), "the command's shell {shell} outlived a kill -9 of stepwise");
    assert!(wait_gone(bg), "the command's background child {bg} outlived a kill -9 of stepwise");
}

#[tokio::test]
async fn every_subcommand_answers_help() {
    let cwd = TempDir::new("cli-help");
    for sub in ["run", "chat", "demo", "lsp", "acp"] {
        let mut cmd = stepwise(cwd.path());
        cmd.args([sub, "--help"]);
        let o = output(&mut cmd).await;
        assert_eq!(o.status.code(), Some(0), "{sub} --help: {}", show(&o));
        assert!(text(&o.stdout).contains("Usage:"), "{sub} --help: {}", show(&o));
    }
}

#[tokio::test]
async fn chat_compact_summarises_and_keeps_going() {
    let mock = MockModel::start(vec![
        Step::text("First answer."),
        Step::text("SUMMARY: one task answered"),
        Step::text("Second answer."),
    ])
    .await;
    let o = chat_with_lines(&mock, b"task one\n/compact\ntask two\n").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(text(&o.stderr).contains("[compacted the conversation: about "), "{}", show(&o));
    assert!(text(&o.stdout).contains("Compacted to about "), "{}", show(&o));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    assert!(
        reqs[1].body.get("tools").is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty())),
        "the summary request has no tools"
    );
    let head = reqs[2].body["messages"][0]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(head.starts_with("task one\n\n[Summary of the conversation so far]\nSUMMARY: one task answered"), "{head}");
}

/// Every `STEPWISE_*` setting, from a workspace `.env` file through the binary's real configuration
/// path, changes what it says it changes.
#[tokio::test]
async fn every_setting_reaches_the_run_from_a_dotenv_file() {
    let run = |mock: &MockModel, settings: &str| {
        let ws = TempDir::new("cli-settings");
        ws.write(".env", &format!("ANTHROPIC_BASE_URL={}\nANTHROPIC_API_KEY=k\nMODEL_ID=m\n{settings}", mock.url()));
        let mut cmd = stepwise(ws.path());
        cmd.args(["run", "--yes", "task"]);
        async move { (output(&mut cmd).await, ws) }
    };
    let tool = |command: &str| Step::tool("bash", json!({"command": command}));

    // Output limit, prompt cache, reminder cadence, round cap, planning style, shell timeout.
    let mock = MockModel::start(vec![tool("sleep 5"), tool("echo two"), tool("echo three"), Step::text("never")]).await;
    let (o, _ws) = run(
        &mock,
        "STEPWISE_MAX_TOKENS=1234\nSTEPWISE_PROMPT_CACHE=off\nSTEPWISE_REMINDER_ROUNDS=1\nSTEPWISE_MAX_ROUNDS=3\n\
         STEPWISE_PLANNING=tasks\nSTEPWISE_BASH_TIMEOUT=1\n",
    )
    .await;
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("[max_rounds: 3 rounds"), "{}", show(&o));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "STEPWISE_MAX_ROUNDS=3");
    let first = &reqs[0].body;
    assert_eq!(first["max_tokens"], 1234);
    assert!(!first.to_string().contains("cache_control"), "STEPWISE_PROMPT_CACHE=off: {first}");
    let tools = tool_names(first);
    assert!(
        tools.iter().any(|t| t == "create_todos") && !tools.iter().any(|t| t == "todo"),
        "STEPWISE_PLANNING=tasks: {tools:?}"
    );
    let second = reqs[1].body.to_string();
    assert!(second.contains("Error: Timeout (1s)"), "STEPWISE_BASH_TIMEOUT=1: {second}");
    assert!(second.contains("<reminder>Update your todos.</reminder>"), "STEPWISE_REMINDER_ROUNDS=1: {second}");

    // The model's silence, and the retries (count and first delay).
    let mock = MockModel::start(vec![Step::Hang]).await;
    let (o, _ws) = run(&mock, "STEPWISE_MODEL_TIMEOUT=1\nSTEPWISE_MAX_RETRIES=0\n").await;
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("STEPWISE_MODEL_TIMEOUT"), "{}", show(&o));
    assert_eq!(mock.requests().len(), 1, "STEPWISE_MAX_RETRIES=0");
    let mock = MockModel::start(vec![
        Step::http_error(529),
        Step::http_error(529),
        Step::http_error(529),
        Step::text("one too many"),
    ])
    .await;
    let (o, _ws) = run(&mock, "STEPWISE_MAX_RETRIES=2\nSTEPWISE_RETRY_BASE_MS=1\n").await;
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert_eq!((mock.requests().len(), mock.remaining()), (3, 1), "one try and STEPWISE_MAX_RETRIES=2 retries");

    // The context window and the compaction threshold: a 600-token prompt in a 1000-token window is
    // compacted past 50%, not past 90%.
    for (threshold, compacts) in [(50, true), (90, false)] {
        let mock = MockModel::start(vec![
            Step::Turn(Turn::text("").with_tool("bash", json!({"command": "echo hi"})).with_usage(600, 10)),
            Step::text("the summary"),
            Step::text("done"),
        ])
        .await;
        let (o, _ws) =
            run(&mock, &format!("STEPWISE_CONTEXT_WINDOW=1000\nSTEPWISE_COMPACT_THRESHOLD={threshold}\n")).await;
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let compacted = text(&o.stderr).contains("[compacted the conversation");
        assert_eq!(compacted, compacts, "threshold {threshold}: {}", show(&o));
        assert!(text(&o.stderr).contains("of 1000]"), "the window is the configured one: {}", show(&o));
    }
}

/// `/plan` shows the plan; `/plan edit` opens `$EDITOR` on its render form and applies what was saved: a
/// broken rule is said and the text offered again; the next task's request carries the edit.
#[tokio::test]
async fn chat_plan_edit_opens_the_editor_and_the_model_is_told() {
    let mock = MockModel::start(vec![Step::text("Seen.")]).await;
    let tools = TempDir::new("cli-editor");
    // First save: two steps in progress (refused); second save: a valid plan.
    tools.write(
        "edit.sh",
        &format!(
            "#!/bin/sh\nc={dir}/count\nn=$(cat \"$c\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$c\"\n\
             if [ $n = 1 ]; then printf '[>] a\\n[>] b\\n' > \"$1\"; else printf '[x] Read the code\\n[>] Write the test\\n' > \"$1\"; fi\n",
            dir = tools.path().display()
        ),
    );
    let ws = TempDir::new("cli-ws");
    let mut cmd = stepwise(ws.path());
    with_mock(&mut cmd, &mock);
    cmd.env("STEPWISE_PROMPT_CACHE", "off").env("EDITOR", format!("sh {}", tools.join("edit.sh").display()));
    cmd.env_remove("VISUAL");
    cmd.args(["chat", "--yes"]).stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"/plan\n/plan edit\ny\n/plan\ngo\n").await.unwrap();
    drop(stdin);
    let o = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.contains("No todos."), "{out}");
    assert_eq!(out.matches("[x] #1: Read the code\n[>] #2: Write the test\n\n(1/2 completed)").count(), 2, "{out}");
    assert!(text(&o.stderr).contains("Error: Only one task can be in_progress at a time"), "{}", show(&o));
    assert_eq!(tools.read("count").trim(), "2", "the editor was opened again after the refusal");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1, "/plan never reaches the model");
    let texts: Vec<&str> =
        reqs[0].body["messages"][0]["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect();
    assert_eq!(
        texts,
        [
            "<plan-edit>The user changed the plan. It is now:\n[x] #1: Read the code\n[>] #2: Write the test\n\n(1/2 completed)</plan-edit>",
            "go"
        ]
    );
}

/// Read-only (plan mode's) runs commands only inside the sandbox: where it cannot start they are refused,
/// even with `--yes`, and it is said once; where it can, a write is stopped and never offered outside.
#[tokio::test]
async fn read_only_runs_commands_only_inside_the_sandbox() {
    for available in [false, true] {
        let mock = MockModel::start(vec![
            call("bash", json!({"command": "echo x > written"})),
            call("bash", json!({"command": "echo y > again"})),
            Step::text("done"),
        ])
        .await;
        let ws = TempDir::new("cli-read-only");
        let mut cmd = stepwise(ws.path());
        with_mock(&mut cmd, &mock);
        cmd.env("STEPWISE_SANDBOX", "read-only");
        if !available {
            cmd.env(stepwise::sandbox::UNAVAILABLE_ENV, "1");
        }
        cmd.args(["run", "--yes", "write"]);
        let o = output(&mut cmd).await;
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        assert!(!ws.join("written").exists() && !ws.join("again").exists(), "{}", show(&o));
        let reqs = mock.requests();
        let result = |i: usize| reqs[i].body["messages"].as_array().unwrap().last().unwrap()["content"][0].clone();
        let said = text(&o.stderr).matches("the sandbox cannot start here").count();
        if available {
            assert_eq!(said, 0, "{}", show(&o));
            let r = result(1)["content"].as_str().unwrap().to_string();
            assert!(
                r.contains("read-only: writes only in $TMPDIR")
                    && r.contains("it cannot run outside the sandbox in this mode"),
                "{r}"
            );
        } else {
            assert_eq!(said, 1, "said once: {}", show(&o));
            assert!(text(&o.stderr).contains("in read-only mode shell commands are refused"), "{}", show(&o));
            for i in [1, 2] {
                let r = result(i)["content"].as_str().unwrap().to_string();
                assert!(r.starts_with("Error: read-only: the sandbox cannot start here ("), "{r}");
            }
        }
    }
}
