//! Background commands benchmark: `cargo bench -p stepwise-tests --bench background` (the release binary,
//! built first; `STEPWISE_BIN` names another).
//!
//! 1. How long `background_run` takes to answer, from outside: `stepwise run --yes` against the mock model
//!    with its per-request timing (`MockOptions::timing`), the gap from the mock's answer calling the tool
//!    to the first bytes of the next request, which carries the result. That gap is the whole round on
//!    stepwise's side (reading the answer, the tool, the next request); a `check_background` round (no
//!    process started) is the baseline. Outside the sandbox and in it (workspace-write, network off).
//! 2. The memory of a task printing 1 GB: the peak RSS (`VmHWM`) of the stepwise process while the task
//!    prints and stepwise reads it all, beside the same session with a task printing 1 KB.
//!
//! Prints the figures; asserts nothing about timing.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stepwise_tests::lsp_client::stepwise_binary;
use stepwise_tests::mock::{MockModel, MockOptions, Step, Turn};
use stepwise_tests::TempDir;

const TASKS: usize = 40;
const GB: u64 = 1_000_000_000;

fn call(name: &str, input: Value) -> Step {
    Turn::default().with_tool(name, input).into()
}

fn stepwise(bin: &Path, ws: &Path, state: &Path, mock: &MockModel, sandbox: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin);
    cmd.env_clear();
    for keep in ["PATH", "HOME", "TMPDIR", "LANG", stepwise::host::PORTABLE_ENV] {
        if let Ok(v) = std::env::var(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("STEPWISE_SANDBOX", sandbox)
        .env("STEPWISE_MAX_ROUNDS", "1000")
        .env("STEPWISE_STATE_DIR", state)
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "bench")
        .env("MODEL_ID", "bench")
        .args(["run", "--yes", "bench"])
        .current_dir(ws)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// `(received, answered, first bytes)` of each request, in µs since the mock started.
fn timings(path: &Path) -> Vec<(f64, f64, f64)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| {
            let v: Vec<f64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            (v[0], v[1], v[2])
        })
        .collect()
}

fn stats(mut v: Vec<f64>) -> String {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!("median {:.2} ms, p90 {:.2} ms, max {:.2} ms ({} rounds)", at(0.5), at(0.9), at(1.0), v.len())
}

/// `background_run` / `check_background` / `kill_background` rounds, `TASKS` times.
async fn answer_times(bin: &Path, sandbox: &str) {
    let mut script = Vec::new();
    for i in 1..=TASKS {
        script.push(call("background_run", json!({"command": format!("echo started {i}; exec sleep 300")})));
        script.push(call("check_background", json!({"task_id": format!("bg-{i}")})));
        script.push(call("kill_background", json!({"task_id": format!("bg-{i}")})));
    }
    script.push(Step::text("done"));
    let (ws, state, dir) = (TempDir::new("bench-bg"), TempDir::new("bench-bg-state"), TempDir::new("bench-bg-t"));
    let file = dir.join("timing");
    let options = MockOptions { timing: Some(file.clone()), ..Default::default() };
    let mock = MockModel::start_with(script, options).await.unwrap();
    let out = stepwise(bin, ws.path(), state.path(), &mock, sandbox).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let first_result = bodies[1]["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(first_result.contains("Background task bg-1 started"), "{first_result}");
    let t = timings(&file);
    assert_eq!(t.len(), 3 * TASKS + 1);
    let gap = |k: usize| (t[k + 1].2 - t[k].1) / 1000.0;
    let run: Vec<f64> = (0..TASKS).map(|i| gap(3 * i)).collect();
    let check: Vec<f64> = (0..TASKS).map(|i| gap(3 * i + 1)).collect();
    let kill: Vec<f64> = (0..TASKS).map(|i| gap(3 * i + 2)).collect();
    println!("sandbox {sandbox}:");
    println!("  background_run round:   {}", stats(run));
    println!("  check_background round: {}", stats(check));
    println!("  kill_background round:  {}", stats(kill));
}

/// `VmHWM` / `VmRSS` of `pid` in kB, while it lives.
fn memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field =
        |name: &str| status.lines().find(|l| l.starts_with(name))?.split_whitespace().nth(1)?.parse::<u64>().ok();
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

/// A session whose task prints `bytes`: stepwise's peak RSS, and how long the session took.
async fn printing(bin: &Path, bytes: u64) -> (u64, Duration, String) {
    let command = format!("head -c {bytes} /dev/zero | tr '\\0' x; echo; echo END; touch printed");
    let script = vec![
        call("background_run", json!({ "command": command })),
        call("bash", json!({"command": "while [ ! -f printed ]; do sleep 0.05; done"})),
        call("check_background", json!({"task_id": "bg-1"})),
        Step::text("done"),
    ];
    let (ws, state) = (TempDir::new("bench-bg-print"), TempDir::new("bench-bg-print-state"));
    let mock = MockModel::start(script).await;
    let start = Instant::now();
    let mut child = stepwise(bin, ws.path(), state.path(), &mock, "off").spawn().unwrap();
    let pid = child.id();
    let mut peak = 0;
    let watcher = std::thread::spawn(move || {
        while let Some((hwm, _)) = memory(pid) {
            peak = peak.max(hwm);
            std::thread::sleep(Duration::from_millis(5));
        }
        peak
    });
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    let took = start.elapsed();
    assert!(status.success());
    let peak = watcher.join().unwrap();
    let bodies: Vec<Value> = mock.requests().into_iter().map(|r| r.body).collect();
    let last = bodies[3]["messages"].as_array().unwrap().last().unwrap().to_string();
    let checked = last.find("bg-1: ").map(|i| last[i..].chars().take(60).collect()).unwrap_or(last);
    (peak, took, checked)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bin = stepwise_binary(true);
    println!("binary: {}", bin.display());
    answer_times(&bin, "off").await;
    match stepwise::sandbox::availability(false) {
        Ok(_) => answer_times(&bin, "workspace-write").await,
        Err(why) => println!("sandbox: cannot start here ({why}); its rounds are left out"),
    }
    let (small, small_took, _) = printing(&bin, 1_000).await;
    let (big, big_took, checked) = printing(&bin, GB).await;
    println!(
        "task printing 1 KB: stepwise peak RSS {:.1} MB, session {:.2} s",
        small as f64 / 1024.0,
        small_took.as_secs_f64()
    );
    println!(
        "task printing 1 GB: stepwise peak RSS {:.1} MB, session {:.2} s ({:.0} MB/s read); the check read: {checked}…",
        big as f64 / 1024.0,
        big_took.as_secs_f64(),
        GB as f64 / 1e6 / big_took.as_secs_f64()
    );
}
