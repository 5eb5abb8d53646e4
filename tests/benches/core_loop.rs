//! Harness overhead of the agent loop: a scripted 200-round session of todo / read_file / edit_file
//! calls, the model answering at once.
//!
//! `cargo bench -p stepwise-tests --bench core_loop`
//!
//! Two ways:
//!  (a) in-process replay (`Llm::replay`): no HTTP, the pure cost of the loop, the tools and the plan;
//!  (b) the scripted mock over loopback HTTP (streaming Anthropic format), the mock running as its own
//!      process (`mock-model`), so this process's time and memory are the engine's alone.
//!
//! A round is timed from one `Thinking` event to the next: request building (and, for (b), sending,
//! streaming and parsing the answer), then every tool call and the bookkeeping of the round.
//! Peak RSS is VmHWM from /proc/self/status, reset between the two ways via /proc/self/clear_refs.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stepwise::agent::{AgentConfig, FinishReason, Session};
use stepwise::events::{Event, EventSink};
use stepwise::host::DiskHost;
use stepwise::llm::{Llm, ProviderConfig, ProviderKind, Replay};
use stepwise::workspace::Workspace;
use stepwise_tests::mock::process::MockProcess;

const ROUNDS: usize = 200;
const FILE_LINES: usize = 1000;
const REPLAY_ITERS: usize = 21;
const HTTP_ITERS: usize = 6;

/// The tool call of round `i` (0-based): (name, input).
fn round_call(i: usize) -> (&'static str, Value) {
    match i % 4 {
        0 => {
            let step = i / 4; // 50 plan updates
            let items: Vec<Value> = (0..5)
                .map(|k| {
                    let status = match (step * 5 / 50).cmp(&k) {
                        std::cmp::Ordering::Greater => "completed",
                        std::cmp::Ordering::Equal => "in_progress",
                        std::cmp::Ordering::Less => "pending",
                    };
                    json!({"id": (k + 1).to_string(), "text": format!("Step {} of the refactor", k + 1), "status": status,
                           "activeForm": format!("Working on step {}", k + 1)})
                })
                .collect();
            ("todo", json!({"items": items}))
        }
        1 => ("read_file", json!({"path": "src/big.txt", "limit": 40})),
        _ => {
            // 100 edits, each on its own line.
            let k = (i / 4) * 2 + (i % 4 - 2);
            (
                "edit_file",
                json!({"path": "src/big.txt",
                "old_text": format!("line {k:04}: alpha"), "new_text": format!("line {k:04}: omega")}),
            )
        }
    }
}

fn round_text(i: usize) -> String {
    format!("Round {i}: continuing with the plan.")
}

fn replay_jsonl() -> String {
    let mut out = String::new();
    for i in 0..ROUNDS {
        let (name, input) = round_call(i);
        let r = json!({"content": [
            {"type": "text", "text": round_text(i)},
            {"type": "tool_use", "id": format!("toolu_{i:04}"), "name": name, "input": input}
        ], "stop_reason": "tool_use", "usage": {"input_tokens": 1000 + i as u64 * 50, "output_tokens": 40}});
        out.push_str(&r.to_string());
        out.push('\n');
    }
    out.push_str(
        &json!({"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
                         "usage": {"input_tokens": 11000, "output_tokens": 5}})
        .to_string(),
    );
    out.push('\n');
    out
}

fn mock_script() -> Value {
    let mut steps: Vec<Value> = (0..ROUNDS)
        .map(|i| {
            let (name, input) = round_call(i);
            json!({"type": "turn", "text": round_text(i),
                   "tool_calls": [{"id": format!("toolu_{i:04}"), "name": name, "input": input}],
                   "usage": {"input_tokens": 1000 + i as u64 * 50, "output_tokens": 40}})
        })
        .collect();
    steps.push(json!({"type": "turn", "text": "Done."}));
    Value::Array(steps)
}

fn workspace(tag: &str, n: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stepwise-bench-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let mut text = String::new();
    for k in 0..FILE_LINES {
        text.push_str(&format!("line {k:04}: alpha, some content to make the line look like code ({k})\n"));
    }
    std::fs::write(dir.join("src/big.txt"), text).unwrap();
    dir
}

