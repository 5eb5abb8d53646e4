//! Shell overhead benchmark: `cargo bench -p stepwise-tests --bench shell`.
//!
//! What a `bash` tool call costs beyond the command itself: `run_shell` (guard shell, own process group,
//! bounded output, every process it left killed, escaped ones included) against a bare `sh -c` and a bare
//! `bash -c` of the same command spawned the same way (tokio, output piped and read, waited for), and
//! `run_shell` in the sandbox (workspace-write, network off, a workspace of 24 top-level entries: the
//! Landlock ruleset made per command and imposed in the guard). The four run in turn, in rotating order,
//! so the machine's load falls on them alike; the overhead is the median of the paired differences.
//! Asserts nothing about timing.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use stepwise::host::{run_shell, run_shell_in};
use stepwise::sandbox::{Policy, Sandbox, SandboxMode, SandboxSettings};
use tokio::io::AsyncReadExt;

const PAIRS: usize = 300;
const COMMANDS: &[&str] = &["true", "echo hello; sleep 30 & echo started"];

async fn bare(shell: &str, root: &Path, command: &str) -> Duration {
    let start = Instant::now();
    let mut child = tokio::process::Command::new(shell)
        .args(["-c", command])
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let pgid = child.id().unwrap() as i32; // before the wait: a reaped child has no id
    let status = child.wait().await.unwrap();
    // A background child keeps the pipes open: ends it the way a caller with no guard would.
    // SAFETY: plain syscall on the group just created.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let _ = tokio::join!(out.read_to_end(&mut a), err.read_to_end(&mut b));
    assert!(status.success() || status.code().is_none());
    start.elapsed()
}

async fn guarded(root: &Path, command: &str, sandbox: Option<&Policy>) -> Duration {
    let start = Instant::now();
    let out = match sandbox {
        None => run_shell(root, command, Duration::from_secs(30)).await.unwrap(),
        Some(p) => run_shell_in(root, command, Duration::from_secs(30), Some(p)).await.unwrap(),
    };
    assert!(!out.is_error, "{}", out.text);
    start.elapsed()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let ws = stepwise_tests::TempDir::new("bench-shell");
    let processes = std::fs::read_dir("/proc")
        .map(|d| d.flatten().filter(|e| e.file_name().to_str().is_some_and(|n| n.parse::<u32>().is_ok())).count())
        .unwrap_or(0);
    // 10,000 files in 100 folders: the keeper's check after each sandboxed command (sandbox/keep/) must
    // cost what the command changed, not this.
    for i in 0..100 {
        for j in 0..100 {
            ws.write(&format!("dir{i}/file{j}.txt"), "x");
        }
    }
    ws.write(".env", "K=v");
    ws.write("dir3/.env", "K=v");
    let sandbox = Sandbox::default();
    let settings = SandboxSettings::of(SandboxMode::WorkspaceWrite, false);
    let policy = match sandbox.policy(ws.path(), settings) {
        Ok(p) => p,
        Err(why) => {
            println!("the sandbox cannot start here ({why}): its rounds are left out");
            None
        }
    };
    println!("shell overhead ({PAIRS} rounds each, {processes} processes on the machine)");
    for command in COMMANDS {
        let (mut sh, mut bash, mut ours, mut over_sh, mut over_bash) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut boxed, mut over_guard) = (Vec::new(), Vec::new());
        let kinds = if policy.is_some() { 4 } else { 3 };
        for i in 0..PAIRS + 10 {
            let mut t = [0.0; 4];
            for k in 0..kinds {
                let which = (i + k) % kinds;
                t[which] = match which {
                    0 => bare("sh", ws.path(), command).await,
                    1 => bare("bash", ws.path(), command).await,
                    2 => guarded(ws.path(), command, None).await,
                    _ => guarded(ws.path(), command, policy.as_ref()).await,
                }
                .as_secs_f64()
                    * 1000.0;
            }
            if i < 10 {
                continue; // warm-up
            }
            sh.push(t[0]);
            bash.push(t[1]);
            ours.push(t[2]);
            over_sh.push(t[2] - t[0]);
            over_bash.push(t[2] - t[1]);
            if policy.is_some() {
                boxed.push(t[3]);
                over_guard.push(t[3] - t[2]);
            }
        }
        println!("`{command}`");
        println!(
            "  median: sh -c {:.2} ms, bash -c {:.2} ms, run_shell {:.2} ms",
            median(&mut sh),
            median(&mut bash),
            median(&mut ours)
        );
        println!(
            "  overhead (median of paired differences): over sh -c {:.2} ms, over bash -c {:.2} ms",
            median(&mut over_sh),
            median(&mut over_bash)
        );
        if policy.is_some() {
            println!(
                "  sandboxed: median {:.2} ms, its cost over run_shell (median of paired differences) {:.2} ms",
                median(&mut boxed),
                median(&mut over_guard)
            );
        }
    }
}
