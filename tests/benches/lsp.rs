//! LSP sidecar benchmark: `cargo bench -p stepwise-tests --bench lsp`.
//!
//! (a) code lens latency while a run streams, (b) spawn-to-initialize time of the release binary,
//! (c) peak RSS of the server with 20 folders each holding a plan. The release binary is built first
//! (`cargo build --release --bin stepwise`, done here). Prints a table; asserts nothing about timing.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step, Turn};

const LENS_SAMPLES: usize = 1000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// A long streamed answer with tool calls between the streams.
fn streaming_script(rounds: usize, words: usize) -> Vec<Step> {
    let prose: String = (0..words).map(|i| format!("word{i} ")).collect();
    let mut steps = Vec::new();
    for r in 0..rounds {
        let items: Vec<Value> = (0..4)
            .map(|i| {
                let status = if i < r % 4 { "completed" } else if i == r % 4 { "in_progress" } else { "pending" };
                json!({"id": format!("{i}"), "text": format!("Step {i}"), "status": status, "activeForm": format!("Doing step {i}")})
            })
            .collect();
        steps.push(Step::Turn(
            Turn::text(prose.clone())
                .with_tool("todo", json!({ "items": items }))
                .with_tool("write_file", json!({"path": format!("out{r}.txt"), "content": format!("round {r}\n")}))
                .with_chunk_delay_ms(1),
        ));
    }
    steps.push(Step::Turn(Turn::text(prose).with_chunk_delay_ms(1)));
    steps
}

struct LensResult {
    median: Duration,
    p99: Duration,
    max: Duration,
    samples: usize,
    during_run: usize,
    notifications: usize,
}

async fn lens_latency(binary: Option<&std::path::Path>) -> LensResult {
    let dir = TempDir::new("bench-lens");
    let state = TempDir::new("bench-lens-state");
    dir.write("src/lib.rs", "pub fn f() {}\n");
    let mock = MockModel::start(streaming_script(6, 400)).await;
    let mut b = TestEditor::builder(ClientPreset::VsCode).folder(dir.path()).mock(&mock).state_dir(state.path());
    if let Some(bin) = binary {
        b = b.binary_at(bin, &["lsp"]);
    }
    let ed = b.timeout(Duration::from_secs(60)).start().await;
    let ws = ed.folder_uri(0);
    let doc = ed.open("src/lib.rs", "pub fn f() {}\n");
    let run = ed.start_run(&ws, "stream a lot").await;
    // Wait for the first plan so lenses have something to show.
    ed.await_notification_matching("stepwise/plan", |_| true, Duration::from_secs(30)).await;
    let mut samples = Vec::with_capacity(LENS_SAMPLES * 2);
    let mut during_run = 0;
    let mut notifications = 0;
    loop {
        let t = Instant::now();
        let lenses = ed.code_lens(&doc).await;
        samples.push(t.elapsed());
        assert!(!lenses.is_empty());
        let ended = ed.has_received("stepwise/status", |p| p["state"] == "idle");
        if !ended {
            during_run += 1;
        }
        if samples.len() >= LENS_SAMPLES && ended {
            break;
        }
        // Keep the queue short while the run streams.
        if samples.len() % 100 == 0 {
            notifications += ed.drain("stepwise/assistantText").len();
        }
    }
    let log = ed.await_run(&ws, &run, Duration::from_secs(60)).await;
    notifications += log.all.len() + ed.drain_all().len();
    assert_eq!(log.reason(), "end_turn");
    ed.finish().await;
    samples.sort();
    LensResult {
        median: percentile(&samples, 0.5),
        p99: percentile(&samples, 0.99),
        max: *samples.last().unwrap(),
        samples: samples.len(),
        during_run,
        notifications,
    }
}

