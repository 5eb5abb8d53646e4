//! Checkpoints and rewind (issue 20) against a real workspace on disk: the file tools (through `DiskHost`),
//! shell commands (through `run_shell`), several runs, conflicts, partial rewinds, `.git`, the size limit,
//! a restart, and paths that lead outside.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use stepwise::checkpoint::{apply_on_disk, Checkpoints, Limits, Meta, Restore};
use stepwise::host::{find_first, resolve, run_shell, DiskHost, EditContext, FileChange, Host, ResolvedPath};
use stepwise::session::Session;
use stepwise_tests::TempDir;

struct Ws {
    dir: TempDir,
    state: TempDir,
    host: DiskHost,
    cp: Checkpoints,
}

impl Ws {
    fn new(files: &[(&str, &str)]) -> Ws {
        Ws::with_limits(files, Limits::default())
    }

    fn with_limits(files: &[(&str, &str)], limits: Limits) -> Ws {
        let dir = TempDir::new("cp-ws");
        for (p, t) in files {
            dir.write(p, t);
        }
        let state = TempDir::new("cp-state");
        let host = DiskHost::new(dir.path(), None).unwrap();
        let cp = Checkpoints::open(Some(state.path()), dir.path(), limits).unwrap();
        Ws { dir, state, host, cp }
    }

    /// Lets go of the state directory (as a process that ends), keeping a throwaway store in its place.
    fn release(&mut self) {
        let temp = Checkpoints::open(None, self.dir.path(), Limits::default()).unwrap();
        drop(std::mem::replace(&mut self.cp, temp));
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn take(&mut self, run: &str, round: u32, session: &Session) -> String {
        let meta = Meta { run_id: run.into(), round, prompt: format!("prompt of {run}"), step: None };
        self.cp.take(meta, session).unwrap()
    }

    /// `write_file` as the engine does it (`tools/files.rs`): the change computed from the host's text,
    /// with the checkpoint hooks around its application.
    async fn write(&mut self, path: &str, content: &str) {
        let p = resolve(self.root(), path).unwrap();
        let old = self.host.read_file(&p).await.ok();
        self.apply(&p, FileChange::whole(&p, old, content)).await;
    }

    async fn edit(&mut self, path: &str, old: &str, new: &str) {
        let p = resolve(self.root(), path).unwrap();
        let text = self.host.read_file(&p).await.unwrap();
        let range = find_first(&text, old).unwrap();
        self.apply(&p, FileChange::splice(&p, text, range, new)).await;
    }

    async fn apply(&mut self, p: &ResolvedPath, change: FileChange) {
        self.cp.before_write(&p.rel, change.old_text.as_deref());
        self.host.apply_change(p, &change, &EditContext::default()).await.unwrap();
        self.cp.after_write(&p.rel, &change.new_text);
    }

    async fn shell(&mut self, command: &str) -> Vec<PathBuf> {
        self.cp.before_command();
        let out = run_shell(self.root(), command, Duration::from_secs(30)).await.unwrap();
        assert!(!out.is_error, "{command}: {}", out.text);
        let mut changed = self.cp.after_command();
        changed.sort();
        changed
    }

    fn read(&self, p: &str) -> String {
        self.dir.read(p)
    }

    fn exists(&self, p: &str) -> bool {
        self.dir.join(p).symlink_metadata().is_ok()
    }
}

fn session(prompts: &[&str]) -> Session {
    let mut s = Session::default();
    for p in prompts {
        s.push_prompt(p);
        s.messages.push(stepwise::llm::Message {
            role: stepwise::llm::Role::Assistant,
            content: vec![stepwise::llm::Block::Text { text: format!("answer to {p}") }].into(),
        });
    }
    s
}

fn paths(v: &[&str]) -> Vec<PathBuf> {
    v.iter().map(PathBuf::from).collect()
}

#[tokio::test]
async fn tool_edits_are_rewound_with_the_conversation() {
    let mut ws = Ws::new(&[("a.txt", "one\n")]);
    let before = session(&["earlier"]);
    let first = ws.take("r1", 1, &before);
    ws.edit("a.txt", "one", "two").await;
    ws.write("new/dir/b.txt", "created").await;
    let mut during = session(&["earlier", "the task"]);
    during.plan.update(&serde_json::json!([{"id": "1", "text": "Edit a", "status": "in_progress"}])).unwrap();
    let second = ws.take("r1", 2, &during);
    ws.write("a.txt", "three\n").await;

    let list = ws.cp.list();
    assert_eq!(list.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), [first.as_str(), second.as_str()]);
    assert_eq!(list[0].files, paths(&["a.txt", "new/dir/b.txt"]));
    assert_eq!(list[1].files, paths(&["a.txt"]));
    assert_eq!((list[1].run_id.as_str(), list[1].round, list[1].prompt.as_str()), ("r1", 2, "prompt of r1"));
    assert!(list[0].time.ends_with('Z') && list[0].time.len() == 20, "{}", list[0].time);

