//! `stepwise chat`'s `/review` and `/undo PATH [HUNK...]` on a real pseudo-terminal (issue 28): each
//! changed file as a unified diff, coloured on a terminal unless `NO_COLOR`; undo of a created file and
//! of one hunk among three, on disk.

use std::process::Child;
use std::time::Duration;

use serde_json::json;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::pty::Pty;
use stepwise_tests::terminal::{exit_code, Stepwise};
use stepwise_tests::TempDir;

const T: Duration = Duration::from_secs(20);
const CHAT: &str = "stepwise >> ";

/// `stepwise chat --yes` on a terminal, with `env`.
fn chat(ws: &TempDir, mock: &MockModel, env: &[(&str, &str)]) -> (Pty, Child) {
    Stepwise::with_model(mock).envs(env).args(["chat", "--yes"]).workspace(ws).on_pty(T)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_reviews_changes_as_a_diff_and_undoes_a_file_and_a_hunk() {
    for no_color in [false, true] {
        let mock = MockModel::start(vec![
            Step::tool(
                "write_file",
                json!({"path": "a.txt", "content": "1\nTWO\n3\n4\n5\n6\nSEVEN\n8\n9\n10\n11\n12\nTHIRTEEN\n"}),
            ),
            Step::tool("write_file", json!({"path": "made.txt", "content": "fresh\n"})),
            Step::text("Changed."),
        ])
        .await;
        let ws = TempDir::new("cli-review");
        ws.write("a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n");
        let env: &[(&str, &str)] = if no_color { &[("NO_COLOR", "1")] } else { &[("TERM", "xterm")] };
        let (mut pty, child) = chat(&ws, &mock, env);
        pty.type_line("change things");
        let run = pty.expect("Changed.");
        pty.expect(CHAT);
        // The run's lines take colour as the review does (decided once for the session's stdout).
        assert_eq!(run.contains("\x1b[1m> write_file"), !no_color, "{run:?}");

        pty.type_line("/review");
        let review = pty.expect("2 files changed; /undo PATH [HUNK...] puts changes back");
        pty.expect(CHAT);
        let shown = pty_lines(&review);
        if no_color {
            assert!(!review.contains('\x1b'), "NO_COLOR, yet escape codes: {review:?}");
            for want in [
                "--- a/a.txt",
                "+++ b/a.txt",
                "@@ -1,5 +1,5 @@ hunk 0",
                "-2",
                "+TWO",
                "@@ -4,7 +4,7 @@ hunk 1",
                "-7",
                "+SEVEN",
                "@@ -10,4 +10,4 @@ hunk 2",
                "--- /dev/null",
                "+++ b/made.txt",
                "@@ -0,0 +1,1 @@ hunk 0",
                "+fresh",
            ] {
                assert!(shown.iter().any(|l| l == want), "no line {want:?} in {shown:#?}");
            }
        } else {
            assert!(review.contains("\x1b[31m-2\x1b[0m") && review.contains("\x1b[32m+TWO\x1b[0m"), "{review:?}");
            assert!(review.contains("\x1b[36m@@ -1,5 +1,5 @@ hunk 0\x1b[0m"), "{review:?}");
        }

        pty.type_line("/undo made.txt");
        pty.expect("Undone: made.txt");
        assert!(!ws.join("made.txt").exists());
        pty.type_line("/undo a.txt 1");
        pty.expect("Undone: a.txt");
        assert_eq!(ws.read("a.txt"), "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nTHIRTEEN\n");
        pty.type_line("/undo a.txt 7");
        pty.expect("a.txt has 2 hunks; there is no hunk 7");

        // Changed by someone else since: left alone.
        ws.write("a.txt", "mine\n");
        pty.type_line("/undo a.txt");
        pty.expect("a.txt was changed since the agent changed it; left alone");
        assert_eq!(ws.read("a.txt"), "mine\n");

        pty.type_line("q");
        assert_eq!(exit_code(child, T), 0);
    }
}

/// The terminal's lines without carriage returns.
fn pty_lines(s: &str) -> Vec<String> {
    s.lines().map(|l| l.trim_end_matches('\r').to_string()).collect()
}
