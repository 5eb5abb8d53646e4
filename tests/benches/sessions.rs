//! Sessions side by side (issue 47): what other sessions of the folder cost the one that runs, and what a
//! worktree costs to make. `cargo bench -p stepwise-tests --bench sessions` (`-- rounds` or `-- worktree`
//! for one part).
//!
//! Rounds: the release sidecar (`stepwise lsp`) under the fake editor, the scripted model in a process of
//! its own (`mock-model --routes`, answering at once). The measured session is the folder's own: 200
//! rounds of `todo` / `read_file` / `edit_file` (core_loop's script) on a 1,000-line file; its rounds per
//! second (201 requests over the run's wall time, `stepwise.run` to its `idle` status) in a fresh sidecar
//! and folder for each of:
//! - alone;
//! - beside three running sessions waiting for their model (their requests open, never answered): the
//!   cost of siblings that run, their own work aside;
//! - beside three running sessions doing rounds of their own all along (`todo`, answered at once): the
//!   same, their own work included (two cores shared by four loops, the mock and the client);
//! - beside ten idle sessions, each of which ran once.
//!
//! The cases are interleaved, a warm-up round of each first; medians and ranges over the runs; beside
//! them, all sessions' rounds per second meanwhile (the mock's requests). Then the sidecar's threads at
//! rest (`/proc/PID/status`), alone and with ten idle sessions.
//!
//! Worktree: `stepwise.newSession {"worktree": true}` on a clone of this repository (its files, its
//! history), clean and with 20 files changed and 5 untracked, answered to the editor; then its removal
//! (`stepwise.closeSession {"discard": true}`). Prints tables; asserts nothing about timing.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::process::MockProcess;
use stepwise_tests::mock::{MockModel, Step, Turn};

const ROUNDS: usize = 200;
const RUNS: usize = 7;
const T: Duration = Duration::from_secs(300);

/// The measured session's round `i`: core_loop's script (a plan update, a read, two edits, in turn).
fn round_call(i: usize) -> (&'static str, Value) {
    match i % 4 {
        0 => {
            let items: Vec<Value> = (0..5)
                .map(|k| {
                    let status = match (i / 4 * 5 / 50).cmp(&k) {
                        std::cmp::Ordering::Greater => "completed",
                        std::cmp::Ordering::Equal => "in_progress",
                        std::cmp::Ordering::Less => "pending",
                    };
                    json!({"id": (k + 1).to_string(), "text": format!("Step {}", k + 1), "status": status})
                })
                .collect();
            ("todo", json!({"items": items}))
        }
        1 => ("read_file", json!({"path": "src/big.txt", "limit": 40})),
        _ => {
            let k = (i / 4) * 2 + (i % 4 - 2);
            (
                "edit_file",
                json!({"path": "src/big.txt", "old_text": format!("line {k:04}: alpha"), "new_text": format!("line {k:04}: omega")}),
            )
        }
    }
}

fn measured_script() -> Vec<Step> {
    let mut steps: Vec<Step> = (0..ROUNDS)
        .map(|i| {
            let (name, input) = round_call(i);
            Step::Turn(Turn::text(format!("Round {i}.")).with_tool(name, input))
        })
        .collect();
    steps.push(Step::text("Done."));
    steps
}

