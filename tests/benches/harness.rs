//! Harness time per round measured from outside, stepwise and the seed paired in one run:
//! `cargo bench -p stepwise-tests --bench harness [-- RUNS]` (default 5 runs, after one warm-up).
//!
//! The same scripted 200-round session in the seed's tool vocabulary (`todo`, `read_file`, `edit_file`
//! twice, `bash`, in turn) is played by the mock model (its own process, `mock-model --timing`) to:
//!  - the release `stepwise run` binary, over the Anthropic format and over OpenAI chat completions;
//!  - the seed: the s03 Python harness (`benches/seed/s03_todo_write.py`, the Anthropic SDK from PyPI in a
//!    venv that `benches/seed/setup.sh` makes once under ~/.cache/stepwise-tools).
//!
//! With `STEPWISE_BEFORE_BIN=<another stepwise binary>` that one is measured too (Anthropic format), for a
//! before → after pairing in the same run.
//!
//! With `STEPWISE_BENCH_GAPS=<prefix>` each session's gaps (µs, one a line) are written to
//! `<prefix>-<harness>-<n>`, to see where in a session the time moves.
//!
//! `-- profile` instead runs one stepwise session (Anthropic format; `-- profile openai`: OpenAI chat) under
//! `valgrind --tool=callgrind` and prints where its instructions go (`callgrind_annotate --inclusive=yes`,
//! the top entries).
//!
//! A round's harness time is the gap from the mock having written one answer whole to the next request
//! having arrived whole: reading the answer, running the tool, the bookkeeping, encoding and sending the
//! next request. Reported per tool, first half against second half (flatness), and as the ratio to the
//! seed. Peak memory (the process's maximum RSS from `wait4`) and CPU time per round of the whole process
//! come with it. Prints; asserts only that every session ran to its end.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use stepwise_tests::lsp_client::stepwise_binary;
use stepwise_tests::mock::process::MockProcess;
use stepwise_tests::TempDir;

const ROUNDS: usize = 200;
const FILE_LINES: usize = 1000;
const TASK: &str = "Refactor src/big.txt step by step";
const TOOLS: [&str; 4] = ["todo", "read_file", "edit_file", "bash"];

/// The tool call of round `i` (0-based).
fn round_call(i: usize) -> (&'static str, Value) {
    let cycle = i / 5;
    match i % 5 {
        0 => {
            let items: Vec<Value> = (0..5)
                .map(|k| {
                    let status = match (cycle * 5 / (ROUNDS / 5)).cmp(&k) {
                        std::cmp::Ordering::Greater => "completed",
                        std::cmp::Ordering::Equal => "in_progress",
                        std::cmp::Ordering::Less => "pending",
                    };
                    json!({"id": (k + 1).to_string(), "text": format!("Step {} of the refactor", k + 1), "status": status})
                })
                .collect();
            ("todo", json!({"items": items}))
        }
        1 => ("read_file", json!({"path": "src/big.txt", "limit": 40})),
        2 | 3 => {
            let k = cycle * 2 + (i % 5 - 2);
            (
                "edit_file",
                json!({"path": "src/big.txt", "old_text": format!("line {k:04}: alpha"), "new_text": format!("line {k:04}: omega")}),
            )
        }
        _ => ("bash", json!({"command": format!("echo round {i}")})),
    }
}

fn script() -> Value {
    let mut steps: Vec<Value> = (0..ROUNDS)
        .map(|i| {
            let (name, input) = round_call(i);
            json!({"type": "turn", "text": format!("Round {i}: continuing with the plan."),
                   "tool_calls": [{"id": format!("toolu_{i:04}"), "name": name, "input": input}],
                   "usage": {"input_tokens": 1000 + i as u64 * 50, "output_tokens": 40}})
        })
        .collect();
    steps.push(json!({"type": "turn", "text": "Done."}));
    Value::Array(steps)
}