    // Back to round 2: a.txt as round 1 left it, the conversation and plan of round 2.
    let done = ws.cp.rewind_on_disk(&second, Restore::Both).unwrap();
    assert_eq!(done.applied.done, paths(&["a.txt"]));
    assert_eq!(ws.read("a.txt"), "two\n");
    assert_eq!(done.plan.session.as_ref(), Some(&during));
    assert_eq!(ws.cp.list().len(), 1, "the rewound checkpoint and later ones are dropped");

    // Back to round 1: a.txt as it was, the created file and its folders gone.
    let done = ws.cp.rewind_on_disk(&first, Restore::Both).unwrap();
    assert_eq!(done.plan.files.len(), 2);
    assert!(done.plan.conflicts.is_empty() && done.plan.unrestorable.is_empty());
    assert_eq!(ws.read("a.txt"), "one\n");
    assert!(!ws.exists("new/dir/b.txt") && !ws.exists("new"), "created folders removed");
    assert_eq!(done.plan.session, Some(before));
    assert!(ws.cp.list().is_empty());
    assert!(ws.cp.rewind(&first, Restore::Both, |_| None).unwrap_err().contains("No checkpoint"));
}

#[tokio::test]
async fn a_shell_command_that_modifies_creates_and_deletes_in_subfolders_is_rewound() {
    let mut ws = Ws::new(&[
        (".gitignore", "target/\n"),
        ("src/keep.txt", "keep\n"),
        ("src/lib/mod.txt", "mod\n"),
        ("src/lib/gone.txt", "gone\n"),
        ("target/out.o", "old build\n"),
    ]);
    std::fs::write(ws.dir.join("src/bin.dat"), [0u8, 159, 146, 150, 255]).unwrap();
    std::fs::set_permissions(ws.dir.join("src/lib/gone.txt"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let s = session(&["build"]);
    let id = ws.take("r1", 1, &s);
    let changed = ws
        .shell(
            "echo more >> src/lib/mod.txt && rm src/lib/gone.txt && mkdir -p gen/deep && echo new > gen/deep/made.txt \
             && printf 'text' > src/bin.dat && echo rebuilt > target/out.o && ln -s keep.txt src/link",
        )
        .await;
    assert_eq!(
        changed,
        paths(&["gen/deep/made.txt", "src/bin.dat", "src/lib/gone.txt", "src/lib/mod.txt", "src/link"]),
        "target/ is ignored through .gitignore"
    );
    assert_eq!(ws.cp.list()[0].files, changed);

    let done = ws.cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert!(done.applied.failed.is_empty(), "{:?}", done.applied.failed);
    assert_eq!(ws.read("src/lib/mod.txt"), "mod\n");
    assert_eq!(ws.read("src/lib/gone.txt"), "gone\n");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&ws.dir.join("src/lib/gone.txt").metadata().unwrap().permissions());
    assert_eq!(mode & 0o777, 0o755, "the file's mode comes back too");
    assert_eq!(std::fs::read(ws.dir.join("src/bin.dat")).unwrap(), [0u8, 159, 146, 150, 255]);
    assert!(!ws.exists("gen") && !ws.exists("src/link"));
    assert_eq!(ws.read("src/keep.txt"), "keep\n");
    assert_eq!(ws.read("target/out.o"), "rebuilt\n", "ignored files are not followed");
    assert_eq!(done.plan.session, None, "files only");
}

#[tokio::test]
async fn a_rewind_across_several_runs_undoes_exactly_what_followed() {
    let mut ws = Ws::new(&[("notes.md", "v0\n"), ("lib/x.txt", "x0\n")]);
    let c1 = ws.take("run1", 1, &session(&[]));
    ws.write("notes.md", "v1\n").await;
    let c2 = ws.take("run1", 2, &session(&["task one"]));
    ws.shell("echo x1 > lib/x.txt && echo y1 > lib/y.txt").await;
    let c3 = ws.take("run2", 1, &session(&["task one"]));
    ws.write("notes.md", "v2\n").await;
    let c4 = ws.take("run2", 2, &session(&["task one", "task two"]));
    ws.shell("rm lib/y.txt && echo x2 > lib/x.txt").await;

    let list = ws.cp.list();
    assert_eq!(
        list.iter().map(|i| (i.run_id.as_str(), i.round)).collect::<Vec<_>>(),
        [("run1", 1), ("run1", 2), ("run2", 1), ("run2", 2)]
    );
    assert_eq!(list[0].files, paths(&["lib/x.txt", "lib/y.txt", "notes.md"]));
    assert_eq!(list[3].files, paths(&["lib/x.txt", "lib/y.txt"]));

    // Undo run 2: run 1's work stays.
    let done = ws.cp.rewind_on_disk(&c3, Restore::Both).unwrap();
    assert_eq!(done.plan.session, Some(session(&["task one"])));
    assert_eq!(
        (ws.read("notes.md"), ws.read("lib/x.txt"), ws.read("lib/y.txt")),
        ("v1\n".into(), "x1\n".into(), "y1\n".into())
    );
    assert_eq!(ws.cp.list().iter().map(|i| i.id.clone()).collect::<Vec<_>>(), [c1.clone(), c2]);
    assert!(ws.cp.rewind(&c4, Restore::Both, |_| None).is_err(), "dropped with the rewind");

    // A new round after the rewind, then back to the very start.
    ws.take("run3", 1, &session(&["task one"]));
    ws.write("lib/z.txt", "z\n").await;
    let done = ws.cp.rewind_on_disk(&c1, Restore::Both).unwrap();
    assert!(done.plan.conflicts.is_empty());
    assert_eq!((ws.read("notes.md"), ws.read("lib/x.txt")), ("v0\n".into(), "x0\n".into()));
    assert!(!ws.exists("lib/y.txt") && !ws.exists("lib/z.txt"));
    assert_eq!(done.plan.session, Some(Session::default()));
}

#[tokio::test]
async fn a_file_the_user_changed_afterwards_is_a_conflict_and_left_alone() {
    let mut ws = Ws::new(&[("mine.txt", "base\n"), ("theirs.txt", "base\n"), ("open.txt", "base\n")]);
    let id = ws.take("r", 1, &session(&[]));
    ws.write("mine.txt", "agent\n").await;
    ws.write("theirs.txt", "agent\n").await;
    ws.shell("echo agent > open.txt").await;
    std::fs::write(ws.dir.join("theirs.txt"), "user\n").unwrap();

    // An open buffer the user typed into counts as the file's content.
    let buffer = |p: &Path| (p == Path::new("open.txt")).then(|| "typed in the editor\n".to_string());
    let plan = ws.cp.rewind(&id, Restore::Files, buffer).unwrap();
    assert_eq!(plan.conflicts, paths(&["open.txt", "theirs.txt"]));
    assert_eq!(plan.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>(), paths(&["mine.txt"]));
    assert_eq!(plan.files[0].text(), Some("base\n"));

    let done = ws.cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert_eq!(done.plan.conflicts, paths(&["theirs.txt"]));
    assert_eq!(
        (ws.read("mine.txt"), ws.read("theirs.txt"), ws.read("open.txt")),
        ("base\n".into(), "user\n".into(), "base\n".into())
    );
}

#[tokio::test]
async fn files_only_and_conversation_only_rewinds() {
    let mut ws = Ws::new(&[("a.txt", "a0")]);
    let s1 = session(&["one"]);
    let id = ws.take("r", 1, &s1);
    ws.write("a.txt", "a1").await;
    ws.take("r", 2, &session(&["one", "two"]));

    // Conversation only: the files stay, and so do the checkpoints (the files they describe are still there).
    let plan = ws.cp.rewind(&id, Restore::Conversation, |_| None).unwrap();
    assert!(plan.files.is_empty() && plan.conflicts.is_empty());
    assert_eq!(plan.session, Some(s1.clone()));
    ws.cp.finish(&plan, &[]);
    assert_eq!(ws.read("a.txt"), "a1");
    assert_eq!(ws.cp.list().len(), 2);

    // Files only: the conversation is not part of the plan.
    let done = ws.cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert_eq!(done.plan.session, None);
    assert_eq!(ws.read("a.txt"), "a0");
    assert!(ws.cp.list().is_empty());
}

fn tree(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
            if meta.is_dir() {
                stack.push(e.path());
                out.insert(e.path(), (Vec::new(), mode));
            } else {
                out.insert(e.path(), (std::fs::read(e.path()).unwrap(), mode));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_users_git_is_never_read_nor_written() {
    let mut ws = Ws::new(&[
        ("a.txt", "a\n"),
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/config", "[core]\n\tmarker = git-config-marker-7d1f\n"),
        (".git/objects/ab/cdef", "git-object-marker-7d1f"),
        ("sub/.git", "gitdir: ../.git/modules/sub\n"),
        ("sub/s.txt", "sub-file-content\n"),
    ]);
    let git_before = tree(&ws.dir.join(".git"));
    let id = ws.take("r", 1, &session(&[]));
    let changed = ws.shell("echo b > a.txt && echo s2 > sub/s.txt && echo more > .git/NEW_FILE").await;
    assert_eq!(changed, paths(&["a.txt", "sub/s.txt"]), "nothing in .git is followed");
    // A file tool may write in .git (the user approves it); a rewind still does not write there.
    let p = resolve(ws.root(), ".git/hooks/pre-commit").unwrap();
    ws.cp.before_write(&p.rel, None);
    std::fs::create_dir_all(ws.dir.join(".git/hooks")).unwrap();
    std::fs::write(ws.dir.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    ws.cp.after_write(&p.rel, "#!/bin/sh\n");
    let git_after_run = tree(&ws.dir.join(".git"));

    let done = ws.cp.rewind_on_disk(&id, Restore::Both).unwrap();
    assert_eq!(ws.read("a.txt"), "a\n");
    assert_eq!(done.plan.unrestorable.len(), 1);
    assert_eq!(done.plan.unrestorable[0].0, PathBuf::from(".git/hooks/pre-commit"));
    assert!(done.plan.unrestorable[0].1.contains(".git"), "{}", done.plan.unrestorable[0].1);
    assert_eq!(tree(&ws.dir.join(".git")), git_after_run, ".git untouched by the rewind, byte for byte");
    assert_ne!(git_before, git_after_run);

    let pack = std::fs::read(ws.state.join("objects.pack")).unwrap();
    let found = |m: &[u8]| pack.windows(m.len()).any(|w| w == m);
    assert!(found(b"sub-file-content\n"), "the workspace's files are stored");
    assert!(!found(b"git-config-marker-7d1f") && !found(b"git-object-marker-7d1f"), ".git was read into the store");
}

#[tokio::test]
async fn a_file_over_the_limit_is_reported_not_silently_skipped() {
    let limits = Limits { max_file: 1024, threads: 2, ..Limits::default() };
    let big = "x".repeat(4096);
    let mut ws = Ws::with_limits(&[("big.log", &big), ("small.txt", "s")], limits);
    let id = ws.take("r", 1, &session(&[]));
    let changed = ws.shell("echo tail >> big.log && head -c 5000 /dev/zero > made.bin && echo t > small.txt").await;
    assert_eq!(changed, paths(&["big.log", "made.bin", "small.txt"]));

    let done = ws.cp.rewind_on_disk(&id, Restore::Files).unwrap();
    assert_eq!(done.plan.unrestorable.len(), 1, "{:?}", done.plan.unrestorable);
    let (path, why) = &done.plan.unrestorable[0];
    assert_eq!(path, Path::new("big.log"));
    assert!(why.contains("limit"), "{why}");
    assert_eq!(ws.read("big.log"), format!("{big}tail\n"), "left as it is");
    assert!(!ws.exists("made.bin"), "a created file over the limit is removed (nothing to keep)");
    assert_eq!(ws.read("small.txt"), "s");
}

#[tokio::test]
async fn checkpoints_survive_a_restart() {
    let mut ws = Ws::new(&[("a.txt", "a0\n"), ("d/b.txt", "b0\n")]);
    let s0 = session(&["before"]);
    let id = ws.take("r", 1, &s0);
    ws.write("a.txt", "a1\n").await;
    ws.take("r", 2, &session(&["before", "task"]));
    ws.shell("echo b1 > d/b.txt").await;
    let listed = ws.cp.list();
    let state = ws.state.path().to_path_buf();

    // Another process (another editor window) cannot share the directory while it is held.
    let other = Checkpoints::open(Some(&state), ws.root(), Limits::default()).unwrap();
    assert!(other.list().is_empty(), "a second opener gets a temporary store");
    drop(other);

    ws.release();
    ws.cp = Checkpoints::open(Some(&state), ws.root(), Limits::default()).unwrap();
    assert_eq!(ws.cp.list(), listed);
    let done = ws.cp.rewind_on_disk(&id, Restore::Both).unwrap();
    assert_eq!((ws.read("a.txt"), ws.read("d/b.txt")), ("a0\n".into(), "b0\n".into()));
    assert_eq!(done.plan.session, Some(s0));
    // New checkpoints after the restart do not reuse ids.
    let next = ws.take("r2", 1, &Session::default());
    assert!(next.parse::<u64>().unwrap() > id.parse::<u64>().unwrap() + 1);
}

#[tokio::test]
async fn a_restored_path_that_leads_outside_is_refused() {
    let outside = TempDir::new("cp-outside");
    outside.write("a.txt", "outside, must stay\n");
    let mut ws = Ws::new(&[("sub/a.txt", "inside\n")]);
    let id = ws.take("r", 1, &session(&[]));
    ws.write("sub/a.txt", "agent\n").await;
    let plan = ws.cp.rewind(&id, Restore::Files, |_| None).unwrap();
    assert_eq!(plan.files.len(), 1);

    // Between the plan and its application, the folder becomes a symlink to somewhere else.
    std::fs::rename(ws.dir.join("sub"), ws.dir.join("sub.moved")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.dir.join("sub")).unwrap();
    let applied = apply_on_disk(ws.root(), &plan, |_| false);
    assert!(applied.done.is_empty());
    assert_eq!(applied.failed.len(), 1);
    assert!(applied.failed[0].1.contains("outside the workspace"), "{}", applied.failed[0].1);
    assert_eq!(outside.read("a.txt"), "outside, must stay\n");

    // And a plan computed now reports it instead of planning a write.
    let plan = ws.cp.rewind(&id, Restore::Files, |_| None).unwrap();
    assert!(plan.files.is_empty());
    assert!(plan.unrestorable.iter().any(|(p, why)| p == Path::new("sub/a.txt") && why.contains("outside")));

    // A journal edited to name a path outside is not believed.
    let journal = ws.state.join("journal.jsonl");
    ws.release();
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str(&format!(
        "{{\"t\":\"pre\",\"cp\":{id},\"path\":\"../escape.txt\",\"pre\":{{\"kind\":\"absent\"}}}}\n\
         {{\"t\":\"agent\",\"path\":\"../escape.txt\",\"mark\":{{\"kind\":\"absent\"}}}}\n"
    ));
    std::fs::write(&journal, text).unwrap();
    let cp = Checkpoints::open(Some(ws.state.path()), ws.root(), Limits::default()).unwrap();
    assert_eq!(cp.list()[0].files, paths(&["sub/a.txt"]));
}

#[tokio::test]
async fn the_store_keeps_to_its_limit() {
    let limits = Limits { max_file: 1 << 20, max_total: 64 * 1024, threads: 1, ..Limits::default() };
    let mut ws = Ws::with_limits(&[("seed.txt", "seed")], limits);
    let mut ids = Vec::new();
    // Each round rewrites the file, so each checkpoint keeps 16 KiB of its earlier content.
    for round in 1..=12 {
        ids.push(ws.take("r", round, &session(&[])));
        ws.write("data.txt", &format!("{round:x}").repeat(16 * 1024)).await;
    }
    let listed = ws.cp.list();
    assert!(listed.len() < 12, "the oldest checkpoints were dropped ({} left)", listed.len());
    assert_eq!(listed.last().map(|i| i.id.clone()), ids.last().cloned());
    assert!(ws.cp.disk_usage() <= 64 * 1024 + 32 * 1024, "{} bytes", ws.cp.disk_usage());
    // What is left still rewinds.
    let oldest = &listed[0];
    let round = ids.iter().position(|i| *i == oldest.id).unwrap();
    let done = ws.cp.rewind_on_disk(&oldest.id, Restore::Files).unwrap();
    assert!(done.plan.unrestorable.is_empty() && done.applied.failed.is_empty(), "{done:?}");
    assert_eq!(ws.read("data.txt"), format!("{round:x}").repeat(16 * 1024));
}
