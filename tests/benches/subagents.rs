//! What a child agent (`task`) adds over the same work done inline: the harness's own time, the model
//! answering at once (in-process replay, `Llm::replay`: no HTTP), for 28 rounds of read_file / edit_file /
//! todo calls done by the parent itself, and the same 28 rounds done by one child (the parent's `task` round,
//! the child's rounds, its closing text, the parent's closing text).
//!
//! `cargo bench -p stepwise-tests --bench subagents`
//!
//! Printed: the median of each (whole run), the difference, and the difference less the two rounds the
//! child's run has more (the parent's `task` round and the child's own closing answer) at the inline run's
//! median per round: what a child costs beyond its own rounds (goal: nothing measurable).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stepwise::agent::{AgentConfig, FinishReason, Session};
use stepwise::events::NoEvents;
use stepwise::host::DiskHost;
use stepwise::llm::{Llm, Replay};
use stepwise::workspace::Workspace;

const ROUNDS: usize = 28;
const ITERS: usize = 31;

fn call(i: usize) -> (&'static str, Value) {
    match i % 3 {
        0 => ("todo", json!({"items": [{"id": "1", "text": format!("Step {i}"), "status": "in_progress"}]})),
        1 => ("read_file", json!({"path": "big.txt", "limit": 40})),
        _ => (
            "edit_file",
            json!({"path": "big.txt", "old_text": format!("line {i:04}: alpha"), "new_text": format!("line {i:04}: omega")}),
        ),
    }
}

fn answer(content: Value, stop: &str) -> String {
    json!({"content": content, "stop_reason": stop, "usage": {"input_tokens": 1000, "output_tokens": 40}}).to_string()
}

fn tool_answer(id: String, name: &str, input: Value) -> String {
    answer(
        json!([{"type": "text", "text": "Going on."}, {"type": "tool_use", "id": id, "name": name, "input": input}]),
        "tool_use",
    )
}

fn done(text: &str) -> String {
    answer(json!([{"type": "text", "text": text}]), "end_turn")
}

/// The replayed answers: the work in the parent, or one `task` call and the work in its child.
fn script(child: bool) -> String {
    let mut lines = Vec::new();
    if child {
        lines.push(tool_answer(
            "task_1".into(),
            "task",
            json!({"prompt": "Do the 28 steps on big.txt", "description": "steps"}),
        ));
    }
    for i in 0..ROUNDS {
        let (name, input) = call(i);
        lines.push(tool_answer(format!("toolu_{i:04}"), name, input));
    }
    lines.push(done("All 28 steps done."));
    if child {
        lines.push(done("The child did it."));
    }
    lines.join("\n") + "\n"
}

fn workspace(n: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stepwise-bench-subagents-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let text: String = (0..200).map(|k| format!("line {k:04}: alpha, some content ({k})\n")).collect();
    std::fs::write(dir.join("big.txt"), text).unwrap();
    dir
}

async fn once(child: bool, ws: &Path) -> Duration {
    let llm = Llm::replay(Replay::parse(&script(child)).unwrap());
    let host = DiskHost::new(ws, None).unwrap();
    let cfg = AgentConfig { max_rounds: 50, ..AgentConfig::default() };
    let work = Workspace::new(std::fs::canonicalize(ws).unwrap(), Session::default(), None);
    let start = Instant::now();
    let out = work.run_prompt("Do the 28 steps", &llm, &host, &NoEvents, &cfg).await.unwrap();
    let took = start.elapsed();
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    let text = std::fs::read_to_string(ws.join("big.txt")).unwrap();
    assert_eq!(text.matches(": omega").count(), ROUNDS / 3, "every edit found its text");
    if child {
        assert!(out.final_text.contains("The child did it."), "{}", out.final_text);
    }
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (mut inline, mut child) = (Vec::new(), Vec::new());
    for n in 0..ITERS {
        // Alternated, each on a fresh workspace: a drift of the machine hits both alike.
        let ws = workspace(2 * n);
        inline.push(once(false, &ws).await);
        let ws2 = workspace(2 * n + 1);
        child.push(once(true, &ws2).await);
        let _ = std::fs::remove_dir_all(&ws);
        let _ = std::fs::remove_dir_all(&ws2);
    }
    let (i, c) = (median(inline), median(child));
    let per_round = i / (ROUNDS as u32 + 1);
    let beyond = c.saturating_sub(i).saturating_sub(per_round * 2);
    println!("{ROUNDS} rounds inline: median {i:.2?} ({per_round:.2?} a round)");
    println!("the same in one child: median {c:.2?} (+{:.2?})", c.saturating_sub(i));
    println!("beyond its two extra rounds: {beyond:.2?}");
}
