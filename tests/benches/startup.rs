//! Start-up benchmark: `cargo bench -p stepwise-tests --bench startup`.
//!
//! From spawning the release binary (`stepwise run`) to the first model request arriving at a local
//! listener, over plain http (the case of local model servers; an https endpoint adds the TLS handshake).
//! Builds the release binary first. Prints min / median / max; asserts nothing about timing.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stepwise_tests::lsp_client::stepwise_binary;

const RUNS: usize = 30;

fn main() {
    let bin = stepwise_binary(true);
    let ws = stepwise_tests::TempDir::new("bench-startup");
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let start = Instant::now();
        let mut child = Command::new(&bin)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ANTHROPIC_BASE_URL", &url)
            .env("ANTHROPIC_API_KEY", "bench")
            .env("MODEL_ID", "bench")
            .args(["run", "--yes", "hello"])
            .current_dir(ws.path())
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
        times.push(start.elapsed());
        let _ = child.kill();
        let _ = child.wait();
    }
    times.sort();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    println!("stepwise start-up ({RUNS} runs, release binary {})", bin.display());
    println!(
        "spawn -> first model request: min {} / median {} / max {}",
        ms(times[0]),
        ms(times[RUNS / 2]),
        ms(times[RUNS - 1])
    );
    let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
    println!("binary size: {:.1} MB", size as f64 / 1e6);
}
