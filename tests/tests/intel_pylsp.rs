//! Code intelligence against a real language server (pylsp with pyflakes, installed from PyPI by
//! tests/intel/setup.sh into ~/.cache/stepwise-tools/intel), through `stepwise run` and the scripted mock
//! model: what the model is told after an edit, and navigation and rename through the server. A server
//! that never answers and one that crashes are tiny fake servers (tests/intel/*.py); the other faults are
//! in intel_faults.rs. A shell command's change to a file pylsp never saw is compared with its text from
//! before, which the checkpoints of `stepwise chat` kept.

mod common;

use common::{call, calls};
use serde_json::json;
use stepwise_tests::intel::{
    block_lines, diagnostics_block, pylsp_bin, show, tool_names, tool_result, user_texts, Env,
};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::sent::intel_tools;
use stepwise_tests::TempDir;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_error_reaches_the_model_an_old_one_does_not_and_a_fix_leaves_no_block() {
    let bin = pylsp_bin();
    let ws = TempDir::new("intel-py");
    // An error present before the agent starts: it is never reported as new.
    ws.write("m.py", "import os\n\nx = undefined_old\n");
    let mock = MockModel::start(vec![
        // Round 1: lines inserted above the old error, and a new error below it.
        call("edit_file", json!({"path": "m.py", "old_text": "import os\n", "new_text": "import os\n# one\n# two\n"})),
        call("edit_file", json!({"path": "m.py", "old_text": "x = undefined_old\n", "new_text": "x = undefined_old\ny = undefined_new\n"})),
        // Round 3: the new error fixed.
        call("edit_file", json!({"path": "m.py", "old_text": "y = undefined_new\n", "new_text": "y = 1\n"})),
        // Round 4: a change to a file no server serves.
        call("write_file", json!({"path": "notes.md", "content": "hello\n"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(Some(&bin));
    let o = e.run(&mock, &ws, &[], "work").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(tool_names(&mock).contains(&"code_nav".to_string()), "a source exists: the tools are offered");

    // After round 1 (lines moved above the old error): nothing new, no block.
    assert_eq!(diagnostics_block(&mock, 1), None, "{:?}\n{}", user_texts(&mock, 1), show(&o));
    // After round 2: only the new error, with file, line and column.
    let block = diagnostics_block(&mock, 2).unwrap_or_else(|| panic!("a block after round 2\n{}", show(&o)));
    assert_eq!(block_lines(&block), ["m.py:6:5: error: undefined name 'undefined_new' (pyflakes)"], "{block}");
    // The fix: no block. A markdown file: nothing to check, no block.
    assert_eq!(diagnostics_block(&mock, 3), None);
    assert_eq!(diagnostics_block(&mock, 4), None);
    // The terminal shows the line under the call.
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("m.py:6:5: error: undefined name 'undefined_new'"),
        "{}",
        show(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn definition_references_and_rename_through_the_server_and_a_rewind_undoes_the_rename() {
    let bin = pylsp_bin();
    let ws = TempDir::new("intel-nav");
    ws.write("lib.py", "def greet(name):\n    return 'hi ' + name\n");
    ws.write("app.py", "from lib import greet\n\nprint(greet('a'))\nprint(greet('b'))\n");
    let mock = MockModel::start(vec![
        call("code_nav", json!({"action": "definition", "path": "app.py", "symbol": "greet", "line": 3})),
        call("code_nav", json!({"action": "references", "path": "lib.py", "symbol": "greet"})),
        call("code_nav", json!({"action": "symbols", "path": "lib.py"})),
        call("rename_symbol", json!({"path": "lib.py", "symbol": "greet", "new_name": "welcome"})),
        call("code_nav", json!({"action": "definition", "path": "app.py", "symbol": "nothing_here"})),
        Step::text("done"),
    ])
    .await;
    // One chat session: the task, then a rewind to the checkpoint before the rename's round.
    let e = Env::new(Some(&bin));
    let o = e.chat(&mock, &ws, b"navigate\n/rewind 4 files\n").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(tool_result(&mock, 1), "lib.py:1: def greet(name):", "{}", show(&o));
    let refs = tool_result(&mock, 2);
    for want in [
        "lib.py:1: def greet(name):",
        "app.py:1: from lib import greet",
        "app.py:3: print(greet('a'))",
        "app.py:4: print(greet('b'))",
    ] {
        assert!(refs.lines().any(|l| l == want), "{want} in {refs}");
    }
    assert!(tool_result(&mock, 3).contains("greet (function) line 1"), "{}", tool_result(&mock, 3));
    // pylsp's rename (jedi) is one whole-file edit per file; the count is the server's edits.
    let renamed = tool_result(&mock, 4);
    assert!(renamed.starts_with("Renamed 'greet' to 'welcome' in 2 files: app.py ("), "{renamed}");
    assert!(renamed.contains(", lib.py ("), "{renamed}");
    // The rename was applied: the next request's code_nav read the renamed file.
    assert_eq!(tool_result(&mock, 5), "Error: app.py: 'nothing_here' is not in the file");
    // The rename is the agent's own edit: the rewind puts both files back.
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Rewound to checkpoint 4"), "{}", show(&o));
    assert_eq!(
        std::fs::read_to_string(ws.join("lib.py")).unwrap(),
        "def greet(name):\n    return 'hi ' + name\n",
        "{}",
        show(&o)
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("app.py")).unwrap(),
        "from lib import greet\n\nprint(greet('a'))\nprint(greet('b'))\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_reports_gives_not_checked_within_the_deadline() {
    let ws = TempDir::new("intel-silent");
    ws.write("m.py", "x = 1\n");
    let mock =
        MockModel::start(vec![call("write_file", json!({"path": "m.py", "content": "x = 2\n"})), Step::text("done")])
            .await;
    let e = Env::new(None);
    e.fake_server("silent", "silent_server.py", &[]);
    let o = e.run(&mock, &ws, &[("STEPWISE_DIAGNOSTICS_WAIT_MS", "1500")], "work").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a not checked line\n{}", show(&o)));
    let line = block.lines().nth(1).unwrap();
    assert!(line.starts_with("m.py: not checked (silent did not answer in "), "{block}");
    let ms: u64 = line
        .trim_start_matches("m.py: not checked (silent did not answer in ")
        .trim_end_matches(" ms)")
        .parse()
        .unwrap();
    // The wait the engine reports (not the test's clock, which a loaded machine stretches): it waited out
    // the deadline it was given, the server's start included, and never past the contract's first-wait cap.
    assert!((1500..10_000).contains(&ms), "{ms} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_reported_and_the_server_restarted_once() {
    let ws = TempDir::new("intel-crash");
    ws.write("m.py", "x = 1\n");
    let mock = MockModel::start(vec![
        call("write_file", json!({"path": "m.py", "content": "x = 2\n"})),
        call("write_file", json!({"path": "m.py", "content": "x = 3\n"})),
        call("write_file", json!({"path": "m.py", "content": "x = 4\n"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    e.fake_server("crashy", "crash_server.py", &[]);
    let o = e.run(&mock, &ws, &[("STEPWISE_DIAGNOSTICS_WAIT_MS", "3000")], "work").await;
    assert_eq!(o.status.code(), Some(0), "the session goes on\n{}", show(&o));
    let blocks: Vec<String> = (1..4).map(|n| diagnostics_block(&mock, n).unwrap_or_default()).collect();
    let all = blocks.join("\n");
    assert!(all.contains("crashy stopped unexpectedly"), "{all}\n{}", show(&o));
    assert!(all.contains("restarted"), "{all}");
    assert!(all.contains("m.py: not checked (crashy stopped again"), "{all}");
    assert!(all.contains("it is not restarted in this session)"), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_server_no_tool_is_offered_and_a_broken_one_is_a_clear_line() {
    let ws = TempDir::new("intel-none");
    ws.write("m.py", "x = 1\n");
    // No server at all (PATH without any): none of the tools.
    let mock = MockModel::start(vec![Step::text("done")]).await;
    let mut e = Env::new(None);
    e.path = "/usr/bin:/bin".into();
    let o = e.run(&mock, &ws, &[], "work").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let names = tool_names(&mock);
    assert!(!names.iter().any(|n| intel_tools().contains(&n.as_str())), "{names:?}");

    // A server that prints an error and exits (as rustup's rust-analyzer proxy without the component).
    let mock = MockModel::start(vec![
        calls(&[("write_file", json!({"path": "m.py", "content": "x = 2\n"}))]),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(None);
    let servers = json!({"servers": {"broken": {"command": ["sh", "-c", "echo 'error: the component is not installed' >&2; exit 1"], "extensions": ["py"]}}});
    e.config.write("stepwise/language-servers.json", &servers.to_string());
    let o = e.run(&mock, &ws, &[], "work").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a line\n{}", show(&o)));
    assert!(
        block.contains(
            "m.py: not checked (broken could not start: it exited with code 1: error: the component is not installed)"
        ),
        "{block}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_made_by_a_shell_command_reaches_the_server_in_a_one_shot_run() {
    // `stepwise run` keeps no checkpoints, so no scan says what a command changed: the files the server
    // was fed are looked at again after each command.
    let bin = pylsp_bin();
    let ws = TempDir::new("intel-shell-fix");
    ws.write("m.py", "x = 1\n");
    let mock = MockModel::start(vec![
        call("edit_file", json!({"path": "m.py", "old_text": "x = 1\n", "new_text": "x = 1\ny = undefined_new\n"})),
        call("bash", json!({"command": "sed -i 's/undefined_new/2/' m.py"})),
        call("diagnostics", json!({"paths": ["m.py"]})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(Some(&bin));
    let o = e.run(&mock, &ws, &[], "work").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a block after the edit\n{}", show(&o)));
    assert_eq!(block_lines(&block), ["m.py:2:5: error: undefined name 'undefined_new' (pyflakes)"]);
    assert_eq!(std::fs::read_to_string(ws.join("m.py")).unwrap(), "x = 1\ny = 2\n");
    assert_eq!(diagnostics_block(&mock, 2), None, "{}", show(&o));
    assert_eq!(tool_result(&mock, 3), "No diagnostics.", "the server still has the text before the command");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_commands_new_error_in_a_file_pylsp_never_saw_is_new_and_the_old_one_is_not() {
    // `chat` keeps checkpoints: the text m.py had before the command reaches pylsp first.
    let bin = pylsp_bin();
    let ws = TempDir::new("intel-py-sed");
    ws.write("m.py", "x = undefined_old\ny = 1\n");
    let mock = MockModel::start(vec![
        call("bash", json!({"command": "sed -i 's/y = 1/y = undefined_new/' m.py"})),
        Step::text("done"),
    ])
    .await;
    let e = Env::new(Some(&bin));
    let o = e.chat(&mock, &ws, b"work\n").await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let block = diagnostics_block(&mock, 1).unwrap_or_else(|| panic!("a block after the command\n{}", show(&o)));
    assert_eq!(block_lines(&block), ["m.py:2:5: error: undefined name 'undefined_new' (pyflakes)"], "{block}");
}
