//! Start-up benchmark: `cargo bench -p stepwise-tests --bench startup`.
//!
//! From spawning the release binary (`stepwise run`) to the first model request arriving at a local
//! listener, over plain http (the case of local model servers; an https endpoint adds the TLS handshake).
//! Builds the release binary first. Prints min / median / max; asserts nothing about timing.
//!
//! With `STEPWISE_BEFORE_BIN=<another stepwise binary>` the two are spawned in turn (the order rotating), and
//! the median of the paired differences is printed: on a busy machine a difference of a fraction of a
//! millisecond shows only so (issue 39). `STEPWISE_BENCH_FILES=src/main.rs,...` puts those files in the
//! workspace (a file a language server on `PATH` serves makes the start decide the servers' rights);
//! `STEPWISE_BENCH_RUNS` sets the number of spawns a binary (30).

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stepwise_tests::lsp_client::stepwise_binary;

/// Spawn to the first request's headers, once.
fn spawn_once(bin: &Path, ws: &Path) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let start = Instant::now();
    let mut child = Command::new(bin)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ANTHROPIC_BASE_URL", &url)
        .env("ANTHROPIC_API_KEY", "bench")
        .env("MODEL_ID", "bench")
        .args(["run", "--yes", "hello"])
        .current_dir(ws)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    // The request line and headers have arrived: the request was sent.
    let mut buf = [0u8; 4096];
    let mut got = Vec::new();
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let took = start.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    took
}

fn ms(d: f64) -> String {
    format!("{:.2} ms", d * 1000.0)
}

fn main() {
    let runs: usize = std::env::var("STEPWISE_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(30).max(1);
    let bin = stepwise_binary(true);
    let before = std::env::var_os("STEPWISE_BEFORE_BIN").map(PathBuf::from);
    let ws = stepwise_tests::TempDir::new("bench-startup");
    for f in std::env::var("STEPWISE_BENCH_FILES").unwrap_or_default().split(',').filter(|f| !f.is_empty()) {
        ws.write(f, "x\n");
    }
    let bins: Vec<&Path> = before.as_deref().into_iter().chain([bin.as_path()]).collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(runs); bins.len()];
    for i in 0..runs {
        for k in 0..bins.len() {
            let b = (i + k) % bins.len();
            times[b].push(spawn_once(bins[b], ws.path()).as_secs_f64());
        }
    }
    println!("stepwise start-up ({runs} runs, release binary {})", bin.display());
    for (b, t) in bins.iter().zip(&times) {
        let mut s = t.clone();
        s.sort_by(f64::total_cmp);
        println!(
            "{}: spawn -> first model request: min {} / median {} / max {}",
            b.display(),
            ms(s[0]),
            ms(s[runs / 2]),
            ms(s[runs - 1])
        );
    }
    if before.is_some() {
        let mut d: Vec<f64> = times[1].iter().zip(&times[0]).map(|(now, was)| now - was).collect();
        d.sort_by(f64::total_cmp);
        println!("paired difference to STEPWISE_BEFORE_BIN, median: {:+.2} ms", d[runs / 2] * 1000.0);
    }
    let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
    println!("binary size: {:.1} MB", size as f64 / 1e6);
}
