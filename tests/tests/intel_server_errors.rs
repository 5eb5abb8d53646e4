//! A language server that cannot start says why in its own words, and `stepwise doctor` finds it before a
//! task does (issue 51). The server that cannot start is a fake of rustup's rust-analyzer proxy without the
//! component (tests/intel/rustup_proxy.sh: its one `error:` line, then, with `RUST_BACKTRACE=1`, a backtrace
//! whose last lines say nothing, exit 1), put first on `PATH`; the server that starts is the real pylsp
//! (tests/intel/setup.sh). The model is told why once, then one short line; the tools that could only fail
//! are not offered in the runs after. Doctor starts each server a session would start, with the rights a
//! session's servers would have. The machine's own `rust-analyzer` is checked as it is (see the last test).

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{call, calls};
use serde_json::{json, Value};
use stepwise_tests::intel::{
    block_lines, diagnostics_block, marker_server, pylsp_bin, rustup_proxy_bin, scripts, show, tool_names_in,
    tool_result, Env,
};
use stepwise_tests::lsp_client::stepwise_binary;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;

/// The fake proxy's one line.
const ERROR_LINE: &str =
    "error: Unknown binary 'rust-analyzer' in official toolchain 'stable-x86_64-unknown-linux-gnu'.";
const FIX: &str = "rustup component add rust-analyzer";
/// What only the backtrace holds.
const BACKTRACE: [&str; 3] = ["Stack backtrace", "__libc_start_call_main", "<unknown>"];
const INTEL_TOOLS: [&str; 3] = ["diagnostics", "code_nav", "rename_symbol"];

