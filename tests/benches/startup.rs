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
//! `STEPWISE_BENCH_RUNS` sets the number of spawns a binary (30). `STEPWISE_BENCH_SKILLS=50` instead spawns the
//! one binary in turn in the workspace and in a copy of it holding that many skills (`.agents/skills/`, each
//! with a description and a 3 KB body), and prints the paired difference and the skills' catalogue (issue 49);
//! with `STEPWISE_BENCH_SKILLS_HOME=1` the skills are the user's (`~/.agents/skills/`, `HOME` a folder of the
//! bench's for both) and the workspace is the same: only the skills' own cost is compared.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stepwise_tests::lsp_client::stepwise_binary;

/// Spawn to the first request's headers, once.
fn spawn_once(bin: &Path, ws: &Path, home: Option<&Path>) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let start = Instant::now();
    let mut child = Command::new(bin)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ANTHROPIC_BASE_URL", &url)
        .env("ANTHROPIC_API_KEY", "bench")
        .env("MODEL_ID", "bench")
        .envs(home.map(|h| ("HOME", h)))
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

/// `n` skills in `ws/.agents/skills/`, as a team keeps them: a description of about 200 characters saying
/// what and when, a body of about 3 KB.
fn write_skills(ws: &Path, n: usize) {
    let body = "1. Check the working tree is clean and the tests pass.\n".repeat(55);
    for i in 0..n {
        let name = format!("team-skill-{i:02}");
        let description = format!(
            "How we handle task {i:02} in this codebase: the steps, the scripts to run and the conventions to keep. \
             Use when the user asks about task {i:02}, or when a change touches its files."
        );
        let dir = ws.join(".agents/skills").join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\n# Task {i:02}\n\n{body}"),
        )
        .unwrap();
    }
}

fn ms(d: f64) -> String {
    format!("{:.2} ms", d * 1000.0)
}

fn main() {
    let runs: usize = std::env::var("STEPWISE_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(30).max(1);
    let bin = stepwise_binary(true);
    let before = std::env::var_os("STEPWISE_BEFORE_BIN").map(PathBuf::from);
    let ws = stepwise_tests::TempDir::new("bench-startup");
    let with_skills = stepwise_tests::TempDir::new("bench-startup-skills");
    for f in std::env::var("STEPWISE_BENCH_FILES").unwrap_or_default().split(',').filter(|f| !f.is_empty()) {
        ws.write(f, "x\n");
        with_skills.write(f, "x\n");
    }
    let skills: usize = std::env::var("STEPWISE_BENCH_SKILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    // What is compared, in turn: the binary before and this one, or this one without skills and with them.
    let in_home = std::env::var("STEPWISE_BENCH_SKILLS_HOME").is_ok_and(|v| v == "1");
    let (empty_home, skills_home) =
        (stepwise_tests::TempDir::new("bench-home"), stepwise_tests::TempDir::new("bench-home-skills"));
    let found_in = if in_home { skills_home.path() } else { with_skills.path() };
    let cases: Vec<(&Path, &Path, Option<&Path>, String)> = if skills > 0 {
        write_skills(found_in, skills);
        let with = format!("{skills} skills{}", if in_home { " in ~/.agents/skills" } else { " in the workspace" });
        let (ws_with, home_with) =
            if in_home { (ws.path(), skills_home.path()) } else { (with_skills.path(), empty_home.path()) };
        vec![
            (bin.as_path(), ws.path(), Some(empty_home.path()), "no skills".into()),
            (bin.as_path(), ws_with, Some(home_with), with),
        ]
    } else {
        let bins = before.as_deref().into_iter().chain([bin.as_path()]);
        bins.map(|b| (b, ws.path(), None, b.display().to_string())).collect()
    };
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(runs); cases.len()];
    for i in 0..runs {
        for k in 0..cases.len() {
            let c = (i + k) % cases.len();
            times[c].push(spawn_once(cases[c].0, cases[c].1, cases[c].2).as_secs_f64());
        }
    }
    println!("stepwise start-up ({runs} runs, release binary {})", bin.display());
    for (case, t) in cases.iter().zip(&times) {
        let mut s = t.clone();
        s.sort_by(f64::total_cmp);
        println!(
            "{}: spawn -> first model request: min {} / median {} / max {}",
            case.3,
            ms(s[0]),
            ms(s[runs / 2]),
            ms(s[runs - 1])
        );
    }
    if cases.len() == 2 {
        let mut d: Vec<f64> = times[1].iter().zip(&times[0]).map(|(now, was)| now - was).collect();
        d.sort_by(f64::total_cmp);
        println!("paired difference ({} against {}), median: {:+.2} ms", cases[1].3, cases[0].3, d[runs / 2] * 1000.0);
    }
    if skills > 0 {
        // The run's own work for them, in this process: finding them and writing the catalogue.
        let mut took: Vec<f64> = (0..200)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(stepwise::skills::find(found_in).catalogue());
                start.elapsed().as_secs_f64()
            })
            .collect();
        took.sort_by(f64::total_cmp);
        println!("finding {skills} skills and writing their catalogue, median of 200: {}", ms(took[100]));
        let catalogue = stepwise::skills::find(found_in).catalogue();
        let listed = catalogue.lines().filter(|l| l.starts_with("- ")).count();
        println!(
            "the catalogue of {skills} skills: {} characters, {listed} listed, about {} tokens at four characters a token",
            catalogue.chars().count(),
            catalogue.chars().count() / 4
        );
    }
    let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
    println!("binary size: {:.1} MB", size as f64 / 1e6);
}
