//! Diagnostics benchmark: `cargo bench -p stepwise-tests --bench intel`.
//!
//! How long a round waits for diagnostics beyond the language server's own time to publish them. A
//! scripted server with a known delay (tests/intel/delay_server.py: each change published `DELAY_MS`
//! later, the moment of each publish logged by the server itself) serves a workspace; `stepwise run` with
//! the scripted mock model makes `EDITS` rounds that each write the file, then `READS` rounds that change
//! nothing. For each warm edit round (the first, with the server's start, left out): the moment the next
//! model request arrives minus the moment the server published that round's version (one clock, one
//! machine). For the rounds without changes: the round's time (one model request to the next) with the
//! setting `auto` against `off`, run alternately. Uses the debug binary unless `STEPWISE_BIN` names
//! another (the release one: `STEPWISE_BIN=target/release/stepwise`). Asserts nothing about timing.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use stepwise_tests::intel::{scripts, Env};
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::TempDir;

const DELAY_MS: u64 = 200;
const EDITS: usize = 25;
const READS: usize = 25;
const SESSIONS: usize = 2;

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs_f64()
}

fn script() -> Vec<Step> {
    let mut steps = Vec::new();
    for i in 0..EDITS {
        steps.push(Step::tool("write_file", json!({"path": "m.py", "content": format!("x = {i}\n")})));
    }
    for _ in 0..READS {
        steps.push(Step::tool("read_file", json!({"path": "m.py"})));
    }
    steps.push(Step::text("done"));
    steps
}

/// One session: the arrival time of each model request, and the server's publish log.
async fn session(mode: &str) -> (Vec<f64>, Vec<(i64, f64)>) {
    let ws = TempDir::new("bench-intel");
    // Unlike every text the rounds write: each round is a change.
    ws.write("m.py", "x = None\n");
    // Inside the workspace: the server may run in the session's sandbox, which writes only there.
    let log = ws.join("publish.log");
    let mock = std::sync::Arc::new(MockModel::start(script()).await);
    let e = Env::new(None);
    let script = scripts().join("delay_server.py");
    let delay = DELAY_MS.to_string();
    e.server("delay", &["python3", &script.to_string_lossy(), &delay, &log.to_string_lossy()]);
    let total = EDITS + READS + 1;
    let watcher = {
        let mock = mock.clone();
        tokio::spawn(async move {
            let mut at = Vec::with_capacity(total);
            for n in 1..=total {
                mock.wait_for_requests(n, Duration::from_secs(300)).await;
                at.push(now());
            }
            at
        })
    };
    let mut cmd = e.command(&mock, &ws);
    cmd.args(["run", "--yes", "work"])
        .env("STEPWISE_DIAGNOSTICS", mode)
        .env("STEPWISE_MAX_ROUNDS", "200")
        .env("STEPWISE_DIAGNOSTICS_WAIT_MS", "5000");
    let o = cmd.output().await.expect("stepwise runs");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let arrivals = watcher.await.expect("the watcher");
    let published = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (v, t) = l.split_once(' ')?;
            Some((v.parse().ok()?, t.parse().ok()?))
        })
        .collect();
    (arrivals, published)
}

fn stats(v: &mut [f64]) -> String {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!(
        "median {:.1} ms, p90 {:.1} ms, min {:.1}, max {:.1} (n={})",
        at(0.5),
        at(0.9),
        v[0],
        v[v.len() - 1],
        v.len()
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bin = stepwise_tests::lsp_client::stepwise_binary(false);
    println!("diagnostics wait ({SESSIONS} sessions of {EDITS} edit rounds and {READS} rounds without changes; a server that publishes {DELAY_MS} ms after each change; {})", bin.display());
    let (mut beyond, mut waited) = (Vec::new(), Vec::new());
    let (mut auto_rounds, mut off_rounds) = (Vec::new(), Vec::new());
    for _ in 0..SESSIONS {
        for mode in ["auto", "off"] {
            let (arrivals, published) = session(mode).await;
            let read_rounds = arrivals.windows(2).skip(EDITS + 1).map(|w| (w[1] - w[0]) * 1000.0);
            if mode == "off" {
                off_rounds.extend(read_rounds);
                continue;
            }
            auto_rounds.extend(read_rounds);
            // Edit round k (1-based) wrote version k + 1 (version 1: the text before, opened first); its
            // block is in request k + 1 (0-based index k). Round 1 starts the server: left out.
            for k in 2..=EDITS {
                let Some(&(_, t_pub)) = published.iter().find(|(v, _)| *v == k as i64 + 1) else {
                    println!("  round {k}: the server published nothing for version {}", k + 1);
                    continue;
                };
                beyond.push((arrivals[k] - t_pub) * 1000.0);
                waited.push((arrivals[k] - arrivals[k - 1]) * 1000.0);
            }
        }
    }
    println!("a warm edit round: the next request after the server's publish: {}", stats(&mut beyond));
    println!("a warm edit round, whole (the server's {DELAY_MS} ms included): {}", stats(&mut waited));
    println!("a round without changes, diagnostics auto: {}", stats(&mut auto_rounds));
    println!("a round without changes, diagnostics off:  {}", stats(&mut off_rounds));
}
