//! Review benchmark: `cargo bench -p stepwise-tests --bench review`.
//!
//! A workspace of 1,000 files (120 lines, about 4 KB each) where one run changed 200 of them (three
//! separate lines each: three hunks per file). Measures `stepwise.changes` for that run:
//! - in the engine (`Checkpoints::changes`: each file's text before from the store, the text now from
//!   disk, the line diff into hunks) and the JSON the sidecar answers with;
//! - through the sidecar (in process, over LSP framing): the request's round trip, the run's changes
//!   made by a shell command, as they usually are in bulk;
//! - a code lens request on one of the changed files (Keep / Undo lenses against the cached texts).
//!
//! Prints the numbers; asserts nothing about timing.

use std::time::{Duration, Instant};

use serde_json::json;
use stepwise::checkpoint::{Checkpoints, Limits, Meta, Scope};
use stepwise::session::Session;
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const FILES: usize = 1000;
const CHANGED: usize = 200;
const SAMPLES: usize = 30;

fn text(i: usize, changed: bool) -> String {
    (0..120)
        .map(|l| {
            if changed && (l == 10 || l == 60 || l == 110) {
                format!("    let changed_{l} = compute({i}, {l}); // by the agent\n")
            } else {
                format!("    let value_{l} = compute({i}, {l}); // line {l} of file {i}\n")
            }
        })
        .collect()
}

fn path(i: usize) -> String {
    format!("src/m{:02}/f{i}.rs", i % 20)
}

fn workspace(dir: &TempDir) {
    for i in 0..FILES {
        dir.write(&path(i), &text(i, false));
    }
}

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name}: median {:.2} ms, p90 {:.2} ms, max {:.2} ms ({} samples)",
        ms(v[v.len() / 2]),
        ms(v[v.len() * 9 / 10]),
        ms(v[v.len() - 1]),
        v.len()
    );
}

fn engine() {
    let dir = TempDir::new("bench-review");
    let state = TempDir::new("bench-review-state");
    workspace(&dir);
    let mut cp = Checkpoints::open(Some(state.path()), dir.path(), Limits::default()).unwrap();
    let meta = Meta { run_id: "run-1".into(), round: 1, prompt: "change 200 files".into(), step: Some("Edit".into()) };
    cp.take(meta, &Session::default()).unwrap();
    for i in 0..CHANGED {
        let rel = path(i);
        cp.before_write(std::path::Path::new(&rel), None);
        let new = text(i, true);
        dir.write(&rel, &new);
        cp.after_write(std::path::Path::new(&rel), &new);
    }
    let mut times = Vec::new();
    let mut json_times = Vec::new();
    let mut bytes = 0;
    for _ in 0..SAMPLES {
        let t = Instant::now();
        let (_, files) = cp.changes(&Scope::Latest, |_| None).unwrap();
        times.push(t.elapsed());
        assert_eq!(files.len(), CHANGED);
        assert!(files.iter().all(|f| f.hunks.len() == 3));
        let t = Instant::now();
        bytes = serde_json::to_vec(&json!({"files": files})).unwrap().len();
        json_times.push(t.elapsed());
    }
    stats("engine: Checkpoints::changes, 200 changed files", times);
    stats("engine: the answer as JSON", json_times);
    println!("  answer size {:.2} MB", bytes as f64 / (1 << 20) as f64);
}

async fn sidecar() {
    let dir = TempDir::new("bench-review-lsp");
    let state = TempDir::new("bench-review-lsp-state");
    workspace(&dir);
    let files: Vec<String> = (0..CHANGED).map(path).collect();
    let command = format!(
        "for f in {}; do sed -i -e 's/let value_\\(10\\|60\\|110\\) /let changed_\\1 /' \"$f\"; done",
        files.join(" ")
    );
    let mock = MockModel::start(vec![Step::tool("bash", json!({ "command": command })), Step::text("Done.")]).await;
    let ed = TestEditor::builder(ClientPreset::VsCode)
        .folder(dir.path())
        .mock(&mock)
        .state_dir(state.path())
        .option("approval", json!("auto"))
        .ignore(&TRANSCRIPT)
        .ignore(&["stepwise/checkpoint", "stepwise/review", "stepwise/status", "stepwise/plan"])
        .timeout(Duration::from_secs(120))
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "change 200 files").await;
    ed.await_run(&ws, &run, Duration::from_secs(120)).await;
    let mut times = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        let answer = ed.execute("stepwise.changes", json!({})).await.unwrap();
        times.push(t.elapsed());
        assert_eq!(answer["files"].as_array().map(Vec::len), Some(CHANGED));
    }
    stats("sidecar: stepwise.changes round trip, 200 changed files", times);
    let doc = ed.open(path(0), &text(0, true));
    let mut lens = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        let l = ed.code_lens(&doc).await;
        lens.push(t.elapsed());
        assert_eq!(l.len(), 6, "Keep and Undo above three hunks");
    }
    stats("sidecar: code lens of a changed file (3 hunks)", lens);
    ed.finish().await;
}

fn main() {
    engine();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(sidecar());
}
