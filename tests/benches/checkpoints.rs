//! Checkpoint benchmark: `cargo bench -p stepwise-tests --bench checkpoints`.
//!
//! A workspace of 10,000 files (100 folders, 0.5–4 KB each, plus a `.gitignore`d build folder of 2,000
//! more) and a conversation that grows by two messages (a 2 KB tool result and an answer) per round.
//! Measures the checkpoint overhead per round (what the engine adds, not the command itself):
//! - a round without a shell command: `take` plus one `write_file` (`before_write` / `after_write`);
//! - a round around a shell command: `take` plus `before_command` / `after_command` around a command that
//!   modifies, creates and deletes a file;
//! - the first scan (the one-time copy), a rewind of 20 rounds, reopening after a restart, and disk use;
//! - a full walk of the workspace (as the copy, or a scan without notifications, makes it) and the ignore
//!   rules alone on every followed path, with the one-line `.gitignore` and with a longer one of common rules.
//!
//! Targets: under 20 ms median without a command, under 60 ms median around one. Prints the numbers;
//! asserts nothing about timing.
//!
//! Then a workspace of 250,000 files (issue 32: folders of 50, a `.git`, a `.gitignore`d `node_modules`),
//! built once under `target/bench-checkpoints-250k` and reused by later runs. Paired in one run: "before"
//! (`Limits { watch: false, clones: false }`: the copy made by the first command, into the pack, every scan
//! a walk of the workspace) and "after" (the copy made in the background from opening, clones where the
//! file system makes them, scans following the change notifications):
//! the first and later commands' costs, the copy's own time and disk use, and the memory the checkpoints
//! hold for the 250,000 files (counted by this binary's allocator). `-- small` or `-- large` runs one part.
//!
//! `STEPWISE_BENCH_DIR=DIR` puts the large workspace and the stores in DIR (e.g. an XFS made with
//! `mkfs.xfs -m reflink=1`, to measure copy-on-write clones; else under `target`, the stores in the
//! temporary folder). The copy in the background is timed twice, copied into the pack (`clones: false`, as
//! "before") and with clones where the file system makes them ("after"); each store's disk use is read two
//! ways: its allocated blocks (as `du`, a clone's shared blocks counted in full) and its own, the extents
//! no other file shares (FIEMAP): what it adds to the disk; and the free space each copy took (statvfs,
//! which counts inodes and folders too). `STEPWISE_BENCH_CLONE_MIN=N`: the "after" store clones files of N
//! bytes or more (to compare thresholds; default `Limits::default().clone_min`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stepwise::checkpoint::{followed, Checkpoints, Limits, Meta, Restore};
use stepwise::ignore_files::{self, ignored};
use stepwise::llm::{Block, Message, Role};
use stepwise::session::Session;
use stepwise_tests::disk::{extents, free_bytes};
use stepwise_tests::TempDir;

const FILES: usize = 10_000;
const ROUNDS: usize = 60;
const LARGE: usize = 250_000;
const LARGE_ROUNDS: usize = 15;

/// Bytes allocated and not freed, to measure what the checkpoints hold.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator, counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

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
        content: vec![Block::result(format!("t{round}"), format!("test output line {round}\n").repeat(80), false)]
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
    let args: Vec<String> = std::env::args().collect();
    let only = |part: &str| !args.iter().any(|a| a == "small" || a == "large") || args.iter().any(|a| a == part);
    if only("small") {
        small().await;
    }
    if only("large") {
        large().await;
    }
}

async fn small() {
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
    drop(cp);
    walks(ws.path());
}

/// A `.gitignore` of common rules (of every form: names, `*.ext`, classes, anchored, `**`, negations, folders
/// only), of which only `build/` leaves out a file of the workspace.
const COMMON: &str =
    "*.log\nnode_modules/\ntarget/\n**/*.rs.bk\n.DS_Store\n*.py[cod]\n__pycache__/\n/dist\ncoverage/\n\
    *.swp\n.env\n.env.*\n!.env.example\n*.tmp\n.idea/\n.vscode/*\n!.vscode/settings.json\nnpm-debug.log*\n\
    yarn-error.log*\n*.tsbuildinfo\n.cache/\nout/\n*.o\n*.so\n*.dylib\n/vendor/\n**/tmp/**\ndocs/_build/\n*~\n\
    src/**/generated/\nbuild/\n";

