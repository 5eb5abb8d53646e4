//! The checkpoint hooks as the engine uses them: `Tracked` around a host (file changes and shell
//! commands, a cancelled command included), which files a scan follows (ignore rules as ripgrep), and what
//! a path held at the round's start (code intelligence's "before" of a file a command changed).

use std::path::PathBuf;
use std::time::Duration;

use stepwise::checkpoint::{Checkpoints, Limits, Meta, Restore};
use stepwise::host::{resolve, run_shell, DiskHost, EditContext, FileChange, Host};
use stepwise::session::Session;
use stepwise::workspace::Tracked;
use stepwise_tests::TempDir;

fn paths(v: &[&str]) -> Vec<PathBuf> {
    v.iter().map(PathBuf::from).collect()
}

#[tokio::test]
async fn the_tracked_host_records_tool_edits_and_commands_even_a_cancelled_one() {
    let dir = TempDir::new("cp-tracked");
    dir.write("a.txt", "a0\n");
    dir.write("b.txt", "b0\n");
    let state = TempDir::new("cp-tracked-state");
    let disk = DiskHost::new(dir.path(), None).unwrap();
    let cp = std::sync::Mutex::new(Checkpoints::open(Some(state.path()), dir.path(), Limits::default()).unwrap());
    let host = Tracked::new(&disk, Some(&cp));
    let id = cp.lock().unwrap().take(Meta::default(), &Session::default()).unwrap();

    let ctx = EditContext::default();
    let a = resolve(dir.path(), "a.txt").unwrap();
    let edit = FileChange::splice(&a, host.read_file(&a).await.unwrap(), 0..2, "a1");
    host.apply_change(&a, &edit, &ctx).await.unwrap();
    let c = resolve(dir.path(), "c/new.txt").unwrap();
    host.apply_change(&c, &FileChange::whole(&c, None, "new\n"), &ctx).await.unwrap();
    host.run_command("echo b1 > b.txt", Duration::from_secs(30), None).await.unwrap();

    // A command cancelled mid-way (its future dropped, as a cancelled run does): what it did is recorded.
    let fifo_dir = TempDir::new("cp-fifo");
    let fifo = fifo_dir.join("started");
    assert_eq!(unsafe { libc::mkfifo(std::ffi::CString::new(fifo.to_str().unwrap()).unwrap().as_ptr(), 0o600) }, 0);
    let command = format!("echo cancelled > a.txt && echo go > {} && sleep 30", fifo.display());
    let started = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo).unwrap());
    tokio::select! {
        _ = host.run_command(&command, Duration::from_secs(60), None) => panic!("the command ended by itself"),
        said = started => assert_eq!(said.unwrap(), "go\n"),
    }
    assert_eq!(cp.lock().unwrap().list()[0].files, paths(&["a.txt", "b.txt", "c/new.txt"]));

    let done = cp.lock().unwrap().rewind_on_disk(&id, Restore::Files).unwrap();
    assert!(done.plan.conflicts.is_empty() && done.applied.failed.is_empty(), "{done:?}");
    assert_eq!((dir.read("a.txt"), dir.read("b.txt")), ("a0\n".into(), "b0\n".into()));
    assert!(!dir.join("c").exists());
}

#[tokio::test]
async fn ignore_rules_follow_ripgrep_nested_negated_and_from_the_repository_above() {
    // The workspace is a folder inside a repository whose root ignores `*.tmp`.
    let repo = TempDir::new("cp-repo");
    repo.write(".git/HEAD", "ref: refs/heads/main\n");
    repo.write(".gitignore", "*.tmp\n");
    let root = repo.join("ws");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/.gitignore"), "*.log\n!keep.log\n").unwrap();
    std::fs::write(root.join(".ignore"), "scratch/\n").unwrap();
    let state = TempDir::new("cp-repo-state");
    let mut cp = Checkpoints::open(Some(state.path()), &root, Limits::default()).unwrap();
    cp.take(Meta::default(), &Session::default()).unwrap();
    cp.before_command();
    let command = "echo > a.log && echo > sub/a.log && echo > sub/keep.log && echo > x.tmp \
                   && mkdir -p scratch && echo > scratch/s.txt && echo > sub/b.txt";
    let out = run_shell(&root, command, Duration::from_secs(30)).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    let mut changed = cp.after_command();
    changed.sort();
    assert_eq!(changed, paths(&["a.log", "sub/b.txt", "sub/keep.log"]));
}

#[tokio::test]
async fn what_a_path_held_at_the_rounds_start_is_known_for_what_a_command_changed() {
    use stepwise::checkpoint::Held;
    let dir = TempDir::new("cp-held");
    dir.write("a.txt", "a0\n");
    dir.write("big.txt", &"x".repeat(100));
    dir.write("same.txt", "s\n");
    let state = TempDir::new("cp-held-state");
    let mut cp = Checkpoints::open(Some(state.path()), dir.path(), Limits::default()).unwrap();
    cp.take(Meta::default(), &Session::default()).unwrap();
    cp.before_command();
    let command = "echo a1 > a.txt && echo new > n.txt && echo y > big.txt";
    let out = run_shell(dir.path(), command, Duration::from_secs(30)).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    cp.after_command();
    let held = |p: &str, max: u64| cp.held_at_round_start(std::path::Path::new(p), max);
    assert_eq!(held("a.txt", 1000), Some(Held::Bytes(b"a0\n".to_vec())));
    assert_eq!(held("n.txt", 1000), Some(Held::Nothing));
    // Larger than asked for, unchanged since the round's start, outside the workspace: not known.
    assert_eq!(held("big.txt", 99), None);
    assert_eq!(held("big.txt", 100), Some(Held::Bytes(vec![b'x'; 100])));
    assert_eq!(held("same.txt", 1000), None);
    assert_eq!(held("../a.txt", 1000), None);
}
