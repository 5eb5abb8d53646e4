//! Checkpoint benchmark: `cargo bench -p stepwise-tests --bench checkpoints`.
//!
//! A workspace of 10,000 files (100 folders, 0.5–4 KB each, plus a `.gitignore`d build folder of 2,000
//! more) and a conversation that grows by two messages (a 2 KB tool result and an answer) per round.
//! Measures the checkpoint overhead per round (what the engine adds, not the command itself):
//! - a round without a shell command: `take` plus one `write_file` (`before_write` / `after_write`);
//! - a round around a shell command: `take` plus `before_command` / `after_command` around a command that
//!   modifies, creates and deletes a file;
//! - the first scan (the one-time copy), a rewind of 20 rounds, reopening after a restart, and disk use.
//!
//! Targets: under 20 ms median without a command, under 60 ms median around one. Prints the numbers;
//! asserts nothing about timing.

use std::path::Path;
use std::time::{Duration, Instant};

use stepwise::checkpoint::{Checkpoints, Limits, Meta, Restore};
use stepwise::llm::{Block, Message, Role};
use stepwise::session::Session;
use stepwise_tests::TempDir;

const FILES: usize = 10_000;
const ROUNDS: usize = 60;

fn workspace(dir: &TempDir) -> u64 {
    let mut bytes = 0;
    std::fs::write(dir.join(".gitignore"), "build/\n").unwrap();
    for i in 0..FILES {
        let size = 512 + (i * 7919) % 3584;
        let body: String = format!("// file {i}\n").repeat(size / 12 + 1);
        let path = dir.join(&format!("src/m{:02}/f{i}.rs", i % 100));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &body).unwrap();
        bytes += body.len() as u64;
    }
    for i in 0..2000 {
        let path = dir.join(&format!("build/o{:02}/x{i}.o", i % 20));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("object {i}")).unwrap();
    }
    bytes
}

fn grow(session: &mut Session, round: usize) {
    session.messages.push(Message {
        role: Role::Assistant,
        content: vec![Block::ToolUse {
            id: format!("t{round}"),
            name: "bash".into(),
            input: serde_json::json!({"command": format!("cargo test {round}")}),
        }]
        .into(),
    });
    session.messages.push(Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            tool_use_id: format!("t{round}"),
            content: format!("test output line {round}\n").repeat(80),
            is_error: false,
        }]
        .into(),
    });
}

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name}: median {:.2} ms, p90 {:.2} ms, max {:.2} ms ({} rounds)",
        ms(v[v.len() / 2]),
        ms(v[v.len() * 9 / 10]),
        ms(v[v.len() - 1]),
        v.len()
    );
}

/// CPU time of this process, all threads (not the shell commands): the machine's two cores are shared,
/// so wall time includes waiting for one.
fn cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

#[derive(Default)]
struct Tally {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
    scan: Vec<Duration>,
}

fn meta(round: usize) -> Meta {
    Meta { run_id: "bench".into(), round: round as u32, prompt: "benchmark the checkpoints".into(), step: None }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum()
}