/// Full walks of the workspace (21 each) and the rules alone on every followed path, with the one-line
/// `.gitignore` and with `COMMON`: what matching the rules costs a walk.
fn walks(root: &Path) {
    for (what, text) in [("the one-line .gitignore", "build/\n"), ("a 31-line .gitignore", COMMON)] {
        std::fs::write(root.join(".gitignore"), text).unwrap();
        let (mut wall, mut used, mut files) = (Vec::new(), Vec::new(), 0);
        for _ in 0..21 {
            let (t, c) = (Instant::now(), cpu());
            files = followed(root).len();
            wall.push(t.elapsed());
            used.push(cpu() - c);
        }
        stats(&format!("a full walk ({files} files followed), {what}, wall"), wall);
        stats(&format!("a full walk, {what}, CPU time of the process"), used);
        let rules = vec![Arc::new(ignore_files::read(&root.join(".gitignore"), root).unwrap())];
        let paths: Vec<PathBuf> = followed(root).into_iter().map(|(key, _)| root.join(key)).collect();
        let mut alone = Vec::new();
        for _ in 0..21 {
            let t = Instant::now();
            let kept = paths.iter().filter(|p| !ignored(&rules, p, false)).count();
            alone.push(t.elapsed());
            assert_eq!(kept, paths.len());
        }
        stats(&format!("the rules alone on the {} followed paths, {what}", paths.len()), alone);
    }
    std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
}

