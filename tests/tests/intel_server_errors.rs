//! A language server that cannot start says why in its own words, and `stepwise doctor` finds it before a
//! task does (issue 51). The server that cannot start is a fake of rustup's rust-analyzer proxy without the
//! component (tests/intel/rustup_proxy.sh: its one `error:` line, then, with `RUST_BACKTRACE=1`, a backtrace
//! whose last lines say nothing, exit 1), put first on `PATH`; the server that starts is the real pylsp
//! (tests/intel/setup.sh). The model is told why once, then one short line; the tools that could only fail
//! are not offered in the runs after.

mod common;

use std::process::Command;

use common::{call, calls};
use serde_json::json;
use stepwise_tests::intel::{
    block_lines, diagnostics_block, rustup_proxy_bin, scripts, show, tool_names_in, tool_result, Env,
};
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