/// A sibling that works all along: plan updates until it is cancelled (more than it can reach).
fn busy_script(k: usize) -> Vec<Step> {
    (0..3000)
        .map(|i| {
            let items = json!([{"id": "1", "text": format!("Sibling {k} round {i}"), "status": "in_progress"}]);
            Step::tool("todo", json!({ "items": items }))
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Case {
    Alone,
    BesideWaiting,
    BesideBusy,
    BesideIdle,
}

impl Case {
    const ALL: [Case; 4] = [Case::Alone, Case::BesideWaiting, Case::BesideBusy, Case::BesideIdle];

    fn label(self) -> &'static str {
        match self {
            Case::Alone => "alone",
            Case::BesideWaiting => "beside 3 running, waiting for their model",
            Case::BesideBusy => "beside 3 running, doing rounds of their own",
            Case::BesideIdle => "beside 10 idle sessions",
        }
    }
}

fn start_mock(dir: &Path, routes: &[(String, Vec<Step>)]) -> MockProcess {
    let script = dir.join("script.json");
    std::fs::write(&script, "[]").unwrap();
    let routes: Vec<Value> = routes.iter().map(|(key, steps)| json!({"key": key, "steps": steps})).collect();
    let routes_file = dir.join("routes.json");
    std::fs::write(&routes_file, serde_json::to_vec(&routes).unwrap()).unwrap();
    let record = dir.join("requests.jsonl");
    let args = [
        OsStr::new("--script"),
        script.as_os_str(),
        OsStr::new("--routes"),
        routes_file.as_os_str(),
        OsStr::new("--record"),
        record.as_os_str(),
        OsStr::new("--quiet"),
    ];
    MockProcess::start(Path::new(env!("CARGO_BIN_EXE_mock-model")), args)
}

/// Requests the mock has received (its record, a line each).
fn requests(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("requests.jsonl")).map_or(0, |t| t.lines().count())
}

async fn until_requests(dir: &Path, n: usize) {
    let start = Instant::now();
    while requests(dir) < n {
        assert!(start.elapsed() < T, "the mock got {} of {n} requests", requests(dir));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn threads(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

async fn sidecar(binary: &Path, dir: &TempDir, state: &TempDir, url: &str) -> TestEditor {
    let placeholder = MockModel::start(Vec::<Step>::new()).await;
    TestEditor::builder(ClientPreset::Bare)
        .binary_at(binary, &["lsp"])
        .folder(dir.path())
        .state_dir(state.path())
        .mock(&placeholder)
        .option("baseUrl", json!(url))
        .env("ANTHROPIC_BASE_URL", url)
        .option("approval", json!("auto"))
        .option("maxRounds", json!(100_000))
        .ignore(&TRANSCRIPT)
        .ignore(&["stepwise/review", "stepwise/checkpoint", "stepwise/sessions", "stepwise/plan", "stepwise/status"])
        .timeout(T)
        .start()
        .await
}

/// One measurement: the measured session's rounds per second, and all sessions' together meanwhile.
async fn measure(binary: &Path, case: Case) -> (f64, f64) {
    let (dir, state) = (TempDir::new("bench-sessions"), TempDir::new("bench-sessions-state"));
    let big: String = (0..1000).map(|k| format!("line {k:04}: alpha\n")).collect();
    dir.write("src/big.txt", &big);
    let mut routes = vec![("measured run".to_string(), measured_script())];
    match case {
        Case::Alone => {}
        Case::BesideWaiting => routes.extend((0..3).map(|k| (format!("waiting {k}"), vec![Step::Hang]))),
        Case::BesideBusy => routes.extend((0..3).map(|k| (format!("busy {k}"), busy_script(k)))),
        Case::BesideIdle => routes.extend((0..10).map(|k| (format!("idle {k}"), vec![Step::text("ok")]))),
    }
    let mock = start_mock(state.path(), &routes);
    let ed = sidecar(binary, &dir, &state, &mock.url).await;
    let ws = ed.folder_uri(0);
    let mut others = Vec::new();
    for (key, _) in routes.iter().skip(1) {
        let made = ed.execute("stepwise.newSession", json!({"workspace": ws, "title": key})).await.unwrap();
        let id = made["session"].as_str().unwrap().to_string();
        let run = ed.start_run_in(&ws, &id, key).await;
        if case == Case::BesideIdle {
            ed.await_run(&ws, &run, T).await;
        }
        others.push(id);
    }
    // The siblings run (waiting: each one's request is open; busy: past their first rounds).
    match case {
        Case::BesideWaiting => until_requests(state.path(), 3).await,
        Case::BesideBusy => until_requests(state.path(), 30).await,
        _ => {}
    }
    let before = requests(state.path());
    let start = Instant::now();
    let run = ed.start_run(&ws, "measured run").await;
    let log = ed.await_run(&ws, &run, T).await;
    let took = start.elapsed();
    let all = requests(state.path()) - before;
    assert_eq!(log.reason(), "end_turn", "{case:?}");
    for id in &others {
        ed.execute("stepwise.cancel", json!({"workspace": ws, "session": id})).await.unwrap();
    }
    ed.drain_all();
    ed.finish().await;
    ((ROUNDS + 1) as f64 / took.as_secs_f64(), all as f64 / took.as_secs_f64())
}

/// The sidecar's threads at rest (after the runtime's blocking threads' keep-alive of 10 s), with
/// `idle` sessions beside the folder's own, each of which ran once.
async fn threads_at_rest(binary: &Path, idle: usize) -> usize {
    let (dir, state) = (TempDir::new("bench-sessions-rest"), TempDir::new("bench-sessions-rest-state"));
    let routes: Vec<(String, Vec<Step>)> = (0..idle).map(|k| (format!("idle {k}"), vec![Step::text("ok")])).collect();
    let mock = start_mock(state.path(), &routes);
    let ed = sidecar(binary, &dir, &state, &mock.url).await;
    let ws = ed.folder_uri(0);
    for (key, _) in &routes {
        let made = ed.execute("stepwise.newSession", json!({"workspace": ws, "title": key})).await.unwrap();
        let run = ed.start_run_in(&ws, made["session"].as_str().unwrap(), key).await;
        ed.await_run(&ws, &run, T).await;
    }
    tokio::time::sleep(Duration::from_secs(12)).await;
    let n = threads(ed.pid().unwrap());
    ed.drain_all();
    ed.finish().await;
    n
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

async fn rounds(binary: &Path) {
    let mut samples: Vec<Vec<(f64, f64)>> = vec![Vec::new(); Case::ALL.len()];
    for run in 0..=RUNS {
        for (i, case) in Case::ALL.into_iter().enumerate() {
            let got = measure(binary, case).await;
            if run > 0 {
                samples[i].push(got);
            }
        }
    }
    println!("\nrounds per second of the folder's own session, 200 rounds, {RUNS} interleaved runs (after a warm-up)");
    println!(
        "| {:<44} | {:>7} | {:>15} | {:>8} | {:>15} |",
        "the session", "median", "range", "to alone", "all sessions'"
    );
    println!("|{:-<46}|{:-<9}|{:-<17}|{:-<10}|{:-<17}|", "", "", "", "", "");
    let mut alone = 0.0;
    for (i, case) in Case::ALL.into_iter().enumerate() {
        let mut rates: Vec<f64> = samples[i].iter().map(|s| s.0).collect();
        let mut all: Vec<f64> = samples[i].iter().map(|s| s.1).collect();
        let m = median(&mut rates);
        if case == Case::Alone {
            alone = m;
        }
        println!(
            "| {:<44} | {:>7.0} | {:>6.0} – {:>6.0} | {:>+7.1}% | {:>15.0} |",
            case.label(),
            m,
            rates[0],
            rates[rates.len() - 1],
            (m / alone - 1.0) * 100.0,
            median(&mut all)
        );
    }
    let (none, ten) = (threads_at_rest(binary, 0).await, threads_at_rest(binary, 10).await);
    println!("the sidecar's threads at rest: {none} with the folder's own session alone, {ten} with 10 idle sessions beside it");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `stepwise.newSession` in a worktree, then its discard, `n` times: (made, removed) medians and maxima.
async fn worktrees(binary: &Path, clone: &Path, n: usize) -> ((Duration, Duration), (Duration, Duration)) {
    let state = TempDir::new("bench-worktree-state");
    let mock = MockModel::start(Vec::<Step>::new()).await;
    let ed = TestEditor::builder(ClientPreset::Bare)
        .binary_at(binary, &["lsp"])
        .folder(clone)
        .state_dir(state.path())
        .mock(&mock)
        .ignore(&["stepwise/sessions"])
        .timeout(T)
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let (mut made, mut removed) = (Vec::new(), Vec::new());
    for _ in 0..=n {
        let t = Instant::now();
        let m = ed.execute("stepwise.newSession", json!({"workspace": ws, "worktree": true})).await.unwrap();
        made.push(t.elapsed());
        assert!(m["branch"].is_string(), "{m}");
        let t = Instant::now();
        ed.execute("stepwise.closeSession", json!({"session": m["session"], "discard": true})).await.unwrap();
        removed.push(t.elapsed());
    }
    ed.finish().await;
    // The first is a warm-up (the page cache).
    let stats = |mut v: Vec<Duration>| {
        v.remove(0);
        v.sort();
        (v[v.len() / 2], v[v.len() - 1])
    };
    (stats(made), stats(removed))
}

/// What git alone takes for the same: `git worktree add -b` from HEAD, then `git worktree remove --force`
/// and `git branch -D`.
fn git_alone(clone: &Path, n: usize) -> ((Duration, Duration), (Duration, Duration)) {
    let at = TempDir::new("bench-worktree-git");
    let (mut made, mut removed) = (Vec::new(), Vec::new());
    for k in 0..=n {
        let (tree, branch) = (at.path().join(format!("t{k}")), format!("bench/{k}"));
        let tree = tree.to_str().unwrap();
        let t = Instant::now();
        git(clone, &["-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "-b", &branch, tree, "HEAD"]);
        made.push(t.elapsed());
        let t = Instant::now();
        git(clone, &["worktree", "remove", "--force", tree]);
        git(clone, &["branch", "-D", "-q", &branch]);
        removed.push(t.elapsed());
    }
    let stats = |mut v: Vec<Duration>| {
        v.remove(0);
        v.sort();
        (v[v.len() / 2], v[v.len() - 1])
    };
    (stats(made), stats(removed))
}

async fn worktree(binary: &Path) {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let base = TempDir::new("bench-worktree");
    let clone = base.path().join("stepwise");
    let out = Command::new("git").args(["clone", "-q", "--no-local"]).arg(&here).arg(&clone).output().unwrap();
    assert!(out.status.success(), "git clone: {}", String::from_utf8_lossy(&out.stderr));
    let files = git(&clone, &["ls-files"]).lines().count();
    let size: u64 = git(&clone, &["ls-files", "-z"])
        .split('\0')
        .filter_map(|f| std::fs::metadata(clone.join(f)).ok())
        .map(|m| m.len())
        .sum();
    let commits = git(&clone, &["rev-list", "--count", "HEAD"]);
    println!(
        "\nworktree of a clone of this repository ({files} files, {:.1} MB, {commits} commits): stepwise.newSession \
         {{\"worktree\": true}} answered / closeSession {{\"discard\": true}}, 10 each after a warm-up",
        size as f64 / 1e6
    );
    println!("| {:<42} | {:>19} | {:>19} |", "the folder", "made: median / max", "removed: median / max");
    println!("|{:-<44}|{:-<21}|{:-<21}|", "", "", "");
    let row = |what: &str, ((m, mm), (r, rm)): ((Duration, Duration), (Duration, Duration))| {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!("| {what:<42} | {:>7.0} / {:>6.0} ms | {:>7.0} / {:>6.0} ms |", ms(m), ms(mm), ms(r), ms(rm));
    };
    row("clean", worktrees(binary, &clone, 10).await);
    row("  git worktree add alone (the same clone)", git_alone(&clone, 10));
    // As a user's folder usually is: changes not committed, new files.
    let tracked: Vec<String> =
        git(&clone, &["ls-files", "server/src/*.rs"]).lines().take(20).map(String::from).collect();
    for f in &tracked {
        let p = clone.join(f);
        let mut text = std::fs::read_to_string(&p).unwrap();
        text.push_str("// changed\n");
        std::fs::write(&p, text).unwrap();
    }
    for k in 0..5 {
        std::fs::write(clone.join(format!("notes-{k}.md")), "untracked\n").unwrap();
    }
    row("20 files changed, 5 untracked", worktrees(binary, &clone, 10).await);
}

fn main() {
    let binary = stepwise_binary(true);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let only = |what: &str| std::env::args().any(|a| a == what);
    let all = !only("rounds") && !only("worktree");
    println!("stepwise sessions benchmark (release binary {})", binary.display());
    rt.block_on(async {
        if all || only("rounds") {
            rounds(&binary).await;
        }
        if all || only("worktree") {
            worktree(&binary).await;
        }
    });
}