#[tokio::main]
async fn main() {
    let ws = TempDir::new("bench-cp-ws");
    let state = TempDir::new("bench-cp-state");
    let bytes = workspace(&ws);
    println!("workspace: {FILES} followed files, {:.1} MB (plus 2,000 ignored)", bytes as f64 / 1e6);
    let mut cp = Checkpoints::open(Some(state.path()), ws.path(), Limits::default()).unwrap();
    let mut session = Session::default();
    session.push_prompt("benchmark the checkpoints");

    let t = Instant::now();
    cp.take(meta(0), &session).unwrap();
    cp.before_command();
    cp.after_command();
    println!("first scan (the one-time copy of the workspace): {:.0} ms", t.elapsed().as_secs_f64() * 1000.0);

    let mut quiet = Vec::new();
    for round in 1..=ROUNDS {
        grow(&mut session, round);
        let rel = format!("src/m{:02}/f{round}.rs", round % 100);
        let t = Instant::now();
        cp.take(meta(round), &session).unwrap();
        cp.before_write(Path::new(&rel), None);
        let hooks = t.elapsed();
        let content = format!("// rewritten in round {round}\n");
        std::fs::write(ws.join(&rel), &content).unwrap();
        let t = Instant::now();
        cp.after_write(Path::new(&rel), &content);
        quiet.push(hooks + t.elapsed());
    }
    stats("round without a shell command (take + write_file hooks)", quiet);

    // The same rounds seen by a second store whose scans list folders on one thread, in turns (which goes
    // first alternates), so both meet the same load on the shared machine.
    let state1 = TempDir::new("bench-cp-state1");
    let mut single =
        Checkpoints::open(Some(state1.path()), ws.path(), Limits { threads: 1, ..Limits::default() }).unwrap();
    single.take(meta(0), &session).unwrap();
    single.before_command();
    single.after_command();
    let mut tallies: [Tally; 2] = Default::default();
    let first_command_round = ROUNDS + 1;
    for round in first_command_round..first_command_round + ROUNDS {
        grow(&mut session, round);
        let (a, b) = (round * 13 % FILES, round * 17 % FILES);
        let command = format!(
            "echo changed >> src/m{:02}/f{a}.rs && rm src/m{:02}/f{b}.rs && mkdir -p gen/r{round} \
             && echo new > gen/r{round}/n.rs && echo obj > build/o00/new{round}.o",
            a % 100,
            b % 100
        );
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for &i in &order {
            let store = if i == 0 { &mut cp } else { &mut single };
            let (t, c) = (Instant::now(), cpu());
            store.take(meta(round), &session).unwrap();
            store.before_command();
            tallies[i].wall.push(t.elapsed());
            tallies[i].cpu.push(cpu() - c);
        }
        let out = stepwise::host::run_shell(ws.path(), &command, Duration::from_secs(30)).await.unwrap();
        assert!(!out.is_error, "{}", out.text);
        for &i in &order {
            let store = if i == 0 { &mut cp } else { &mut single };
            let (t, c) = (Instant::now(), cpu());
            let changed = store.after_command();
            let (wall, used) = (t.elapsed(), cpu() - c);
            assert_eq!(changed.len(), 3, "{changed:?}");
            *tallies[i].wall.last_mut().unwrap() += wall;
            *tallies[i].cpu.last_mut().unwrap() += used;
            tallies[i].scan.push(wall);
        }
    }
    drop(single);
    for (t, how) in tallies.into_iter().zip(["threads: one per core", "one thread"]) {
        stats(&format!("round around a shell command (take + before_command + after_command), {how}, wall"), t.wall);
        stats(&format!("round around a shell command, {how}, CPU time of the process"), t.cpu);
        stats(&format!("one scan (after_command), {how}, wall"), t.scan);
    }

    let usage = cp.disk_usage();
    println!(
        "disk use after {} rounds: {:.1} MB ({:.2}× the followed files); state directory {:.1} MB",
        2 * ROUNDS + 1,
        usage as f64 / 1e6,
        usage as f64 / bytes as f64,
        dir_size(state.path()) as f64 / 1e6
    );

    let listed = cp.list();
    let target = &listed[listed.len() - 20];
    let t = Instant::now();
    let done = cp.rewind_on_disk(&target.id.clone(), Restore::Both).unwrap();
    println!(
        "rewind of 20 rounds ({} files put back, conversation of {} messages): {:.1} ms",
        done.applied.done.len(),
        done.plan.session.map_or(0, |s| s.messages.len()),
        t.elapsed().as_secs_f64() * 1000.0
    );
    assert!(done.applied.failed.is_empty() && done.plan.conflicts.is_empty());

    drop(cp);
    let t = Instant::now();
    let cp = Checkpoints::open(Some(state.path()), ws.path(), Limits::default()).unwrap();
    println!("reopen after a restart ({} checkpoints): {:.1} ms", cp.list().len(), t.elapsed().as_secs_f64() * 1000.0);
}
