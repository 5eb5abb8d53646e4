//! Checkpoints and rewind in `stepwise chat` (the real binary, against the mock model): `/checkpoints`
//! lists a checkpoint per round with the files changed since, `/rewind ID` puts back files changed by
//! the file tools and by shell commands, and the conversation the next task continues.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::call;
use serde_json::json;
use stepwise_tests::lsp_client::stepwise_binary;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn chat_lists_checkpoints_and_rewinds_files_and_the_conversation() {
    let mock = MockModel::start(vec![
        // Task one: a write, then a command that creates, modifies and deletes in folders.
        call("write_file", json!({"path": "notes.txt", "content": "v1\n"})),
        call("bash", json!({"command": "mkdir -p out/deep && echo built > out/deep/a.txt && rm old/gone.txt && echo changed > keep.txt"})),
        Step::text("Done one."),
        // Task two: another write.
        call("write_file", json!({"path": "notes.txt", "content": "v2\n"})),
        Step::text("Done two."),
        // Task three, after the rewind.
        Step::text("Third."),
    ])
    .await;
    let ws = TempDir::new("cli-cp");
    ws.write("old/gone.txt", "old\n");
    ws.write("keep.txt", "kept\n");
    let lines = "task one\ntask two\n/checkpoints\n/rewind 4\ntask three\n/rewind 99\n/rewind 1 files\n/checkpoints\n";

    let mut cmd = tokio::process::Command::new(stepwise_binary(false));
    cmd.env_clear();
    for keep in ["PATH", "HOME", "TMPDIR", "LANG"] {
        if let Ok(v) = std::env::var(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "k")
        .env("MODEL_ID", "m")
        .env("STEPWISE_PROMPT_CACHE", "off")
        .env("STEPWISE_SANDBOX", "off")
        .current_dir(ws.path())
        .args(["chat", "--yes"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(lines.as_bytes()).await.unwrap();
    drop(stdin);
    let o = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.unwrap().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let show = format!("--- stdout\n{out}\n--- stderr\n{err}");
    assert_eq!(o.status.code(), Some(0), "{show}");

    // Five checkpoints: rounds 1-3 of task one, rounds 1-2 of task two; files changed after each.
    let listed: Vec<&str> =
        out.lines().filter(|l| l.contains("  round ")).map(|l| l.trim_start_matches("stepwise >> ")).collect();
    assert_eq!(listed.len(), 5, "{show}");
    assert!(listed[0].starts_with("1  round 1 of \"task one\""), "{show}");
    assert!(listed[0].ends_with("files changed since: keep.txt, notes.txt, old/gone.txt, out/deep/a.txt"), "{show}");
    assert!(
        listed[2].starts_with("3  round 3 of \"task one\"") && listed[2].ends_with("files changed since: notes.txt")
    );
    assert!(
        listed[3].starts_with("4  round 1 of \"task two\"") && listed[3].ends_with("files changed since: notes.txt")
    );
    assert!(listed[4].starts_with("5  round 2 of \"task two\"") && listed[4].ends_with("no files changed since"));

    // `/rewind 4`: task two undone, files and conversation.
    assert!(
        out.contains("Rewound to checkpoint 4; put back: notes.txt; the conversation and plan are as they were."),
        "{show}"
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6, "{show}");
    let sent = reqs[5].body["messages"].as_array().unwrap().clone();
    let texts: Vec<String> = sent.iter().map(|m| m["content"].to_string()).collect();
    assert!(texts.iter().any(|t| t.contains("task one")) && texts.iter().any(|t| t.contains("Done one.")), "{show}");
    assert!(!texts.iter().any(|t| t.contains("task two") || t.contains("v2")), "task two is gone: {texts:?}");
    assert!(texts.last().unwrap().contains("task three"));

    // An unknown id is said; `/rewind 1 files` undoes task one on disk.
    assert!(err.contains("stepwise: No checkpoint 99"), "{show}");
    assert!(
        out.contains("Rewound to checkpoint 1; put back: keep.txt, notes.txt, old/gone.txt, out/deep/a.txt."),
        "{show}"
    );
    assert!(!ws.join("notes.txt").exists() && !ws.join("out").exists(), "{show}");
    assert_eq!((ws.read("old/gone.txt"), ws.read("keep.txt")), ("old\n".into(), "kept\n".into()));
    let last = out.lines().rfind(|l| l.contains("checkpoint")).unwrap_or_default();
    assert_eq!(last, "stepwise >> No checkpoints.", "the rewind dropped them all\n{show}");
}
