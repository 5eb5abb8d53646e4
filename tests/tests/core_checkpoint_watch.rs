//! Checkpoints at scale (issue 32): scans that look only where the change notifications point, the full
//! scan when they cannot be trusted (a command that changes 10,000 files at once overflows them), a change
//! made between commands, the copy made in the background, and watches released with the checkpoints.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use stepwise::checkpoint::{Checkpoints, Limits, Restore, ScanKind};
use stepwise_tests::checkpoint_steps::{shell, take};
use stepwise_tests::TempDir;

fn open(ws: &TempDir, state: &TempDir, limits: Limits) -> Checkpoints {
    Checkpoints::open(Some(state.path()), ws.path(), limits).unwrap()
}

fn paths(v: &[&str]) -> Vec<PathBuf> {
    v.iter().map(PathBuf::from).collect()
}

/// Every file and symlink under `dir` (not `.git`) with its content and mode.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = e.path().symlink_metadata().unwrap();
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_symlink() {
                out.insert(rel, (std::fs::read_link(e.path()).unwrap().into_os_string().into_encoded_bytes(), 0));
            } else {
                out.insert(rel, (std::fs::read(e.path()).unwrap(), meta.permissions().mode() & 0o777));
            }
        }
    }
    out
}

fn named(cp: &Checkpoints) -> bool {
    matches!(cp.last_scan(), Some(ScanKind::Named(_)))
}

/// The same commands, recorded and rewound exactly, whether the scans follow the notifications or walk.
#[tokio::test]
async fn commands_in_subfolders_are_recorded_and_rewound_exactly_with_and_without_notifications() {
    for watch in [true, false] {
        let ws = TempDir::new("cpw-ws");
        let state = TempDir::new("cpw-state");
        ws.write(".gitignore", "node_modules/\n*.log\n");
        for (p, t) in [("src/a.rs", "a\n"), ("src/deep/b.rs", "b\n"), ("docs/c.md", "c\n"), ("keep.txt", "k\n")] {
            ws.write(p, t);
        }
        ws.write("node_modules/dep/index.js", "dep\n");
        let mut cp = open(&ws, &state, Limits { watch, ..Limits::default() });
        let first = take(&mut cp, 1);
        assert!(shell(&mut cp, ws.path(), "true").await.is_empty());
        let before = tree(ws.path());

        let id = take(&mut cp, 2);
        let changed = shell(
            &mut cp,
            ws.path(),
            "echo a2 >> src/a.rs && rm src/deep/b.rs && mkdir -p gen/x/y && echo n > gen/x/y/n.rs \
             && mv docs moved && echo ignored > node_modules/dep/new.js && echo l > x.log \
             && ln -s keep.txt link",
        )
        .await;
        assert_eq!(
            changed,
            paths(&["docs/c.md", "gen/x/y/n.rs", "link", "moved/c.md", "src/a.rs", "src/deep/b.rs"]),
            "watch: {watch}"
        );
        if watch {
            assert!(named(&cp), "{:?}", cp.last_scan());
            assert!(cp.watched_dirs() >= 6, "the workspace, src, src/deep, gen/x/y and moved: {}", cp.watched_dirs());
        } else {
            assert!(matches!(cp.last_scan(), Some(ScanKind::Full(_))), "{:?}", cp.last_scan());
        }
        // A second command in the new folders: they are followed (watched) too.
        take(&mut cp, 3);
        let changed = shell(&mut cp, ws.path(), "echo m >> moved/c.md && echo n2 > gen/x/y/n2.rs").await;
        assert_eq!(changed, paths(&["gen/x/y/n2.rs", "moved/c.md"]), "watch: {watch}");
        assert_eq!(named(&cp), watch);

        let done = cp.rewind_on_disk(&id, Restore::Files).unwrap();
        assert!(done.plan.conflicts.is_empty() && done.applied.failed.is_empty(), "{done:?}");
        let mut now = tree(ws.path());
        // What the ignore rules leave out is not the checkpoints' to put back.
        assert!(now.remove(Path::new("node_modules/dep/new.js")).is_some() && now.remove(Path::new("x.log")).is_some());
        assert_eq!(now, before, "watch: {watch}");
        assert!(!ws.join("gen").exists() && !ws.join("moved").exists(), "created folders are removed");
        cp.rewind_on_disk(&first, Restore::Files).unwrap();
    }
}

