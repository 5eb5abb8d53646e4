//! The workspace's copy as copy-on-write clones (issue 32): on a file system that clones (XFS made with
//! reflink), a file of a block or more is stored as a clone sharing the workspace file's blocks, so the copy
//! costs next to no disk, and a rewind still puts back exactly what a command changed, also after a
//! compaction and a restart. Where clones are refused (ext4, tmpfs, the store on another device) the store
//! copies, once told, and everything holds the same.
//!
//! The XFS tests need a mounted file system: `tests/cow/test.sh` (part of `tests/run-all.sh`) makes one on a
//! loop device and runs them with `--ignored` and `STEPWISE_COW_DIR` set, where a missing one is a failure.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use stepwise::checkpoint::{Checkpoints, Limits, Restore};
use stepwise_tests::checkpoint_steps::{shell, take};
use stepwise_tests::disk::{extents, free_bytes};
use stepwise_tests::TempDir;

/// A folder removed when dropped, under any parent (`TempDir` is always in the temporary folder).
struct Scratch(PathBuf);

impl Scratch {
    fn new(parent: &Path, tag: &str) -> Scratch {
        let dir = parent.join(format!("stepwise-cow-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(std::fs::canonicalize(dir).unwrap())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One test at a time on the copy-on-write file system: they read its free space.
static COW: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The copy-on-write file system `tests/cow/test.sh` mounted, for this test alone until the guard drops.
async fn cow_dir() -> (PathBuf, tokio::sync::MutexGuard<'static, ()>) {
    let guard = COW.lock().await;
    let v = std::env::var("STEPWISE_COW_DIR")
        .unwrap_or_else(|_| panic!("STEPWISE_COW_DIR is not set: run these tests through tests/cow/test.sh"));
    let p = PathBuf::from(v);
    assert!(p.is_dir(), "STEPWISE_COW_DIR={} is not a folder", p.display());
    (p, guard)
}

/// Bytes that do not repeat (nothing a file system could deduplicate or compress).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A workspace of `big` files of 4 MB (in a subfolder) and 100 small ones; the big files' paths.
fn workspace(root: &Path, big: usize) -> Vec<PathBuf> {
    for i in 0..100 {
        let p = root.join(format!("src/m{}/f{i}.rs", i % 10));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("// small file {i}\n").repeat(20)).unwrap();
    }
    std::fs::create_dir_all(root.join("assets/deep")).unwrap();
    (0..big)
        .map(|i| {
            let p = root.join(format!("assets/deep/big{i}.bin"));
            std::fs::write(&p, noise(i as u64 + 1, 4 << 20)).unwrap();
            p
        })
        .collect()
}

/// Every file under `dir` with its content.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path().strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

/// Whether the file system under `dir` clones (the same `FICLONE` the store uses, on two files of ours).
fn can_clone(dir: &Path) -> bool {
    let (a, b) = (dir.join("probe-a"), dir.join("probe-b"));
    std::fs::write(&a, noise(9, 8192)).unwrap();
    let src = std::fs::File::open(&a).unwrap();
    let dst = std::fs::File::create(&b).unwrap();
    // SAFETY: two valid fds.
    let ok = unsafe { libc::ioctl(dst.as_raw_fd(), libc::FICLONE, src.as_raw_fd()) } == 0;
    let _ = (std::fs::remove_file(a), std::fs::remove_file(b));
    ok
}

/// Every file in the store's folder of clones.
fn clone_files(state: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for fan in std::fs::read_dir(state.join("objects")).into_iter().flatten().flatten() {
        out.extend(std::fs::read_dir(fan.path()).into_iter().flatten().flatten().map(|e| e.path()));
    }
    out
}

/// A command that writes into a big file in place, deletes one, appends to one and adds a small file; a
/// rewind puts back exactly what was there.
async fn change_and_rewind(cp: &mut Checkpoints, root: &Path, round: u32) {
    let before = tree(root);
    let id = take(cp, round);
    let changed = shell(
        cp,
        root,
        "printf XYZ | dd of=assets/deep/big0.bin bs=1 seek=5000 conv=notrunc status=none \
         && rm assets/deep/big1.bin && printf more >> assets/deep/big2.bin && echo new > src/m0/new.rs",
    )
    .await;
    let expect: Vec<PathBuf> =
        ["assets/deep/big0.bin", "assets/deep/big1.bin", "assets/deep/big2.bin", "src/m0/new.rs"]
            .map(PathBuf::from)
            .to_vec();
    assert_eq!(changed, expect);
    let done = cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert!(done.applied.failed.is_empty() && done.plan.conflicts.is_empty(), "{:?}", done.applied.failed);
    assert!(done.plan.unrestorable.is_empty(), "{:?}", done.plan.unrestorable);
    assert!(tree(root) == before, "the rewind put back exactly what was there");
}

/// On the normal temporary folder (ext4 or tmpfs here, which do not clone): the store is told once,
/// copies, and a rewind is exact.
#[tokio::test]
async fn where_clones_are_refused_the_store_copies_and_rewinds_exactly() {
    let ws = TempDir::new("cow-ws");
    let state = TempDir::new("cow-state");
    workspace(ws.path(), 3);
    let mut cp = Checkpoints::open(Some(state.path()), ws.path(), Limits::default()).unwrap();
    assert_eq!(cp.clones(), None, "not tried before a file is stored");
    cp.copy_in_background();
    cp.wait_for_copy();
    assert!(cp.copy_ready());
    let clones = can_clone(state.path());
    assert_eq!(cp.clones(), Some(clones), "the store took the path the file system allows");
    if !clones {
        assert!(clone_files(state.path()).is_empty());
        assert!(cp.disk_usage() >= 12 << 20, "the three 4 MB files are in the pack");
    }
    change_and_rewind(&mut cp, ws.path(), 1).await;
}

/// On XFS with reflink: the copy shares the big files' blocks (FIEMAP), free space barely moves while 24 MB
/// are stored, a rewind is exact, and a compaction and a restart keep it so.
#[tokio::test]
#[ignore = "needs a copy-on-write file system: tests/cow/test.sh"]
async fn on_a_copy_on_write_file_system_the_copy_shares_the_workspace_blocks() {
    let (cow, _alone) = cow_dir().await;
    let ws = Scratch::new(&cow, "ws");
    let state = Scratch::new(&cow, "state");
    let big = workspace(&ws.0, 6);
    let free = free_bytes(&cow);

    let mut cp = Checkpoints::open(Some(&state.0), &ws.0, Limits::default()).unwrap();
    cp.copy_in_background();
    cp.wait_for_copy();
    assert!(cp.copy_ready());
    assert_eq!(cp.clones(), Some(true), "the store clones on XFS with reflink");
    let used = free.saturating_sub(free_bytes(&cow));
    assert!(used < 2 << 20, "the copy of 24 MB of big files took {used} bytes of disk");
    assert!(cp.disk_usage() >= 24 << 20, "the limit still counts the clones whole");

    // Each big file's blocks are the very blocks of a clone in the store.
    let stored: BTreeSet<(u64, u64)> =
        clone_files(&state.0).iter().flat_map(|p| extents(p)).map(|e| (e.physical, e.length)).collect();
    assert_eq!(clone_files(&state.0).len(), 6, "one clone per big file; the small files are packed");
    for p in &big {
        let ext = extents(p);
        assert!(!ext.is_empty());
        for e in ext {
            let at = e.physical;
            assert!(
                e.shared && stored.contains(&(at, e.length)),
                "{}: extent at {at} not shared with the store",
                p.display()
            );
        }
    }

    change_and_rewind(&mut cp, &ws.0, 1).await;

    // A compaction (a reset drops the checkpoints) keeps the clones the copy needs, still shared.
    cp.clear();
    let kept = extents(&big[3]);
    assert!(kept.iter().all(|e| e.shared), "still shared after compacting");
    drop(cp);

    // After a restart the clones are found again and read back exactly.
    let mut cp = Checkpoints::open(Some(&state.0), &ws.0, Limits::default()).unwrap();
    change_and_rewind(&mut cp, &ws.0, 1).await;
}

/// The workspace on XFS and the store elsewhere (another device: `EXDEV`): copied, exact.
#[tokio::test]
#[ignore = "needs a copy-on-write file system: tests/cow/test.sh"]
async fn a_store_on_another_device_than_the_workspace_copies() {
    let (cow, _alone) = cow_dir().await;
    let ws = Scratch::new(&cow, "ws-other");
    let state = TempDir::new("cow-other-state");
    workspace(&ws.0, 3);
    let mut cp = Checkpoints::open(Some(state.path()), &ws.0, Limits::default()).unwrap();
    cp.copy_in_background();
    cp.wait_for_copy();
    assert_eq!(cp.clones(), Some(false), "a clone across devices is refused, and the store copies");
    assert!(clone_files(state.path()).is_empty());
    change_and_rewind(&mut cp, &ws.0, 1).await;
}

/// On XFS with reflink a small file is a clone too (`loose::CLONE_MIN`, 513 bytes): it shares the block
/// its workspace file already takes, so it costs an inode and a name, not its bytes. 5,000 files of
/// 0.7–3.6 KB (11 MB) copied into the pack take at least their bytes of free space (statvfs: inodes and
/// folders counted); as clones, under half of it. Files of 512 bytes or less stay packed. A rewind of a
/// changed, a deleted and a new small file is exact.
#[tokio::test]
#[ignore = "needs a copy-on-write file system: tests/cow/test.sh"]
async fn on_a_copy_on_write_file_system_small_files_are_clones_and_cost_little_disk() {
    let (cow, _alone) = cow_dir().await;
    let ws = Scratch::new(&cow, "ws-small");
    let (copied, state) = (Scratch::new(&cow, "state-small-copied"), Scratch::new(&cow, "state-small"));
    let mut bytes = 0u64;
    for i in 0..5000usize {
        let p = ws.0.join(format!("src/d{:03}/f{i}.txt", i / 50));
        if i % 50 == 0 {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        }
        let len = 700 + i * 977 % 2900;
        std::fs::write(p, noise(i as u64 + 100, len)).unwrap();
        bytes += len as u64;
    }
    std::fs::create_dir_all(ws.0.join("tiny")).unwrap();
    for i in 0..40usize {
        std::fs::write(ws.0.join(format!("tiny/t{i}.txt")), noise(i as u64 + 9000, 300 + i * 5)).unwrap();
    }
    std::fs::write(ws.0.join("tiny/at-the-limit.txt"), noise(77, 512)).unwrap();

    let free = free_bytes(&cow);
    let mut cp = Checkpoints::open(Some(&copied.0), &ws.0, Limits { clones: false, ..Limits::default() }).unwrap();
    cp.copy_in_background();
    cp.wait_for_copy();
    drop(cp);
    let used_copied = free.saturating_sub(free_bytes(&cow));
    assert!(used_copied >= bytes, "copied into the pack, {bytes} bytes of files took only {used_copied} of disk");

    let free = free_bytes(&cow);
    let mut cp = Checkpoints::open(Some(&state.0), &ws.0, Limits::default()).unwrap();
    cp.copy_in_background();
    cp.wait_for_copy();
    assert_eq!(cp.clones(), Some(true));
    let used = free.saturating_sub(free_bytes(&cow));
    assert!(used < bytes / 2, "as clones, {bytes} bytes of small files took {used} bytes of disk");
    assert_eq!(clone_files(&state.0).len(), 5000, "every file over 512 bytes is a clone, the others packed");

    let before = tree(&ws.0);
    let id = take(&mut cp, 1);
    let changed =
        shell(&mut cp, &ws.0, "echo more >> src/d000/f0.txt && rm src/d001/f50.txt && echo n > tiny/n.txt").await;
    assert_eq!(changed, ["src/d000/f0.txt", "src/d001/f50.txt", "tiny/n.txt"].map(PathBuf::from).to_vec());
    let done = cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert!(done.applied.failed.is_empty() && done.plan.conflicts.is_empty(), "{:?}", done.applied.failed);
    assert!(tree(&ws.0) == before, "the rewind put back exactly what was there");
}
