//! Worktree sessions (issue 47) on bad input, each a clear message and nothing of the folder lost: a
//! worktree deleted by hand while its session exists, a branch `stepwise/<session>` that exists already, a
//! folder that is a git worktree itself, a dirty index (staged changes), a repository with a submodule.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(20);

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(["-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// A repository with one commit of `files`.
fn repository(dir: &Path, files: &[(&str, &str)]) {
    git(dir, &["init", "-q"]);
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "start"]);
}

async fn worktree_session(ed: &TestEditor, ws: &str) -> (String, PathBuf) {
    let made = ed.execute("stepwise.newSession", json!({"workspace": ws, "worktree": true})).await;
    let made = made.unwrap_or_else(|e| panic!("newSession: {}", e.message));
    (made["session"].as_str().unwrap().to_string(), PathBuf::from(made["worktree"].as_str().unwrap()))
}

fn texts(conversation: &Value) -> Vec<String> {
    let entries = conversation["entries"].as_array().cloned().unwrap_or_default();
    entries.iter().filter_map(|e| e["text"].as_str().map(str::to_string)).collect()
}

fn editor(dir: &TempDir, state: &TempDir, mock: &MockModel) -> EditorBuilder {
    auto_editor(ClientPreset::Bare, dir, state, mock).ignore(&[
        "stepwise/review",
        "stepwise/checkpoint",
        "stepwise/sessions",
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_deleted_by_hand_is_said_by_apply_and_a_run_and_its_conversation_survives() {
    let (dir, state) = folder_and_state("wt-deleted");
    repository(dir.path(), &[("a.txt", "one\n")]);
    let mock = MockModel::start(vec![]).await;
    mock.route(
        "change a",
        vec![Step::tool("write_file", json!({"path": "a.txt", "content": "two\n"})), Step::text("changed a")],
    );
    let ed = editor(&dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let (sid, tree) = worktree_session(&ed, &ws).await;
    let run = ed.start_run_in(&ws, &sid, "change a").await;
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");
    std::fs::remove_dir_all(&tree).unwrap();

    let refused = ed.execute("stepwise.applySession", json!({"session": sid})).await.unwrap_err();
    assert!(refused.message.contains("is gone (removed by hand?)"), "{}", refused.message);
    assert_eq!(dir.read("a.txt"), "one\n");
    // A run in it is refused, saying why, and starts nothing.
    let refused =
        ed.execute("stepwise.run", json!({"workspace": ws, "session": sid, "prompt": "go on"})).await.unwrap_err();
    assert!(refused.message.contains("is gone (removed by hand?)"), "{}", refused.message);
    let conversation = ed.execute("stepwise.conversation", json!({"session": sid})).await.unwrap();
    assert_eq!(texts(&conversation), ["change a", "changed a"], "{conversation}");

    // Closed, kept: the conversation is there when it is named again, and after a restart.
    ed.execute("stepwise.closeSession", json!({"session": sid})).await.unwrap();
    ed.finish().await;
    let ed = editor(&dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let listed = ed.execute("stepwise.sessions", json!({"workspace": ws})).await.unwrap();
    assert_eq!(listed["sessions"][1]["state"], "closed", "{listed}");
    let conversation = ed.execute("stepwise.conversation", json!({"session": sid})).await.unwrap();
    assert_eq!(texts(&conversation), ["change a", "changed a"], "{conversation}");
    let refused = ed.execute("stepwise.applySession", json!({"session": sid})).await.unwrap_err();
    assert!(refused.message.contains("is gone (removed by hand?)"), "{}", refused.message);
    // Discarded: git forgets the worktree and its branch; the folder is as it was.
    ed.execute("stepwise.closeSession", json!({"session": sid, "discard": true})).await.unwrap();
    assert_eq!(git(dir.path(), &["branch", "--list", "stepwise/*"]), "");
    assert_eq!(git(dir.path(), &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1);
    assert_eq!(dir.read("a.txt"), "one\n");
    ed.finish().await;
}

/// The branch is named for the session, so only a user (or a copy of a state directory) makes it first:
/// the engine's own check, with a session id chosen.
#[test]
fn a_branch_of_the_sessions_name_that_exists_already_is_said_and_left_alone() {
    let (dir, state) = folder_and_state("wt-branch");
    repository(dir.path(), &[("a.txt", "one\n")]);
    git(dir.path(), &["branch", "stepwise/s1"]);
    let before = git(dir.path(), &["rev-parse", "stepwise/s1"]);
    let folder = std::fs::canonicalize(dir.path()).unwrap();
    let at = stepwise::sessions::worktree::location(state.path(), &folder, "s1");
    let made = stepwise::sessions::worktree::make(&folder, &at, "s1", &state.path().join("s1.manifest.json"));
    let why = made.unwrap_err();
    assert!(why.starts_with("the branch stepwise/s1 already exists in "), "{why}");
    assert!(why.ends_with("; delete it or start another session"), "{why}");
    assert!(!at.exists(), "nothing is left where the worktree would have been");
    assert_eq!(git(dir.path(), &["rev-parse", "stepwise/s1"]), before);
    assert_eq!(git(dir.path(), &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_that_is_a_git_worktree_itself_gets_a_worktree_of_the_same_repository() {
    let (dir, state) = folder_and_state("wt-linked");
    let origin = TempDir::new("wt-linked-origin");
    repository(origin.path(), &[("a.txt", "one\n")]);
    git(origin.path(), &["worktree", "add", "-q", "-b", "feature", dir.path().to_str().unwrap()]);
    dir.write("a.txt", "the linked worktree's own change\n");
    let mock = MockModel::start(vec![]).await;
    mock.route(
        "add b",
        vec![
            Step::tool("read_file", json!({"path": "a.txt"})),
            Step::tool("write_file", json!({"path": "b.txt", "content": "made\n"})),
            Step::text("added b"),
        ],
    );
    let ed = editor(&dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let (sid, tree) = worktree_session(&ed, &ws).await;
    assert_eq!(std::fs::read_to_string(tree.join("a.txt")).unwrap(), "the linked worktree's own change\n");
    let branches = git(origin.path(), &["branch", "--list", "stepwise/*"]);
    assert_eq!(branches.trim_start_matches(['*', '+', ' ']), format!("stepwise/{sid}"));
    let run = ed.start_run_in(&ws, &sid, "add b").await;
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");
    assert!(!dir.join("b.txt").exists());
    let applied = ed.execute("stepwise.applySession", json!({"session": sid})).await.unwrap();
    assert_eq!((applied["applied"].clone(), applied["conflicts"].clone()), (json!(["b.txt"]), json!([])));
    assert_eq!(dir.read("b.txt"), "made\n");
    assert_eq!(dir.read("a.txt"), "the linked worktree's own change\n");
    assert!(!origin.join("b.txt").exists(), "the main worktree is not the folder");
    ed.execute("stepwise.closeSession", json!({"session": sid, "discard": true})).await.unwrap();
    assert!(!tree.exists());
    // The repository's own worktrees stay: the main one and the folder.
    let listed = git(origin.path(), &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 2, "{listed}");
    assert_eq!(git(dir.path(), &["rev-parse", "--abbrev-ref", "HEAD"]), "feature");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staged_changes_in_the_folder_are_the_worktrees_start_and_stay_staged() {
    let (dir, state) = folder_and_state("wt-index");
    repository(dir.path(), &[("a.txt", "a\n"), ("c.txt", "c\n"), ("d.txt", "d\n")]);
    dir.write("a.txt", "a staged\n");
    dir.write("b.txt", "b staged\n");
    dir.write("c.txt", "c staged\n");
    git(dir.path(), &["add", "a.txt", "b.txt", "c.txt"]);
    dir.write("c.txt", "c staged, then changed\n");
    git(dir.path(), &["rm", "-q", "d.txt"]);
    let (index, status) = (git(dir.path(), &["diff", "--cached"]), git(dir.path(), &["status", "--porcelain"]));
    assert_eq!(status, "M  a.txt\nA  b.txt\nMM c.txt\nD  d.txt");
    let mock = MockModel::start(vec![]).await;
    mock.route(
        "work",
        vec![
            Step::tool("read_file", json!({"path": "a.txt"})),
            Step::tool("write_file", json!({"path": "a.txt", "content": "a by the agent\n"})),
            Step::tool("write_file", json!({"path": "e.txt", "content": "e\n"})),
            Step::text("worked"),
        ],
    );
    let ed = editor(&dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let (sid, tree) = worktree_session(&ed, &ws).await;
    // The worktree starts as the folder's files are (what the user sees), staged or not.
    let read = |p: &str| std::fs::read_to_string(tree.join(p)).ok();
    assert_eq!(
        [read("a.txt"), read("b.txt"), read("c.txt"), read("d.txt")],
        [Some("a staged\n".into()), Some("b staged\n".into()), Some("c staged, then changed\n".into()), None]
    );
    // Making it touched neither the folder's index nor its files.
    assert_eq!(git(dir.path(), &["diff", "--cached"]), index);
    assert_eq!(git(dir.path(), &["status", "--porcelain"]), status);

    let run = ed.start_run_in(&ws, &sid, "work").await;
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");
    let applied = ed.execute("stepwise.applySession", json!({"session": sid})).await.unwrap();
    assert_eq!((applied["applied"].clone(), applied["conflicts"].clone()), (json!(["a.txt", "e.txt"]), json!([])));
    assert_eq!(dir.read("a.txt"), "a by the agent\n");
    // Applied to the files, never the index: what the user staged is still staged.
    assert_eq!(git(dir.path(), &["diff", "--cached"]), index);
    assert_eq!(git(dir.path(), &["show", ":a.txt"]), "a staged");
    assert_eq!(git(dir.path(), &["status", "--porcelain"]), "MM a.txt\nA  b.txt\nMM c.txt\nD  d.txt\n?? e.txt");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submodules_files_changed_in_the_worktree_are_applied_like_the_rest() {
    let (dir, state) = folder_and_state("wt-submodule");
    let lib = TempDir::new("wt-submodule-lib");
    repository(lib.path(), &[("lib.txt", "lib\n"), ("gone.txt", "to remove\n")]);
    repository(dir.path(), &[("top.txt", "top\n")]);
    git(dir.path(), &["submodule", "add", "-q", lib.path().to_str().unwrap(), "lib"]);
    git(dir.path(), &["commit", "-q", "-m", "the submodule"]);
    let sub_head = git(&dir.join("lib"), &["rev-parse", "HEAD"]);
    let mock = MockModel::start(vec![]).await;
    mock.route(
        "work in both",
        vec![
            Step::tool("edit_file", json!({"path": "lib/lib.txt", "old_text": "lib", "new_text": "lib changed"})),
            Step::tool("write_file", json!({"path": "lib/new.txt", "content": "new in the submodule\n"})),
            Step::tool("bash", json!({"command": "rm lib/gone.txt"})),
            Step::tool("write_file", json!({"path": "top.txt", "content": "top changed\n"})),
            Step::text("worked"),
        ],
    );
    let ed = editor(&dir, &state, &mock).start().await;
    let ws = ed.folder_uri(0);
    let (sid, tree) = worktree_session(&ed, &ws).await;
    assert_eq!(std::fs::read_to_string(tree.join("lib/lib.txt")).unwrap(), "lib\n");
    let run = ed.start_run_in(&ws, &sid, "work in both").await;
    assert_eq!(ed.await_run(&ws, &run, T).await.reason(), "end_turn");
    assert_eq!(dir.read("lib/lib.txt"), "lib\n", "nothing reaches the folder before apply");

    let listed = ed.execute("stepwise.sessions", json!({"workspace": ws})).await.unwrap();
    assert_eq!(listed["sessions"][1]["unapplied"], 4, "{listed}");
    let applied = ed.execute("stepwise.applySession", json!({"session": sid})).await.unwrap();
    let mut paths: Vec<&str> = applied["applied"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    paths.sort();
    assert_eq!(paths, ["lib/gone.txt", "lib/lib.txt", "lib/new.txt", "top.txt"], "{applied}");
    assert_eq!(applied["conflicts"], json!([]));
    assert_eq!(dir.read("lib/lib.txt"), "lib changed\n");
    assert_eq!(dir.read("lib/new.txt"), "new in the submodule\n");
    assert!(!dir.join("lib/gone.txt").exists());
    assert_eq!(dir.read("top.txt"), "top changed\n");
    // The submodule is still a repository of its own at its commit; its files changed as the agent's edits.
    assert_eq!(git(&dir.join("lib"), &["rev-parse", "HEAD"]), sub_head);
    assert_eq!(git(&dir.join("lib"), &["status", "--porcelain"]), " D gone.txt\n M lib.txt\n?? new.txt");
    ed.finish().await;
}