/// 10,000 files changed by one command: more events than the kernel queues (or than a scan looks at one
/// by one), so the scan walks everything, and still records each change exactly; the next one is back on
/// the notifications.
#[tokio::test]
async fn a_command_changing_ten_thousand_files_at_once_is_recorded_exactly() {
    let ws = TempDir::new("cpw-big");
    let state = TempDir::new("cpw-big-state");
    for i in 0..10_000 {
        let p = ws.join(&format!("d{:03}/f{i}.txt", i / 50));
        if i % 50 == 0 {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        }
        std::fs::write(p, format!("file {i}\n")).unwrap();
    }
    let mut cp = open(&ws, &state, Limits::default());
    take(&mut cp, 1);
    shell(&mut cp, ws.path(), "true").await;
    let before = tree(ws.path());
    let id = take(&mut cp, 2);
    let changed = shell(&mut cp, ws.path(), "for f in d*/f*.txt; do echo changed >> \"$f\"; done").await;
    assert_eq!(changed.len(), 10_000);
    let all: HashSet<PathBuf> = before.keys().cloned().collect();
    assert_eq!(changed.iter().cloned().collect::<HashSet<_>>(), all);
    match cp.last_scan() {
        Some(ScanKind::Full(why)) => assert!(why.contains("overflow") || why.contains("more than"), "{why}"),
        other => panic!("10,000 changes should overflow the notifications: {other:?}"),
    }
    take(&mut cp, 3);
    assert_eq!(shell(&mut cp, ws.path(), "echo again >> d007/f350.txt").await, paths(&["d007/f350.txt"]));
    assert!(named(&cp), "{:?}", cp.last_scan());

    let done = cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert_eq!(done.applied.done.len(), 10_000);
    assert!(done.plan.conflicts.is_empty() && done.applied.failed.is_empty());
    assert_eq!(tree(ws.path()), before);
}

/// A process still writing after the command ended (as one a command left running) changes a file between
/// two commands: the next scan sees it, so it is not taken for the next command's change, and a rewind of
/// that command puts back what the process wrote, not what was there before.
#[tokio::test]
async fn a_change_made_after_a_command_ended_is_seen_at_the_next_scan() {
    let ws = TempDir::new("cpw-late");
    let state = TempDir::new("cpw-late-state");
    ws.write("sub/a.txt", "a0\n");
    ws.write("sub/b.txt", "b0\n");
    let mut cp = open(&ws, &state, Limits::default());
    take(&mut cp, 1);
    assert_eq!(shell(&mut cp, ws.path(), "echo a1 > sub/a.txt").await, paths(&["sub/a.txt"]));

    // Another process, after the command's scan.
    let late = std::process::Command::new("sh")
        .args(["-c", "echo late > sub/a.txt && echo late > sub/b.txt && echo c > sub/c.txt"])
        .current_dir(ws.path())
        .status()
        .unwrap();
    assert!(late.success());

    let id = take(&mut cp, 2);
    let changed = shell(&mut cp, ws.path(), "echo a2 > sub/a.txt").await;
    assert_eq!(changed, paths(&["sub/a.txt"]), "the late changes are not this command's");
    assert!(named(&cp), "{:?}", cp.last_scan());
    cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert_eq!(ws.read("sub/a.txt"), "late\n");
    assert_eq!((ws.read("sub/b.txt"), ws.read("sub/c.txt")), ("late\n".into(), "c\n".into()));
}

