//! Code intelligence against language servers that misbehave, through `stepwise run` and the scripted mock
//! model: a server that never answers `initialize`, one that floods diagnostics, one whose answers point
//! past the end of the file or outside the workspace, and a binary file. Each is one clear line to the
//! model and the session goes on. The fake servers are tests/intel/*_server.py (framing in lsp_frame.py);
//! a server that prints an error and exits, one that never publishes and one that crashes are in
//! intel_pylsp.rs.

mod common;

use common::{call, calls};
use serde_json::json;
use stepwise_tests::intel::{block_lines, diagnostics_block, show, tool_result, Env};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;

/// The contents of /etc/passwd's first line, which no answer may carry (it is never read).
fn passwd_head() -> String {
    std::fs::read_to_string("/etc/passwd").unwrap_or_default().lines().next().unwrap_or("root:x:0:0").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_initialize_is_one_line_and_the_session_goes_on() {
    let ws = TempDir::new("intel-hang");
    ws.write("m.py", "x = 1\n");
    let mock = MockModel::start(vec![
        call("write_file", json!({"path": "m.py", "content": "x = 2\n"})),
        call("write_file", json!({"path": "m.py", "content": "x = 3\n"})),
        call("read_file", json!({"path": "m.py"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    // Reads its stdin never, writes nothing: `initialize` is never answered.
    e.server("hang", &["sleep", "600"]);
    let o = e.run(&mock, &ws, &[("STEPWISE_DIAGNOSTICS_WAIT_MS", "1000")], "work").await;
    assert_eq!(o.status.code(), Some(0), "the session goes on\n{}", show(&o));
    let first = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a line after round 1\n{}", show(&o)));
    let lines = block_lines(&first);
    let said = lines[0]
        .strip_prefix("m.py: not checked (hang could not start: no answer in ")
        .unwrap_or_else(|| panic!("{first}"));
    // The start is bounded by the wait it was given (1000 ms, less what the round had already waited).
    let ms: u64 = said.trim_end_matches(" ms)").parse().unwrap_or_else(|_| panic!("{first}"));
    assert!((1..=1000).contains(&ms), "{first}");
    assert_eq!(lines.len(), 1, "{first}");
    // Not started again: at once, in the next round, one short line (the model was told why).
    let second = diagnostics_block(&mock, 2).unwrap_or_else(|| panic!("a line after round 2\n{}", show(&o)));
    assert_eq!(block_lines(&second), ["m.py: not checked (hang could not start)"]);
    // The work goes on: the file holds what the agent wrote, a read reads it.
    assert!(tool_result(&mock, 3).contains("x = 3"), "{}", tool_result(&mock, 3));
    assert_eq!(mock.requests().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_floods_diagnostics_is_capped_and_the_cap_is_said() {
    let ws = TempDir::new("intel-flood");
    ws.write("m.py", "x = 1\n");
    let mock = MockModel::start(vec![
        call("write_file", json!({"path": "m.py", "content": "x = 2\n"})),
        // The first line unchanged: the same thousands again, none of them new.
        call("write_file", json!({"path": "m.py", "content": "x = 2\ny = 3\n"})),
        call("diagnostics", json!({"paths": ["m.py"]})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    e.fake_server("flood", "flood_server.py", &["5000"]);
    let o = e.run(&mock, &ws, &[("STEPWISE_DIAGNOSTICS_WAIT_MS", "8000")], "work").await;
    assert_eq!(o.status.code(), Some(0), "the session goes on\n{}", show(&o));

    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a block after round 1\n{}", show(&o)));
    let lines = block_lines(&block);
    // 50 shown, the rest of the 200 read counted, and the 4,800 never read said.
    assert_eq!(lines.len(), 52, "{block}");
    for (i, l) in lines[..50].iter().enumerate() {
        assert_eq!(l, &format!("m.py:1:1: error: flood error {i} (fake)"));
    }
    assert_eq!(lines[50], "(150 more errors not shown; at most 50 are shown)");
    assert_eq!(lines[51], "(m.py: 5000 diagnostics reported; only the first 200 were read)");

    // Nothing new among those read; what could not be read is still said, never a silence.
    let again = diagnostics_block(&mock, 2).unwrap_or_else(|| panic!("a block after round 2\n{}", show(&o)));
    assert_eq!(block_lines(&again), ["(m.py: 5000 diagnostics reported; only the first 200 were read)"]);

    // The tool: capped the same way.
    let listed = tool_result(&mock, 3);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 52, "{listed}");
    assert_eq!(lines[50], "(150 more diagnostics not shown; at most 50 are shown)");
    assert_eq!(lines[51], "(m.py: 5000 diagnostics reported; only the first 200 were read)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_past_the_end_and_places_outside_the_workspace_are_said_never_read() {
    let ws = TempDir::new("intel-odd");
    ws.write("m.py", "x = 1\n");
    let mock = MockModel::start(vec![
        call("write_file", json!({"path": "m.py", "content": "x = 2\n"})),
        call("code_nav", json!({"action": "definition", "path": "m.py", "symbol": "x"})),
        call("diagnostics", json!({})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    e.fake_server("odd", "odd_server.py", &[]);
    let o = e.run(&mock, &ws, &[("STEPWISE_DIAGNOSTICS_WAIT_MS", "8000")], "work").await;
    assert_eq!(o.status.code(), Some(0), "the session goes on\n{}", show(&o));
    let secret = passwd_head();

    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a block after round 1\n{}", show(&o)));
    assert_eq!(
        block_lines(&block),
        [
            "m.py:41:3 (a position past the end of the file): error: far error (fake)",
            "m.py:1:901 (a position past the end of the file): error: wide error (fake)",
            "(1 errors in files outside the workspace not shown)",
        ],
        "{block}"
    );

    let root = ws.path().canonicalize().unwrap();
    let defs = tool_result(&mock, 2);
    let lines: Vec<&str> = defs.lines().collect();
    assert_eq!(lines[0], "m.py:100: (a position past the end of the file)", "{defs}");
    assert_eq!(lines[1], "(outside the workspace) file:///etc/passwd:1", "{defs}");
    assert!(lines[2].starts_with("(outside the workspace) file://") && lines[2].ends_with("/etc/passwd:1"), "{defs}");
    assert_eq!(lines.len(), 3, "{defs}");
    // Never shown as a workspace path, never read.
    assert!(!defs.contains(&secret) && !block.contains(&secret), "{defs}");
    assert!(!defs.lines().any(|l| l.starts_with("etc/") || l.starts_with("../")), "{defs}");

    let all = tool_result(&mock, 3);
    assert!(all.lines().any(|l| l == "(1 diagnostics in files outside the workspace not shown)"), "{all}");
    assert!(!all.contains("passwd") && !all.contains(&secret), "{all}");
    assert!(!all.contains(&*root.to_string_lossy()), "workspace paths are relative: {all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_file_is_one_clear_line_and_never_fed_to_a_server() {
    let ws = TempDir::new("intel-binary");
    ws.write("m.py", "x = 1\n");
    std::fs::write(ws.join("blob.py"), b"\x7fELF\x02\x01\x00\x00binary\x00\xff").unwrap();
    let mock = MockModel::start(vec![
        call("diagnostics", json!({"paths": ["blob.py"]})),
        call("code_nav", json!({"action": "symbols", "path": "blob.py"})),
        // A shell command writes a binary .py: no block, no server fed with it.
        calls(&[("bash", json!({"command": "printf 'a\\000b' > gen.py"}))]),
        call("write_file", json!({"path": "m.py", "content": "x = 2\n"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    // A server that publishes for what it is fed, and exits at once when fed a NUL byte.
    e.fake_server("fussy", "crash_server.py", &["--nul"]);
    let o = e.run(&mock, &ws, &[("STEPWISE_DIAGNOSTICS_WAIT_MS", "8000")], "work").await;
    assert_eq!(o.status.code(), Some(0), "the session goes on\n{}", show(&o));
    assert_eq!(tool_result(&mock, 1), "blob.py: not checked (it is a binary file)");
    assert_eq!(tool_result(&mock, 2), "Error: code_nav: it is a binary file");
    assert_eq!(diagnostics_block(&mock, 3), None, "{}", show(&o));
    // The server still serves the workspace's text (it was never fed the binary).
    assert_eq!(diagnostics_block(&mock, 4), None, "{}", show(&o));
}