fn workspace(root: &Path, tag: &str) -> PathBuf {
    let dir = root.join(tag);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let text: String = (0..FILE_LINES)
        .map(|k| format!("line {k:04}: alpha, some content to make the line look like code ({k})\n"))
        .collect();
    std::fs::write(dir.join("src/big.txt"), text).unwrap();
    dir
}

#[derive(Clone, Copy, PartialEq)]
enum Harness {
    Before,
    StepwiseAnthropic,
    StepwiseOpenai,
    Seed,
}

impl Harness {
    fn label(self) -> &'static str {
        match self {
            Harness::Before => "stepwise before (Anthropic, streamed)",
            Harness::StepwiseAnthropic => "stepwise (Anthropic, streamed)",
            Harness::StepwiseOpenai => "stepwise (OpenAI chat, streamed)",
            Harness::Seed => "seed (s03, Python SDK)",
        }
    }
}

/// One session: each round's harness time (µs), the process's peak RSS (KiB) and CPU time (µs).
struct Session {
    gaps: Vec<f64>,
    /// The same gaps to the next request's first bytes: without the time its bytes took through the
    /// socket to the mock (the whole history every round).
    to_first: Vec<f64>,
    max_rss_kb: i64,
    cpu_us: f64,
}

struct Programs {
    stepwise: PathBuf,
    before: Option<PathBuf>,
    python: Option<PathBuf>,
    /// Run stepwise under callgrind, writing its profile here.
    callgrind: Option<PathBuf>,
}

// The harness is reaped by `wait4` (for its resource use), not `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_session(h: Harness, programs: &Programs, root: &Path, script: &Path, n: usize) -> Session {
    let ws = workspace(root, &format!("ws-{n}"));
    let timing = root.join(format!("timing-{n}.txt"));
    let args = [
        OsStr::new("--script"),
        script.as_os_str(),
        OsStr::new("--timing"),
        timing.as_os_str(),
        OsStr::new("--quiet"),
        OsStr::new("--exit-on-stdin-eof"),
    ];
    let mock = MockProcess::start(Path::new(env!("CARGO_BIN_EXE_mock-model")), args);
    let url = mock.url.clone();

    let mut cmd = match h {
        Harness::Seed => {
            let mut c = Command::new(programs.python.as_ref().expect("the seed's python"));
            c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/seed/s03_todo_write.py"));
            c
        }
        _ => {
            let bin = if h == Harness::Before { programs.before.as_ref() } else { Some(&programs.stepwise) };
            let mut c = match &programs.callgrind {
                Some(out) => {
                    let mut c = Command::new("valgrind");
                    c.args(["--tool=callgrind", "--quiet"]).arg(format!("--callgrind-out-file={}", out.display()));
                    c.arg(bin.expect("the binary"));
                    c
                }
                None => Command::new(bin.expect("the binary")),
            };
            c.args(["run", "--yes", "--workspace"]).arg(&ws).arg(TASK);
            c
        }
    };
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", root)
        .env("STEPWISE_STATE_DIR", root.join("state"))
        .env("MODEL_ID", "bench-model")
        .env("STEPWISE_MAX_ROUNDS", (ROUNDS + 10).to_string())
        .env("STEPWISE_CONTEXT_WINDOW", "200000")
        .current_dir(&ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    match h {
        Harness::StepwiseOpenai => {
            cmd.env("STEPWISE_PROVIDER", "openai").env("OPENAI_BASE_URL", format!("{url}/v1"));
            cmd.env("OPENAI_API_KEY", "bench-key")
        }
        _ => cmd.env("ANTHROPIC_BASE_URL", &url).env("ANTHROPIC_API_KEY", "bench-key"),
    };
    let mut child = cmd.spawn().expect("cannot start the harness");
    {
        let mut stdin = child.stdin.take().unwrap();
        if h == Harness::Seed {
            let _ = writeln!(stdin, "{TASK}");
        }
    }
    let (status, usage) = wait4(child.id() as i32);
    assert!(status == 0, "{} exited with status {status}", h.label());
    mock.finish();

    let times: Vec<(f64, f64, f64)> = std::fs::read_to_string(&timing)
        .unwrap()
        .lines()
        .map(|l| {
            let mut it = l.split(' ').map(|x| x.parse::<f64>().unwrap());
            (it.next().unwrap(), it.next().unwrap(), it.next().unwrap())
        })
        .collect();
    assert_eq!(times.len(), ROUNDS + 1, "{}: every round reached the model", h.label());
    let text = std::fs::read_to_string(ws.join("src/big.txt")).unwrap();
    assert_eq!(text.matches(": omega").count(), ROUNDS / 5 * 2, "{}: every edit landed", h.label());
    let gaps: Vec<f64> = (0..ROUNDS).map(|k| times[k + 1].0 - times[k].1).collect();
    let to_first: Vec<f64> = (0..ROUNDS).map(|k| times[k + 1].2 - times[k].1).collect();
    if let Some(prefix) = std::env::var_os("STEPWISE_BENCH_GAPS") {
        let lines: String = gaps.iter().map(|g| format!("{g:.0}\n")).collect();
        let _ = std::fs::write(format!("{}-{}-{n}", prefix.to_string_lossy(), h.label()), lines);
    }
    let cpu = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    let _ = std::fs::remove_dir_all(&ws);
    Session { gaps, to_first, max_rss_kb: usage.ru_maxrss, cpu_us: cpu(usage.ru_utime) + cpu(usage.ru_stime) }
}