/// The copy is made in the background when asked (at open), before any command; a command that comes
/// while it is being made finishes it and is recorded exactly.
#[tokio::test]
async fn the_copy_is_made_in_the_background_and_a_command_during_it_is_recorded() {
    let ws = TempDir::new("cpw-copy");
    let state = TempDir::new("cpw-copy-state");
    for i in 0..600 {
        ws.write(&format!("m{}/f{i}.txt", i % 12), &format!("copied-in-background-{i}\n"));
    }
    let mut cp = open(&ws, &state, Limits::default());
    assert!(!cp.copy_ready());
    cp.copy_in_background();
    cp.wait_for_copy();
    assert!(cp.copy_ready(), "the copy is complete without any command");
    let pack = std::fs::read(state.join("objects.pack")).unwrap();
    let stored = b"copied-in-background-599\n";
    assert!(pack.windows(stored.len()).any(|w| w == stored), "the files are in the store");
    let id = take(&mut cp, 1);
    assert_eq!(shell(&mut cp, ws.path(), "echo x > m3/f3.txt").await, paths(&["m3/f3.txt"]));
    assert!(named(&cp), "{:?}", cp.last_scan());
    cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert_eq!(ws.read("m3/f3.txt"), "copied-in-background-3\n");
    drop(cp);

    // A command right after the copy started: it finishes the copy first.
    let state = TempDir::new("cpw-copy-state2");
    let mut cp = open(&ws, &state, Limits::default());
    cp.copy_in_background();
    let id = take(&mut cp, 1);
    let changed = shell(&mut cp, ws.path(), "echo y > m5/f5.txt && rm m7/f7.txt").await;
    assert_eq!(changed, paths(&["m5/f5.txt", "m7/f7.txt"]));
    cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert_eq!(
        (ws.read("m5/f5.txt"), ws.read("m7/f7.txt")),
        ("copied-in-background-5\n".into(), "copied-in-background-7\n".into())
    );
}

/// The inodes this process holds an inotify watch on (`/proc/self/fdinfo`).
fn watched_inodes() -> HashSet<u64> {
    let mut out = HashSet::new();
    for fd in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let is_inotify = std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify"));
        let Ok(info) = std::fs::read_to_string(Path::new("/proc/self/fdinfo").join(fd.file_name())) else { continue };
        if !is_inotify {
            continue;
        }
        for line in info.lines().filter(|l| l.starts_with("inotify wd:")) {
            let ino = line.split_whitespace().find_map(|w| w.strip_prefix("ino:"));
            if let Some(ino) = ino.and_then(|i| u64::from_str_radix(i, 16).ok()) {
                out.insert(ino);
            }
        }
    }
    out
}

fn inode(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).unwrap().ino()
}

#[tokio::test]
async fn watches_follow_the_folders_and_are_released_with_the_checkpoints() {
    let ws = TempDir::new("cpw-leak");
    let state = TempDir::new("cpw-leak-state");
    ws.write(".gitignore", "build/\n");
    ws.write("a/one.txt", "1\n");
    ws.write("a/b/two.txt", "2\n");
    ws.write("build/out.o", "o\n");
    ws.write(".git/HEAD", "ref\n");
    let mut cp = open(&ws, &state, Limits::default());
    take(&mut cp, 1);
    shell(&mut cp, ws.path(), "mkdir c && echo 3 > c/three.txt && rm -r a/b").await;
    let held = watched_inodes();
    for d in ["", "a", "c"] {
        assert!(held.contains(&inode(&ws.join(d))), "{d:?} is watched");
    }
    for d in ["build", ".git"] {
        assert!(!held.contains(&inode(&ws.join(d))), "{d} is not watched (ignored, never read)");
    }
    assert_eq!(cp.watched_dirs(), 3, "the workspace, a and c; a/b's watch went with it");
    let ours = [inode(ws.path()), inode(&ws.join("a")), inode(&ws.join("c"))];
    drop(cp);
    let held = watched_inodes();
    assert!(ours.iter().all(|i| !held.contains(i)), "watches released with the checkpoints");
}