/// The fake prints what the real proxy prints with `RUST_BACKTRACE=1`: the tests below are about that.
fn the_fake_ends_in_a_backtrace() {
    let o =
        Command::new("sh").arg(scripts().join("rustup_proxy.sh")).env("RUST_BACKTRACE", "1").output().expect("sh runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr.lines().next(), Some(ERROR_LINE));
    assert_eq!(stderr.lines().last(), Some("  15: <unknown>"), "{stderr}");
}

fn lines(block: Option<String>) -> Vec<String> {
    block.map(|b| block_lines(&b)).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_told_once_in_its_words_then_in_one_short_line_and_its_tools_go() {
    the_fake_ends_in_a_backtrace();
    let bin = TempDir::new("intel-proxy-bin");
    let e = Env::new(Some(&rustup_proxy_bin(&bin)));
    let ws = TempDir::new("intel-proxy");
    ws.write("src/main.rs", "fn main() {}\n");
    let mock = MockModel::start(vec![
        calls(&[
            ("write_file", json!({"path": "src/main.rs", "content": "mod lib;\nfn main() {}\n"})),
            ("write_file", json!({"path": "src/lib.rs", "content": "pub fn f() {}\n"})),
        ]),
        call("write_file", json!({"path": "src/main.rs", "content": "fn main() {}\n"})),
        call("code_nav", json!({"action": "symbols", "path": "src/main.rs"})),
        call("diagnostics", json!({})),
        Step::text("done"),
        // The second task: a run after the server is known not to start.
        Step::text("done again"),
    ])
    .await;
    let o = e.chat_with(&mock, &ws, &[("RUST_BACKTRACE", "1")], b"work\nmore\n").await;
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(mock.requests().len(), 6, "{}", show(&o));

    // Told once, in its words (its error line, what fixes it), for both files in one line.
    let told = format!("rust-analyzer could not start: it exited with code 1: {ERROR_LINE}; usually fixed by: {FIX}");
    assert_eq!(lines(diagnostics_block(&mock, 1)), [format!("src/main.rs, src/lib.rs: not checked ({told})")]);
    // The rounds after: one short line; the tool says it too.
    assert_eq!(lines(diagnostics_block(&mock, 2)), ["src/main.rs: not checked (rust-analyzer could not start)"]);
    assert_eq!(tool_result(&mock, 3), "Error: code_nav: rust-analyzer could not start");
    // Every file's diagnostics: not a silence that reads as none.
    assert_eq!(tool_result(&mock, 4), "rust-analyzer could not start; its files are not checked");
    // Never the backtrace, in anything the model was sent.
    for (n, r) in mock.requests().iter().enumerate() {
        let body = r.body.to_string();
        for b in BACKTRACE {
            assert!(!body.contains(b), "request {n} holds the backtrace ({b}): {body}");
        }
    }
    // The tools were offered before the server was tried, and not in the run after it could not start.
    let first = tool_names_in(&mock, 0);
    assert!(INTEL_TOOLS.iter().all(|t| first.iter().any(|n| n == t)), "{first:?}");
    let later = tool_names_in(&mock, 5);
    assert!(later.iter().any(|n| n == "read_file"), "{later:?}");
    assert!(!later.iter().any(|n| INTEL_TOOLS.contains(&n.as_str())), "tools that can only fail: {later:?}");
    // The terminal shows the same line.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains(&told), "{}", show(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_stay_while_another_server_the_workspace_uses_may_answer() {
    let bin = TempDir::new("intel-proxy-other-bin");
    let e = Env::new(Some(&rustup_proxy_bin(&bin)));
    // The workspace's Python files have a server that starts (a fake that publishes nothing).
    e.fake_server("fake", "crash_server.py", &["--nul"]);
    let ws = TempDir::new("intel-proxy-other");
    ws.write("src/main.rs", "fn main() {}\n");
    ws.write("m.py", "x = 1\n");
    let mock = MockModel::start(vec![
        call("write_file", json!({"path": "src/main.rs", "content": "fn main() { }\n"})),
        Step::text("done"),
        Step::text("done again"),
    ])
    .await;
    let o = e.chat_with(&mock, &ws, &[("RUST_BACKTRACE", "1")], b"work\nmore\n").await;
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(mock.requests().len(), 3, "{}", show(&o));
    let told = lines(diagnostics_block(&mock, 1));
    assert!(
        told.len() == 1 && told[0].starts_with("src/main.rs: not checked (rust-analyzer could not start: "),
        "{told:?}"
    );
    let later = tool_names_in(&mock, 2);
    assert!(INTEL_TOOLS.iter().all(|t| later.iter().any(|n| n == t)), "{later:?}");
}

/// `stepwise doctor ARGS` in `ws` with `e`'s PATH, state and config folders, and `vars`.
fn doctor(e: &Env, ws: &TempDir, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(stepwise_binary(false));
    cmd.env_clear().current_dir(ws.path()).stdin(Stdio::null());
    for keep in ["HOME", "TMPDIR", "LANG"] {
        if let Ok(v) = std::env::var(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("PATH", &e.path)
        .env("STEPWISE_STATE_DIR", e.state.path())
        .env("XDG_CONFIG_HOME", e.config.path())
        .envs(vars.iter().copied())
        .arg("doctor")
        .args(args);
    let o = cmd.output().expect("stepwise doctor runs");
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", show(&o));
    o
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", show(o)))
}

/// The entry of `languageServers` named `name`.
fn server<'a>(report: &'a Value, name: &str) -> &'a Value {
    let all = report["languageServers"].as_array().unwrap_or_else(|| panic!("{report}"));
    all.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no {name} in {report}"))
}

/// The text's lines under the server line holding `head` (indented past the values' column, where the next
/// server's line is not).
fn under(text: &str, head: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| l.contains(head)).unwrap_or_else(|| panic!("no {head} in\n{text}"));
    let indented = " ".repeat(13);
    lines[at + 1..].iter().take_while(|l| l.starts_with(&indented)).map(|l| l.trim().to_string()).collect()
}

#[test]
fn doctor_starts_the_servers_a_session_would_and_says_why_one_does_not_in_its_words() {
    the_fake_ends_in_a_backtrace();
    let pylsp = pylsp_bin();
    let bin = TempDir::new("doctor-proxy-bin");
    let proxy = rustup_proxy_bin(&bin);
    let mut e = Env::new(None);
    e.path = format!("{}:{}:/usr/bin:/bin", proxy.display(), pylsp.display());
    // A server of the user's for files the workspace has none of: listed, not started.
    let marker = e.state.join("zig-started");
    let servers = json!({"servers": {"zls": {"command": marker_server(&marker), "extensions": ["zig"]}}});
    e.config.write("stepwise/language-servers.json", &servers.to_string());
    let ws = TempDir::new("doctor-servers");
    ws.write("m.py", "x = 1\n");
    ws.write("src/main.rs", "fn main() {}\n");
    let rust_backtrace = [("RUST_BACKTRACE", "1")];

    let o = doctor(&e, &ws, &rust_backtrace, &[]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(under(&text, "pylsp (.py, .pyi)"), ["starts (it answered initialize)"], "{text}");
    assert_eq!(
        under(&text, "rust-analyzer (.rs)"),
        [format!("does not start: it exited with code 1: {ERROR_LINE}"), format!("usually fixed by: {FIX}")],
        "{text}"
    );
    assert_eq!(under(&text, "zls (.zig)"), ["not used: no file of this workspace is its"], "{text}");
    for b in BACKTRACE {
        assert!(!text.contains(b), "{text}");
    }

    let r = json_of(&doctor(&e, &ws, &rust_backtrace, &["--json"]));
    assert_eq!(server(&r, "pylsp")["used"], true);
    assert_eq!(server(&r, "pylsp")["starts"], true);
    let ra = server(&r, "rust-analyzer");
    assert_eq!((&ra["used"], &ra["starts"]), (&json!(true), &json!(false)), "{ra}");
    assert_eq!(ra["reason"], format!("it exited with code 1: {ERROR_LINE}"));
    assert_eq!(ra["fix"], FIX);
    assert_eq!(server(&r, "zls")["used"], false);
    assert_eq!(server(&r, "zls").get("starts"), None);
    assert!(!marker.exists(), "a server no file of the workspace needs was started");

    // An editor whose own servers answer asks for none to be started.
    let r = json_of(&doctor(&e, &ws, &rust_backtrace, &["--json", "--no-language-servers"]));
    assert_eq!(server(&r, "pylsp").get("used"), None, "{r}");
    assert_eq!(server(&r, "rust-analyzer").get("starts"), None, "{r}");
}

#[test]
fn doctor_starts_a_server_with_no_more_rights_than_a_session_gives_it() {
    let e = Env::new(None);
    // The server touches a file outside the workspace as it starts.
    let marker = e.state.join("started");
    e.server("fake", &marker_server(&marker));
    let ws = TempDir::new("doctor-rights");
    ws.write("m.py", "x = 1\n");

    // In the sandbox, where this machine has one: it starts, and could not write outside the workspace.
    let r = json_of(&doctor(&e, &ws, &[], &["--json"]));
    if r["sandbox"]["available"] == true {
        assert_eq!(server(&r, "fake")["starts"], true, "{r}");
        assert!(!marker.exists(), "the server ran outside the sandbox: {r}");
    } else {
        // No sandbox here (the machine's fact, said): then it is the untrusted case below.
        eprintln!("no sandbox on this machine: {}", r["sandbox"]);
        assert_eq!(server(&r, "fake")["starts"], Value::Null, "{r}");
    }

    // Without the sandbox, in a workspace not trusted: not started, and why.
    let off = [("STEPWISE_SANDBOX", "off")];
    let r = json_of(&doctor(&e, &ws, &off, &["--json"]));
    let fake = server(&r, "fake");
    assert_eq!(fake["starts"], Value::Null, "{r}");
    let name = ws.path().file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        fake["reason"],
        format!("not started: no sandbox holds language servers here and {name} is not trusted (a session asks whether to trust it)")
    );
    let text = String::from_utf8_lossy(&doctor(&e, &ws, &off, &[]).stdout).into_owned();
    assert!(text.contains(fake["reason"].as_str().unwrap_or("-")), "{text}");
    assert!(!marker.exists(), "a server started unconfined in a workspace not trusted");

    // Trusted before (as a session remembers it): started plainly.
    trust(e.state.path(), ws.path());
    let r = json_of(&doctor(&e, &ws, &off, &["--json"]));
    assert_eq!(server(&r, "fake")["starts"], true, "{r}");
    assert!(marker.exists(), "the trusted server did not start with the user's rights");
}

fn trust(state: &Path, ws: &Path) {
    let root = std::fs::canonicalize(ws).unwrap();
    std::fs::write(state.join("trusted-language-servers"), format!("{}\n", root.display())).unwrap();
}

/// The machine's own `rust-analyzer`, as doctor finds it. Which case holds is the machine's fact, read
/// from `rust-analyzer --version` and said on stderr; each case is asserted: absent, doctor lists none; a
/// working one starts; rustup's proxy without the component (this repository's CI machine, with rustup)
/// does not, and doctor says its line and the fix. Any other failure fails the test.
#[test]
fn the_machines_rust_analyzer_as_doctor_finds_it() {
    let e = Env::new(None);
    let ws = TempDir::new("doctor-real-ra");
    ws.write("src/main.rs", "fn main() {}\n");
    let version =
        Command::new("rust-analyzer").arg("--version").env("PATH", &e.path).env("RUST_BACKTRACE", "1").output();
    let r = json_of(&doctor(&e, &ws, &[("RUST_BACKTRACE", "1")], &["--json"]));
    let listed = r["languageServers"].as_array().and_then(|a| a.iter().find(|s| s["name"] == "rust-analyzer"));
    match version {
        Err(err) => {
            eprintln!("no rust-analyzer on PATH here ({err}): doctor lists none");
            assert_eq!(listed, None, "{r}");
        }
        Ok(o) if o.status.success() => {
            eprintln!("a working rust-analyzer here: {}", String::from_utf8_lossy(&o.stdout).trim());
            assert_eq!(listed.map(|s| &s["starts"]), Some(&json!(true)), "{r}");
        }
        Ok(o) => {
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            let line = stderr.lines().next().unwrap_or_default();
            assert!(
                line.starts_with("error: Unknown binary 'rust-analyzer' in official toolchain"),
                "rust-analyzer --version failed in a way this test does not know: {stderr}"
            );
            eprintln!("rustup's proxy without the component here: {line}");
            let ra = listed.unwrap_or_else(|| panic!("{r}"));
            assert_eq!(ra["starts"], false, "{ra}");
            assert_eq!(ra["reason"], format!("it exited with code {}: {line}", o.status.code().unwrap_or(-1)));
            assert_eq!(ra["fix"], FIX);
        }
    }
}
