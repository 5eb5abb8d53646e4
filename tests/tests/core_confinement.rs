//! Files the model names stay inside the workspace even when the filesystem changes under the check
//! (a directory swapped for a symlink), and hostile files (FIFOs, huge files, hard links) get clear errors.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stepwise::host::{find_first, resolve, DiskHost, EditContext, FileChange, Host, ResolvedPath};
use stepwise_tests::TempDir;

fn host(ws: &TempDir) -> DiskHost {
    DiskHost::new(ws.path(), None).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_never_leads_outside() {
    let ws = TempDir::new("race-ws");
    let outside = TempDir::new("race-outside");
    outside.write("d/secret.txt", "outside secret");
    ws.write("d/secret.txt", "inside");
    let h = host(&ws);
    let root = h.root().to_path_buf();
    let (d, parked) = (root.join("d"), root.join("d-parked"));
    let target = outside.join("d");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // Swaps `d` between the real directory and a symlink to the outside one, as fast as it can.
    let swapper = std::thread::spawn(move || {
        let mut swaps = 0u64;
        while !flag.load(Ordering::Relaxed) {
            if std::fs::rename(&d, &parked).is_ok() {
                let _ = std::os::unix::fs::symlink(&target, &d);
                std::thread::yield_now();
                let _ = std::fs::remove_file(&d);
                let _ = std::fs::rename(&parked, &d);
                swaps += 1;
            }
        }
        swaps
    });
    let mut leaked = Vec::new();
    for i in 0..300 {
        let name = format!("d/w{i}.txt");
        // Resolved while `d` may be either; used a moment later, when it may be the other.
        if let Ok(p) = resolve(&root, &name) {
            let _ = write(&h, &p, "x").await;
        }
        if let Ok(p) = resolve(&root, "d/secret.txt") {
            if let Ok(text) = h.read_file(&p).await {
                if text.contains("outside") {
                    leaked.push(i);
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    // How often it swapped depends on the machine; the deterministic test below always takes the bad turn.
    let _swaps = swapper.join().unwrap();
    let landed: Vec<String> = std::fs::read_dir(outside.join("d"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "secret.txt")
        .collect();
    assert!(landed.is_empty(), "writes landed outside the workspace: {landed:?}");
    assert!(leaked.is_empty(), "reads leaked the outside file at rounds {leaked:?}");
    assert_eq!(outside.read("d/secret.txt"), "outside secret");
}

#[tokio::test]
async fn a_path_checked_before_a_swap_is_refused_after_it() {
    let ws = TempDir::new("swap-ws");
    let outside = TempDir::new("swap-outside");
    outside.write("d/secret.txt", "outside secret");
    ws.write("d/secret.txt", "inside");
    let h = host(&ws);
    let root = h.root().to_path_buf();
    // Checked while `d` is the workspace's own directory...
    let planted = resolve(&root, "d/planted.txt").unwrap();
    let read = resolve(&root, "d/secret.txt").unwrap();
    // ...and used after it became a symlink to the outside one.
    std::fs::rename(root.join("d"), root.join("d-parked")).unwrap();
    std::os::unix::fs::symlink(outside.join("d"), root.join("d")).unwrap();
    let e = write(&h, &planted, "x").await.unwrap_err();
    assert_eq!(e, "Path escapes workspace: d/planted.txt");
    assert_eq!(h.read_file(&read).await.unwrap_err(), "Path escapes workspace: d/secret.txt");
    let e = edit(&h, &read, "outside", "owned").await.unwrap_err();
    assert_eq!(e, "Path escapes workspace: d/secret.txt");
    assert!(!outside.join("d/planted.txt").exists());
    assert_eq!(outside.read("d/secret.txt"), "outside secret");
}

#[tokio::test]
async fn a_fifo_is_refused_not_waited_on() {
    let ws = TempDir::new("fifo");
    let fifo = ws.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: plain syscall with a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let h = host(&ws);
    let p = resolve(h.root(), "pipe").unwrap();
    let read =
        tokio::time::timeout(Duration::from_secs(10), h.read_file(&p)).await.expect("read_file blocked on a FIFO");
    assert_eq!(read.unwrap_err(), "pipe is a FIFO (named pipe); only regular files can be read");
    let write =
        tokio::time::timeout(Duration::from_secs(10), write(&h, &p, "x")).await.expect("write_file blocked on a FIFO");
    // No reader: refused at open (ENXIO) or by the type check; either way an error naming the file.
    let e = write.unwrap_err();
    assert!(e.starts_with("pipe"), "{e}");
}

#[tokio::test]
async fn a_huge_file_is_refused_without_reading_it() {
    let ws = TempDir::new("huge");
    let f = std::fs::File::create(ws.join("big.log")).unwrap();
    f.set_len(512 * 1024 * 1024).unwrap(); // sparse: no disk used
    let h = host(&ws);
    let p = resolve(h.root(), "big.log").unwrap();
    let e = h.read_file(&p).await.unwrap_err();
    assert_eq!(
        e,
        "big.log is 512 MB; files up to 16 MB are read whole (use the shell, e.g. head or sed, for larger ones)"
    );
}

#[tokio::test]
async fn a_hard_link_is_not_written_through() {
    let ws = TempDir::new("hardlink-ws");
    let outside = TempDir::new("hardlink-outside");
    outside.write("passwd", "root:x:0:0\n");
    std::fs::hard_link(outside.join("passwd"), ws.join("linked")).unwrap();
    let h = host(&ws);
    let p = resolve(h.root(), "linked").unwrap();
    let e = write(&h, &p, "owned\n").await.unwrap_err();
    assert!(e.starts_with("linked has 2 hard links; stepwise does not write through a hard link"), "{e}");
    let e = edit(&h, &p, "root", "evil").await.unwrap_err();
    assert!(e.contains("hard link"), "{e}");
    assert_eq!(outside.read("passwd"), "root:x:0:0\n");
}

#[tokio::test]
async fn new_directories_are_created_beneath_the_workspace() {
    let ws = TempDir::new("mkdirs");
    let h = host(&ws);
    let p = resolve(h.root(), "a/b/c/new.txt").unwrap();
    write(&h, &p, "deep").await.unwrap();
    assert_eq!(ws.read("a/b/c/new.txt"), "deep");
}

#[tokio::test]
async fn read_file_shows_the_head_of_a_huge_file() {
    use serde_json::json;
    use stepwise::agent::AgentConfig;
    use stepwise::tools::{execute, ToolContext};
    let ws = TempDir::new("huge-tool");
    ws.write("big.log", "line1\nline2\nline3\n");
    std::fs::OpenOptions::new().write(true).open(ws.join("big.log")).unwrap().set_len(512 * 1024 * 1024).unwrap();
    let h = host(&ws);
    let plan = stepwise::plan::PlanBoard::new(Default::default(), 0);
    let approvals = Default::default();
    let sandbox = Default::default();
    let background = Default::default();
    let mut cx = ToolContext {
        host: &h,
        plan: &plan,
        approvals: &approvals,
        style: Default::default(),
        bash_timeout: AgentConfig::default().bash_timeout,
        sandbox: &sandbox,
        sandbox_settings: AgentConfig::default().sandbox,
        call_id: "call-1",
        mcp: None,
        mode: Default::default(),
        background: &background,
        intel: None,
        skills: None,
    };
    let out = execute("read_file", &json!({"path": "big.log", "limit": 2}), &mut cx).await;
    assert_eq!(out.text, "line1\nline2\n... (2 more lines)");
    let out = execute("read_file", &json!({"path": "big.log"}), &mut cx).await;
    assert!(!out.is_error);
    assert_eq!(out.text.chars().count(), 50_000, "the seed's cap, read from the head only");
}

/// A whole-file write, applied by the host as the engine would.
async fn write(h: &DiskHost, p: &ResolvedPath, text: &str) -> Result<(), String> {
    h.apply_change(p, &FileChange::whole(p, None, text), &EditContext::default()).await
}

/// An edit, read and applied through the host as the engine does.
async fn edit(h: &DiskHost, p: &ResolvedPath, old: &str, new: &str) -> Result<(), String> {
    let text = h.read_file(p).await?;
    let range = find_first(&text, old).ok_or_else(|| format!("Text not found in {}", p.given))?;
    h.apply_change(p, &FileChange::splice(p, text, range, new), &EditContext::default()).await
}