/// The 250,000-file workspace, made once (it takes minutes on two cores) and kept under `target`: its path
/// and the followed files' bytes.
fn large_workspace() -> (PathBuf, u64) {
    let dir = match bench_dir() {
        Some(d) => d.join("bench-checkpoints-250k"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-checkpoints-250k"),
    };
    let done = dir.join(".complete");
    // A run that stopped half-way left its changes: made again.
    if std::fs::remove_file(dir.join(".in-use")).is_ok() {
        let _ = std::fs::remove_file(&done);
    }
    if let Ok(s) = std::fs::read_to_string(&done) {
        if let Ok(bytes) = s.trim().parse() {
            return (dir, bytes);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let t = Instant::now();
    let mut bytes = 0;
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(".gitignore"), "node_modules/\n.in-use\n").unwrap();
    for i in 0..LARGE {
        let size = 512 + (i * 7919) % 3584;
        let body: String = format!("// file {i}\n").repeat(size / 12 + 1);
        let path = dir.join(format!("src/p{:02}/d{:03}/f{i}.rs", i / 5000, (i / 50) % 100));
        if i % 50 == 0 {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        std::fs::write(&path, &body).unwrap();
        bytes += body.len() as u64;
    }
    for i in 0..2000 {
        let path = dir.join(format!(".git/objects/{:02x}/{i:038x}", i % 256));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("git object {i}")).unwrap();
    }
    for i in 0..20_000 {
        let path = dir.join(format!("node_modules/m{:03}/i{i}.js", i / 50));
        if i % 50 == 0 {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        std::fs::write(&path, format!("module.exports = {i};\n")).unwrap();
    }
    std::fs::write(&done, bytes.to_string()).unwrap();
    println!("(made the 250,000-file workspace in {:.0} s)", t.elapsed().as_secs_f64());
    (dir, bytes)
}

/// The smallest file the "after" store clones: `STEPWISE_BENCH_CLONE_MIN` (bytes; to compare thresholds),
/// else the default.
fn clone_min() -> u64 {
    match std::env::var("STEPWISE_BENCH_CLONE_MIN") {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("STEPWISE_BENCH_CLONE_MIN={v:?} is not a number of bytes")),
        Err(_) => Limits::default().clone_min,
    }
}

/// `STEPWISE_BENCH_DIR`: where the large case runs, workspace and stores.
fn bench_dir() -> Option<PathBuf> {
    std::env::var_os("STEPWISE_BENCH_DIR").map(PathBuf::from)
}

/// A store's folder for the large case: in `STEPWISE_BENCH_DIR` (the same file system as the workspace),
/// else a temporary one. Removed when dropped.
struct StateDir(PathBuf, Option<TempDir>);

impl StateDir {
    fn new(tag: &str) -> StateDir {
        match bench_dir() {
            Some(d) => {
                let p = d.join(format!("{tag}-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(&p).unwrap();
                StateDir(p, None)
            }
            None => {
                let t = TempDir::new(tag);
                StateDir(t.path().to_path_buf(), Some(t))
            }
        }
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        if self.1.is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The type of the file system under `dir`.
fn fs_kind(dir: &Path) -> &'static str {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: zeroed plain data filled by the kernel; a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statfs(c.as_ptr(), &mut st) }, 0);
    match st.f_type {
        0x5846_5342 => "xfs",
        0xEF53 => "ext4",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        _ => "another file system",
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The checkpoints' hooks around `command` (not the command itself): take, before_command, after_command.
async fn around(
    cp: &mut Checkpoints,
    root: &Path,
    round: usize,
    session: &Session,
    command: &str,
) -> (Duration, usize) {
    let t = Instant::now();
    cp.take(meta(round), session).unwrap();
    cp.before_command();
    let hooks = t.elapsed();
    let out = stepwise::host::run_shell(root, command, Duration::from_secs(60)).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    let t = Instant::now();
    let changed = cp.after_command();
    (hooks + t.elapsed(), changed.len())
}

async fn large() {
    let (root, bytes) = large_workspace();
    std::fs::write(root.join(".in-use"), "").unwrap();
    println!(
        "\n250,000-file workspace: {LARGE} followed files, {:.0} MB, in folders of 50 (plus a .git and 20,000 ignored)",
        bytes as f64 / 1e6
    );
    // The files a clone can share (a block or more; the same sizes as `large_workspace` makes).
    let (mut n_big, mut big_bytes) = (0, 0u64);
    for i in 0..LARGE {
        let len = format!("// file {i}\n").len() * ((512 + (i * 7919) % 3584) / 12 + 1);
        if len >= 4096 {
            (n_big, big_bytes) = (n_big + 1, big_bytes + len as u64);
        }
    }
    println!("of which {n_big} files of 4 KB or more, {:.0} MB", big_bytes as f64 / 1e6);
    let mut session = Session::default();
    session.push_prompt("benchmark the checkpoints");

    // The copy in the background from opening, measured alone: first copied into the pack (as before
    // clones), then (the store "after") with clones where the file system makes them.
    let mb = |b: u64| b as f64 / 1e6;
    let copied = StateDir::new("bench-cp-large-copied");
    let free = free_bytes(copied.path());
    let (t, c) = (Instant::now(), cpu());
    let mut cp = Checkpoints::open(Some(copied.path()), &root, Limits { clones: false, ..Limits::default() }).unwrap();
    cp.copy_in_background();
    cp.wait_for_copy();
    let (copy_time, copy_cpu) = (t.elapsed(), cpu() - c);
    assert!(cp.copy_ready() && cp.clones().is_none());
    drop(cp);
    let added = free - free_bytes(copied.path());
    let (allocated, own) = own_disk(copied);
    println!(
        "copy in the background (low priority), copied into the pack: {:.1} s ({:.1} s CPU); {:.0} MB allocated, \
         {:.0} MB its own, {:.0} MB less free space (statvfs), {:.2}x the followed files",
        copy_time.as_secs_f64(),
        copy_cpu.as_secs_f64(),
        mb(allocated),
        mb(own),
        mb(added),
        added as f64 / bytes as f64
    );

    let state_a = StateDir::new("bench-cp-large-after");
    let fs = fs_kind(state_a.path());
    let clone_min = clone_min();
    let live = LIVE.load(Ordering::Relaxed);
    let free = free_bytes(state_a.path());
    let (t, c) = (Instant::now(), cpu());
    let mut after = Checkpoints::open(Some(state_a.path()), &root, Limits { clone_min, ..Limits::default() }).unwrap();
    after.copy_in_background();
    after.wait_for_copy();
    let (copy_time, copy_cpu) = (t.elapsed(), cpu() - c);
    let held = LIVE.load(Ordering::Relaxed) - live;
    let added = free - free_bytes(state_a.path());
    assert!(after.copy_ready());
    println!("stores on {fs}; clones: {:?}, of files of {clone_min} bytes or more", after.clones());
    println!(
        "copy in the background (low priority), clones where the file system can: {:.1} s ({:.1} s CPU); \
         {:.0} MB less free space (statvfs), {:.2}x the followed files",
        copy_time.as_secs_f64(),
        copy_cpu.as_secs_f64(),
        mb(added),
        added as f64 / bytes as f64
    );
    println!("memory the checkpoints hold for the copy's index: {:.1} MB", held as f64 / 1e6);
    println!("folders watched: {}", after.watched_dirs());

    let first = "echo first >> src/p00/d000/f0.rs";
    let (t_after, n) = around(&mut after, &root, 0, &session, first).await;
    assert_eq!(n, 1);
    // Before: the first command makes the copy, into the pack (and every scan walks).
    let state_b = StateDir::new("bench-cp-large-before");
    let limits = Limits { watch: false, clones: false, ..Limits::default() };
    let mut before = Checkpoints::open(Some(state_b.path()), &root, limits).unwrap();
    let (t_before, n) = around(&mut before, &root, 0, &session, "echo first >> src/p00/d000/f1.rs").await;
    assert_eq!(n, 1);
    // The other store saw f1 change: not its command's, caught up by its next scan.
    println!("first shell command (checkpoint overhead): before {:.0} ms, after {:.1} ms", ms(t_before), ms(t_after));

    let mut times: [Vec<Duration>; 2] = Default::default();
    for round in 1..=LARGE_ROUNDS {
        grow(&mut session, round);
        let (a, b) = (round * 7919 % LARGE, round * 104_729 % LARGE);
        let file = |i: usize| format!("src/p{:02}/d{:03}/f{i}.rs", i / 5000, (i / 50) % 100);
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for &i in &order {
            let command = format!(
                "echo changed >> {} && rm -f {} && mkdir -p gen/r{round}-{i} && echo new > gen/r{round}-{i}/n.rs \
                 && echo ignored > node_modules/m000/new{round}-{i}.js",
                file(a + i),
                file(b + i),
            );
            let store = if i == 0 { &mut before } else { &mut after };
            let (t, n) = around(store, &root, round, &session, &command).await;
            assert_eq!(n, 3, "round {round}, {}", ["before", "after"][i]);
            times[i].push(t);
        }
        assert!(matches!(after.last_scan(), Some(stepwise::checkpoint::ScanKind::Named(_))), "{:?}", after.last_scan());
    }
    for (t, how) in times.into_iter().zip(["before (every scan walks the workspace)", "after (change notifications)"]) {
        stats(&format!("later shell command (take + before_command + after_command), {how}"), t);
    }
    // Put the workspace back as it was for the next run.
    for cp in [&mut after, &mut before] {
        let first = cp.list()[0].id.clone();
        let done = cp.rewind_on_disk(&first, Restore::Files).unwrap();
        assert!(done.applied.failed.is_empty() && done.plan.conflicts.is_empty(), "{:?}", done.plan.conflicts);
    }
    let _ = std::fs::remove_dir_all(root.join("gen"));
    for e in std::fs::read_dir(root.join("node_modules/m000")).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("new") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    std::fs::remove_file(root.join(".in-use")).unwrap();
    // What each store adds to the disk, with its 15 rounds (a few KB).
    for (cp, dir, how) in [(after, state_a, "after (clones)"), (before, state_b, "before (copied into the pack)")] {
        drop(cp);
        let (allocated, own) = own_disk(dir);
        println!(
            "store {how}: {:.0} MB allocated, {:.0} MB its own ({:.2}x the followed files)",
            mb(allocated),
            mb(own),
            own as f64 / bytes as f64
        );
    }
}

/// What a closed store takes on disk: its allocated blocks (a clone's shared blocks counted in full, as
/// `du` does), and its own, the extents it shares with no other file (FIEMAP): what it adds to the disk.
fn own_disk(dir: StateDir) -> (u64, u64) {
    fn walk(dir: &Path, out: &mut (u64, u64)) {
        use std::os::unix::fs::MetadataExt;
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                walk(&e.path(), out);
            } else {
                out.0 += m.blocks() * 512;
                out.1 += extents(&e.path()).iter().filter(|x| !x.shared).map(|x| x.length).sum::<u64>();
            }
        }
    }
    let mut out = (0, 0);
    walk(dir.path(), &mut out);
    out
}