/// Times each round (Thinking to Thinking, the last one to RunFinished) and counts tool errors.
struct Timer {
    marks: Mutex<Vec<Instant>>,
    /// CPU time of this whole process (every thread) at each mark.
    cpu: Mutex<Vec<Duration>>,
    /// When each model answer was complete (the `Usage` event).
    answered: Mutex<Vec<Instant>>,
    errors: Mutex<Vec<String>>,
}

impl Timer {
    fn new() -> Timer {
        Timer {
            marks: Mutex::new(Vec::with_capacity(ROUNDS + 2)),
            cpu: Mutex::new(Vec::with_capacity(ROUNDS + 2)),
            answered: Mutex::new(Vec::with_capacity(ROUNDS + 1)),
            errors: Mutex::new(Vec::new()),
        }
    }
}

impl EventSink for Timer {
    fn emit(&self, event: Event<'_>) {
        match event {
            Event::Thinking { .. } | Event::RunFinished { .. } => {
                self.marks.lock().unwrap().push(Instant::now());
                self.cpu.lock().unwrap().push(process_cpu());
            }
            Event::Usage { .. } => self.answered.lock().unwrap().push(Instant::now()),
            Event::ToolFinished { output, is_error: true, name, .. } => {
                self.errors.lock().unwrap().push(format!("{name}: {output}"))
            }
            _ => {}
        }
    }
}

/// Per-round durations of one full session (ROUNDS tool rounds; the closing text round is left out).
async fn session(llm: &Llm, ws: &Path) -> Vec<Round> {
    let host = DiskHost::new(ws, None).unwrap();
    let cfg = AgentConfig { max_rounds: ROUNDS as u32 + 10, ..AgentConfig::default() };
    let timer = Timer::new();
    let work = Workspace::new(std::fs::canonicalize(ws).unwrap(), Session::default(), None);
    let out = work.run_prompt("Refactor src/big.txt step by step", llm, &host, &timer, &cfg).await.unwrap();
    assert_eq!(out.reason, FinishReason::EndTurn, "{:?}", out.error);
    assert_eq!(out.rounds as usize, ROUNDS + 1);
    let errors = timer.errors.lock().unwrap();
    assert!(errors.is_empty(), "tool errors in the scripted session: {:?}", &errors[..errors.len().min(5)]);
    let text = std::fs::read_to_string(ws.join("src/big.txt")).unwrap();
    assert_eq!(text.matches(": omega").count(), ROUNDS / 2, "every edit_file found its text");
    let marks = timer.marks.lock().unwrap();
    let answered = timer.answered.lock().unwrap();
    assert_eq!(marks.len(), ROUNDS + 2);
    assert_eq!(answered.len(), ROUNDS + 1);
    let cpu = timer.cpu.lock().unwrap();
    (0..ROUNDS)
        .map(|r| Round { total: marks[r + 1] - marks[r], model: answered[r] - marks[r], cpu: cpu[r + 1] - cpu[r] })
        .collect()
}

/// One round: all of it, and the part until the model's answer was parsed (request building,
/// transport, the answer); the rest is tools and bookkeeping.
#[derive(Clone, Copy)]
struct Round {
    total: Duration,
    model: Duration,
    /// CPU time this process spent in the round, on all its threads: the engine's own work, whatever
    /// else the machine is doing (the HTTP mock runs in another process and is not counted).
    cpu: Duration,
}

fn process_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: plain syscall writing into a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn stats(samples: &[Vec<Round>], range: std::ops::Range<usize>) -> (Duration, Duration) {
    stats_of(samples, range, |r| r.total)
}