/// Waits for `pid` and returns its exit status and resource use.
fn wait4(pid: i32) -> (i32, libc::rusage) {
    // SAFETY: plain syscall writing into locals; `pid` is our own child, not yet waited for.
    unsafe {
        let mut status = 0;
        let mut usage: libc::rusage = std::mem::zeroed();
        let r = libc::wait4(pid, &mut status, 0, &mut usage);
        assert_eq!(r, pid, "wait4 failed");
        (if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 }, usage)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median gap of the rounds whose tool is `tool` (any tool for `None`) within `range`, over all sessions.
fn med(sessions: &[Session], tool: Option<&str>, range: std::ops::Range<usize>) -> f64 {
    let pick = |k: &usize| tool.is_none_or(|t| round_call(*k).0 == t);
    median(sessions.iter().flat_map(|s| range.clone().filter(pick).map(|k| s.gaps[k])).collect())
}

fn ms(us: f64) -> String {
    format!("{:.3} ms", us / 1000.0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let runs: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(5);
    if args
        .iter()
        .any(|a| a.parse::<usize>().is_err() && a != "profile" && a != "openai" && !"harness".contains(a.as_str()))
    {
        return;
    }
    let before = std::env::var_os("STEPWISE_BEFORE_BIN").map(PathBuf::from);
    let stepwise = stepwise_binary(true);
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/seed/setup.sh");
    let python = Command::new("bash").arg(&setup).stderr(Stdio::inherit()).output().ok().and_then(|o| {
        let p = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
        (o.status.success() && p.is_file()).then_some(p)
    });
    if python.is_none() {
        println!("the seed could not be set up ({}): measuring stepwise alone", setup.display());
    }
    let root = TempDir::new("bench-harness");
    let script_file = root.path().join("script.json");
    std::fs::write(&script_file, script().to_string()).unwrap();

    let mut harnesses = vec![Harness::StepwiseAnthropic, Harness::StepwiseOpenai];
    if before.is_some() {
        harnesses.insert(0, Harness::Before);
    }
    if python.is_some() {
        harnesses.push(Harness::Seed);
    }
    if args.iter().any(|a| a == "profile") {
        let openai = args.iter().any(|a| a == "openai");
        return profile(stepwise, root.path(), &script_file, openai);
    }
    let programs = Programs { stepwise, before, python, callgrind: None };
    let mut results: Vec<Vec<Session>> = harnesses.iter().map(|_| Vec::new()).collect();
    let mut n = 0;
    for run in 0..=runs {
        // Interleaved, so that each harness meets the same machine; run 0 warms caches up and is not counted.
        for (h, out) in harnesses.iter().zip(results.iter_mut()) {
            n += 1;
            let s = run_session(*h, &programs, root.path(), &script_file, n);
            if run > 0 {
                out.push(s);
            }
        }
    }

    println!("\nharness time per round, from outside ({ROUNDS} rounds, {runs} runs each, medians; the model answers at once)");
    println!("| harness | all rounds | todo | read_file | edit_file | bash | first half → second half (file and plan tools) | the same, to the request's first bytes | CPU per round (whole process) | peak RSS |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let half = ROUNDS / 2;
    for (h, sessions) in harnesses.iter().zip(&results) {
        let file_plan = |r: std::ops::Range<usize>, first: bool| {
            median(
                sessions
                    .iter()
                    .flat_map(|s| {
                        let gaps = if first { &s.to_first } else { &s.gaps };
                        r.clone().filter(|k| round_call(*k).0 != "bash").map(|k| gaps[k])
                    })
                    .collect(),
            )
        };
        let (a, b) = (file_plan(0..half, false), file_plan(half..ROUNDS, false));
        let (fa, fb) = (file_plan(0..half, true), file_plan(half..ROUNDS, true));
        let cpu = median(sessions.iter().map(|s| s.cpu_us / (ROUNDS + 1) as f64).collect());
        let rss = sessions.iter().map(|s| s.max_rss_kb).max().unwrap_or(0);
        let tools: Vec<String> = TOOLS.iter().map(|t| ms(med(sessions, Some(t), 0..ROUNDS))).collect();
        println!(
            "| {} | {} | {} | {} → {} ({:+.0}%) | {} → {} ({:+.0}%) | {} | {:.1} MiB |",
            h.label(),
            ms(med(sessions, None, 0..ROUNDS)),
            tools.join(" | "),
            ms(a),
            ms(b),
            (b / a - 1.0) * 100.0,
            ms(fa),
            ms(fb),
            (fb / fa - 1.0) * 100.0,
            ms(cpu),
            rss as f64 / 1024.0
        );
    }
    if let Some(seed) = harnesses.iter().position(|h| *h == Harness::Seed) {
        println!("\nratio to the seed (median harness time per round, same run):");
        for (h, sessions) in harnesses.iter().zip(&results).filter(|(h, _)| **h != Harness::Seed) {
            let per = |tool: Option<&str>| med(sessions, tool, 0..ROUNDS) / med(&results[seed], tool, 0..ROUNDS);
            let tools: Vec<String> = TOOLS.iter().map(|t| format!("{t} {:.3}", per(Some(t)))).collect();
            println!("  {}: all rounds {:.3}; {}", h.label(), per(None), tools.join(", "));
        }
    }
}

/// One stepwise session under callgrind; prints the functions with the most instructions, inclusive.
fn profile(stepwise: PathBuf, root: &Path, script: &Path, openai: bool) {
    let out = root.join("callgrind.out");
    let programs = Programs { stepwise, before: None, python: None, callgrind: Some(out.clone()) };
    let harness = if openai { Harness::StepwiseOpenai } else { Harness::StepwiseAnthropic };
    let s = run_session(harness, &programs, root, script, 0);
    println!(
        "one session under callgrind: median harness time per round {} (slowed down by valgrind)",
        ms(median(s.gaps))
    );
    let kept = std::env::temp_dir().join("stepwise-harness.callgrind");
    let _ = std::fs::copy(&out, &kept);
    let annotate = Command::new("callgrind_annotate").args(["--inclusive=yes", "--threshold=99"]).arg(&out).output();
    match annotate {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            for line in text.lines().take(80) {
                println!("{line}");
            }
            println!("(the whole profile: {})", kept.display());
        }
        Err(e) => println!("callgrind_annotate: {e}"),
    }
}