async fn initialize_time(binary: &std::path::Path, spawns: usize) -> (Duration, Duration) {
    let mut times = Vec::new();
    for _ in 0..spawns {
        let dir = TempDir::new("bench-init");
        let state = TempDir::new("bench-init-state");
        let t = Instant::now();
        let mut ed = TestEditor::builder(ClientPreset::VsCode)
            .binary_at(binary, &["lsp"])
            .ignore(&["workspace/configuration"])
            .folder(dir.path())
            .state_dir(state.path())
            .connect()
            .await;
        ed.initialize().await.expect("initialize");
        times.push(t.elapsed());
        ed.finish().await;
    }
    times.sort();
    (percentile(&times, 0.5), *times.last().unwrap())
}

async fn peak_rss(binary: &std::path::Path, folders: usize) -> (u64, u64) {
    let dirs: Vec<TempDir> = (0..folders).map(|i| TempDir::new(&format!("bench-rss-{i}"))).collect();
    let state = TempDir::new("bench-rss-state");
    let mut steps = Vec::new();
    for i in 0..folders {
        let items: Vec<Value> = (0..5)
            .map(|k| json!({"id": format!("{k}"), "text": format!("Folder {i} step {k}"), "status": if k == 0 { "in_progress" } else { "pending" }}))
            .collect();
        steps.push(Step::tool("todo", json!({ "items": items })));
        steps.push(Step::text(format!("planned folder {i}")));
    }
    let mock = MockModel::start(steps).await;
    let mut b =
        TestEditor::builder(ClientPreset::VsCode).binary_at(binary, &["lsp"]).mock(&mock).state_dir(state.path());
    for d in &dirs {
        b = b.folder(d.path());
    }
    let ed = b.ignore(&["$/progress", "stepwise/usage", "stepwise/assistantText", "stepwise/toolCall"]).start().await;
    for (i, dir) in dirs.iter().enumerate() {
        let ws = ed.folder_uri(i);
        let run = ed.start_run(&ws, &format!("plan folder {i}")).await;
        let log = ed.await_run(&ws, &run, Duration::from_secs(30)).await;
        assert_eq!(log.plans().len(), 1);
        let doc = ed.open(dir.join("a.txt"), "a\n");
        assert_eq!(ed.code_lens(&doc).await.len(), 1);
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", ed.pid().unwrap())).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (hwm, rss) = (field("VmHWM:"), field("VmRSS:"));
    ed.finish().await;
    (hwm, rss)
}

/// 20 folders running at once: code lens latency across their documents while every run streams, and the
/// server's peak memory.
async fn concurrent_runs(binary: &std::path::Path, folders: usize) -> (Duration, Duration, usize, u64) {
    let dirs: Vec<TempDir> = (0..folders).map(|i| TempDir::new(&format!("bench-many-{i}"))).collect();
    let state = TempDir::new("bench-many-state");
    // Tool rounds first (shared by whichever run asks next), then one closing answer per run.
    let mut steps: Vec<Step> = streaming_script(folders * 3, 200);
    steps.pop();
    let prose: String = (0..200).map(|i| format!("word{i} ")).collect();
    steps.extend((0..folders).map(|_| Step::Turn(Turn::text(prose.clone()).with_chunk_delay_ms(1))));
    // The model in a process of its own, so its streaming does not compete with the measuring client.
    let script = state.write("script.json", &serde_json::to_string(&steps).unwrap());
    let mut mock_proc = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-model"))
        .arg("--script")
        .arg(&script)
        .arg("--quiet")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut out = tokio::io::BufReader::new(mock_proc.stdout.take().unwrap());
    tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line).await.unwrap();
    let url = line.trim().strip_prefix("listening ").expect("mock-model prints its address").to_string();
    let placeholder = MockModel::start(Vec::<Step>::new()).await;
    let mut b = TestEditor::builder(ClientPreset::VsCode)
        .binary_at(binary, &["lsp"])
        .mock(&placeholder)
        .option("baseUrl", json!(url))
        .env("ANTHROPIC_BASE_URL", &url)
        .state_dir(state.path());
    for d in &dirs {
        b = b.folder(d.path());
    }
    let ed = b.timeout(Duration::from_secs(120)).start().await;
    let docs: Vec<String> = dirs.iter().map(|d| ed.open(d.join("a.rs"), "fn a() {}\n")).collect();
    let mut ids = Vec::new();
    for i in 0..folders {
        ids.push(ed.start_run(&ed.folder_uri(i), "stream").await);
    }
    let mut samples = Vec::new();
    let mut i = 0;
    while !ids
        .iter()
        .all(|id| ed.has_received("stepwise/status", |p| p["state"] == "idle" && p["runId"] == id.as_str()))
    {
        let t = Instant::now();
        ed.code_lens(&docs[i % docs.len()]).await;
        samples.push(t.elapsed());
        i += 1;
        if i % 100 == 0 {
            ed.drain_all();
        }
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", ed.pid().unwrap())).unwrap();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    ed.drain_all();
    ed.finish().await;
    samples.sort();
    (percentile(&samples, 0.5), percentile(&samples, 0.99), samples.len(), hwm)
}

fn row(what: &str, value: String, target: &str, ok: bool) {
    println!("| {what:<46} | {value:>14} | {target:>10} | {:<4} |", if ok { "ok" } else { "OVER" });
}

fn main() {
    // `cargo bench` passes `--bench`; a name filter may follow. Nothing to filter here.
    let binary = stepwise_binary(true);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // `cargo bench -p stepwise-tests --bench lsp -- many`: only the 20 folders running at once.
    if std::env::args().any(|a| a == "many") {
        rt.block_on(async {
            let (median, p99, samples, hwm) = concurrent_runs(&binary, 20).await;
            println!(
                "20 folders running at once: code lens median {} / p99 {} over {samples} requests; peak RSS {:.1} MB",
                ms(median),
                ms(p99),
                hwm as f64 / 1024.0
            );
        });
        return;
    }
    rt.block_on(async {
        let lens = lens_latency(Some(&binary)).await;
        let lens_mem = lens_latency(None).await;
        let (init_median, init_max) = initialize_time(&binary, 20).await;
        let (hwm, rss) = peak_rss(&binary, 20).await;
        let (many_median, many_p99, many_samples, many_hwm) = concurrent_runs(&binary, 20).await;
        println!();
        println!("stepwise LSP benchmark (release binary {})", binary.display());
        println!("| {:<46} | {:>14} | {:>10} | {:<4} |", "measure", "value", "target", "");
        println!("|{:-<48}|{:-<16}|{:-<12}|{:-<6}|", "", "", "", "");
        row("code lens latency while streaming, median", ms(lens.median), "", true);
        row("code lens latency while streaming, p99", ms(lens.p99), "< 5 ms", lens.p99 < Duration::from_millis(5));
        row("code lens latency while streaming, max", ms(lens.max), "", true);
        row("  lens requests (during the run)", format!("{} ({})", lens.samples, lens.during_run), "", true);
        row("  notifications the streaming run sent", format!("{}", lens.notifications), "", true);
        row("code lens (in-process server), median", ms(lens_mem.median), "", true);
        row("code lens (in-process server), p99", ms(lens_mem.p99), "< 5 ms", lens_mem.p99 < Duration::from_millis(5));
        row(
            "spawn to initialize response, median of 20",
            ms(init_median),
            "< 20 ms",
            init_median < Duration::from_millis(20),
        );
        row("spawn to initialize response, max of 20", ms(init_max), "", true);
        row(
            "peak RSS (VmHWM), 20 folders with plans",
            format!("{:.1} MB", hwm as f64 / 1024.0),
            "< 40 MB",
            hwm < 40 * 1024,
        );
        row("RSS (VmRSS) at the end", format!("{:.1} MB", rss as f64 / 1024.0), "", true);
        row("20 folders running at once: code lens median", ms(many_median), "", true);
        row("20 folders running at once: code lens p99", ms(many_p99), "< 5 ms", many_p99 < Duration::from_millis(5));
        row("  lens requests while they ran", format!("{many_samples}"), "", true);
        row(
            "20 folders running at once: peak RSS (VmHWM)",
            format!("{:.1} MB", many_hwm as f64 / 1024.0),
            "< 40 MB",
            many_hwm < 40 * 1024,
        );
    });
}