fn stats_of(
    samples: &[Vec<Round>],
    range: std::ops::Range<usize>,
    f: impl Fn(&Round) -> Duration,
) -> (Duration, Duration) {
    let mut all: Vec<Duration> = samples.iter().flat_map(|s| s[range.clone()].iter().map(&f)).collect();
    all.sort();
    (percentile(&all, 0.5), percentile(&all, 0.99))
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn vm_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Resets VmHWM to the current RSS (Linux 4.0+); false if not possible.
fn reset_hwm() -> bool {
    std::fs::OpenOptions::new().write(true).open("/proc/self/clear_refs").and_then(|mut f| f.write_all(b"5")).is_ok()
}

fn report(label: &str, samples: &[Vec<Round>], hwm_kb: u64) {
    let (m50, p50) = stats(samples, 0..50);
    let (mall, pall) = stats(samples, 0..ROUNDS);
    let cpu = |r: std::ops::Range<usize>| stats_of(samples, r, |x| x.cpu);
    let model = |r: std::ops::Range<usize>| stats_of(samples, r, |x| x.model).0;
    let tools = |r: std::ops::Range<usize>| stats_of(samples, r, |x| x.total - x.model).0;
    println!("\n{label}  ({} sessions x {ROUNDS} rounds)", samples.len());
    let (c50, cp50) = cpu(0..50);
    let (call, cpall) = cpu(0..ROUNDS);
    println!("  wall time per round; CPU = this process's CPU time per round (all threads)");
    println!(
        "  {:<10} {:>11} {:>11} | {:>11} {:>11} | {:>16} {:>16}",
        "rounds", "wall med", "wall p99", "CPU med", "CPU p99", "model call (med)", "tools+rest (med)"
    );
    for (name, m, p, c, cp, r) in
        [("first 50", m50, p50, c50, cp50, 0..50), ("all 200", mall, pall, call, cpall, 0..ROUNDS)]
    {
        println!(
            "  {:<10} {:>11} {:>11} | {:>11} {:>11} | {:>16} {:>16}",
            name,
            us(m),
            us(p),
            us(c),
            us(cp),
            us(model(r.clone())),
            us(tools(r))
        );
    }
    println!("  per-round median by round index (growth with history):");
    let buckets: Vec<(usize, Duration, Duration)> = (0..ROUNDS / 25)
        .map(|b| {
            let (m, _) = stats(samples, b * 25..(b + 1) * 25);
            let (c, _) = cpu(b * 25..(b + 1) * 25);
            (b * 25, m, c)
        })
        .collect();
    let first = buckets[0].1.as_secs_f64().max(1e-9);
    println!("  {:<16} {:>11} {:>11}", "", "wall med", "CPU med");
    for (start, m, c) in &buckets {
        let bar = "#".repeat(((m.as_secs_f64() / first) * 10.0).round().min(80.0) as usize);
        println!(
            "  rounds {:>3}-{:>3}  {:>11} {:>11}  x{:<5.2} {bar}",
            start,
            start + 24,
            us(*m),
            us(*c),
            m.as_secs_f64() / first
        );
    }
    let last = buckets.last().unwrap().1.as_secs_f64();
    let cpu_growth = buckets.last().unwrap().2.as_secs_f64() / buckets[0].2.as_secs_f64().max(1e-9);
    // History at the middle of the last bucket vs the first: per-round cost growing no faster than this
    // ratio is at most linear in history.
    let history_ratio = (ROUNDS as f64 - 12.5) / 12.5;
    println!(
        "  growth last/first bucket: wall x{:.2}, CPU x{:.2} (history grew x{:.0}; linear growth would allow up to that)",
        last / first,
        cpu_growth,
        history_ratio
    );
    println!(
        "  peak RSS (VmHWM): {:.1} MB   targets: < 1 ms/round over the first 50 (wall [{}], CPU [{}]), < 30 MB [{}]",
        hwm_kb as f64 / 1024.0,
        if m50 < Duration::from_millis(1) { "ok" } else { "MISSED" },
        if c50 < Duration::from_millis(1) { "ok" } else { "MISSED" },
        if hwm_kb < 30 * 1024 { "ok" } else { "MISSED" }
    );
}

fn start_mock(script: &Path) -> MockProcess {
    let args = [OsStr::new("--script"), script.as_os_str(), OsStr::new("--quiet"), OsStr::new("--exit-on-stdin-eof")];
    MockProcess::start(Path::new(env!("CARGO_BIN_EXE_mock-model")), args)
}

#[derive(Clone, Copy, PartialEq)]
enum Source {
    Replay,
    /// The mock over HTTP in one provider's wire format.
    Http(ProviderKind),
}

/// Runs `iters` sessions (the first is a warm-up and not counted); returns the samples and VmHWM.
/// `spawned`: the loop runs as a task on the runtime's workers (as the LSP sidecar runs it);
/// otherwise on the `block_on` thread (as `stepwise run` / `chat` run it).
fn measure(
    rt: &tokio::runtime::Runtime,
    source: Source,
    iters: usize,
    spawned: bool,
    jsonl: &str,
    script: &Path,
) -> (Vec<Vec<Round>>, u64) {
    reset_hwm();
    let mut samples = Vec::new();
    for n in 0..iters {
        let ws = workspace(if source == Source::Replay { "replay" } else { "http" }, n);
        let mut mock = None;
        let llm = match source {
            Source::Replay => Llm::replay(Replay::parse(jsonl).unwrap()),
            Source::Http(kind) => {
                let m = start_mock(script);
                let base_url = match kind {
                    ProviderKind::Anthropic => m.url.clone(),
                    ProviderKind::Openai => format!("{}/v1", m.url),
                };
                let p = ProviderConfig {
                    kind,
                    model: "bench-model".into(),
                    base_url,
                    api_key: "bench-key".into(),
                    max_tokens: 8000,
                    timeout: Duration::from_secs(30),
                    max_retries: 0,
                    backoff: Duration::from_millis(10),
                    context_window: 200_000,
                    prompt_cache: true,
                };
                mock = Some(m);
                Llm::new(p.clone()).unwrap()
            }
        };
        let s = if spawned {
            let ws2 = ws.clone();
            rt.block_on(async move { tokio::spawn(async move { session(&llm, &ws2).await }).await.unwrap() })
        } else {
            rt.block_on(session(&llm, &ws))
        };
        drop(mock);
        let _ = std::fs::remove_dir_all(&ws);
        if n > 0 {
            samples.push(s); // the first session warms up caches and the allocator
        }
    }
    (samples, vm_hwm_kb())
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument other than ours means "not this bench".
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if !args.is_empty() && !args.iter().any(|a| "core_loop".contains(a.as_str())) {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let jsonl = replay_jsonl();
    let dir = workspace("script", 0);
    let script = dir.join("script.json");
    std::fs::write(&script, serde_json::to_string(&mock_script()).unwrap()).unwrap();

    println!("stepwise core loop benchmark: {ROUNDS} rounds of todo / read_file / edit_file, model answering at once");
    println!("runtime: tokio multi-thread, 2 workers (as the CLI); baseline RSS {:.1} MB", vm_rss_kb() as f64 / 1024.0);
    let hwm_reset = reset_hwm();

    let (a, a_hwm) = measure(&rt, Source::Replay, REPLAY_ITERS, true, &jsonl, &script);
    let (b, b_hwm) = measure(&rt, Source::Http(ProviderKind::Anthropic), HTTP_ITERS, true, &jsonl, &script);
    let (c, c_hwm) = measure(&rt, Source::Http(ProviderKind::Openai), HTTP_ITERS, true, &jsonl, &script);
    let (a2, _) = measure(&rt, Source::Replay, REPLAY_ITERS, false, &jsonl, &script);
    let (b2, _) = measure(&rt, Source::Http(ProviderKind::Anthropic), HTTP_ITERS, false, &jsonl, &script);
    let (c2, _) = measure(&rt, Source::Http(ProviderKind::Openai), HTTP_ITERS, false, &jsonl, &script);

    report("(a) in-process replay (no HTTP), loop spawned on the runtime", &a, a_hwm);
    report(
        "(b) mock over loopback HTTP, streaming Anthropic format (mock in its own process), loop spawned",
        &b,
        b_hwm,
    );
    report("(c) mock over loopback HTTP, streaming OpenAI chat completions, loop spawned", &c, c_hwm);
    println!("\nthe same with the loop on the block_on thread (as `stepwise run` / `chat` drive it today):");
    for (label, s) in [("(a) replay", &a2), ("(b) Anthropic", &b2), ("(c) OpenAI", &c2)] {
        let (m50, p50) = stats(s, 0..50);
        let (mall, pall) = stats(s, 0..ROUNDS);
        let (c50, _) = stats_of(s, 0..50, |x| x.cpu);
        let (call, _) = stats_of(s, 0..ROUNDS, |x| x.cpu);
        println!(
            "  {label:<13} first 50: wall median {} p99 {}, CPU median {}   all 200: wall median {} p99 {}, CPU median {}",
            us(m50),
            us(p50),
            us(c50),
            us(mall),
            us(pall),
            us(call)
        );
    }
    if !hwm_reset {
        println!("\nnote: /proc/self/clear_refs not writable: each VmHWM includes the earlier runs' peak");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
