//! Sessions side by side from the command line (issue 47): two `stepwise run` in one folder at once both
//! work; `stepwise run --worktree` leaves the folder alone, prints the worktree and its branch last, and an
//! editor then lists the session and applies its changes.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::json;
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::terminal::Stepwise;
use stepwise_tests::TempDir;

const T: Duration = Duration::from_secs(30);

fn run(mock: &MockModel, ws: &TempDir, state: &TempDir, args: &[&str]) -> std::process::Child {
    Stepwise::with_model(mock)
        .env("STEPWISE_STATE_DIR", state.path())
        .env("HOME", state.path())
        .args(["run", "--yes"])
        .workspace(ws)
        .args(args)
        .command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("stepwise starts")
}

async fn finished(child: std::process::Child) -> Output {
    tokio::time::timeout(T, tokio::task::spawn_blocking(move || child.wait_with_output()))
        .await
        .expect("stepwise run ends")
        .unwrap()
        .unwrap()
}

fn show(o: &Output) -> String {
    format!("{:?}\n{}\n{}", o.status, String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_in_one_folder_go_on_at_the_same_time() {
    let (ws, state) = (TempDir::new("cli-two"), TempDir::new("cli-two-state"));
    let mock = MockModel::start(vec![]).await;
    // Each command waits for the other's marker: neither run can end unless both run at once.
    let a = "touch a-here; while [ ! -e b-here ]; do sleep 0.02; done; echo a > a.txt";
    let b = "touch b-here; while [ ! -e a-here ]; do sleep 0.02; done; echo b > b.txt";
    mock.route("first task", vec![Step::tool("bash", json!({"command": a})), Step::text("first done")]);
    mock.route("second task", vec![Step::tool("bash", json!({"command": b})), Step::text("second done")]);
    let one = run(&mock, &ws, &state, &["first task"]);
    let two = run(&mock, &ws, &state, &["second task"]);
    let (one, two) = (finished(one).await, finished(two).await);
    assert_eq!(one.status.code(), Some(0), "{}", show(&one));
    assert_eq!(two.status.code(), Some(0), "{}", show(&two));
    assert!(String::from_utf8_lossy(&one.stdout).contains("first done"));
    assert!(String::from_utf8_lossy(&two.stdout).contains("second done"));
    assert_eq!((ws.read("a.txt"), ws.read("b.txt")), ("a\n".to_string(), "b\n".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_in_a_worktree_leaves_the_folder_alone_until_an_editor_applies_it() {
    let (ws, state) = (TempDir::new("cli-tree"), TempDir::new("cli-tree-state"));
    git(ws.path(), &["init", "-q", "-b", "main"]);
    ws.write("app.txt", "v1\n");
    git(ws.path(), &["add", "-A"]);
    git(ws.path(), &["commit", "-q", "-m", "start"]);
    let mock = MockModel::start(vec![]).await;
    mock.route(
        "bump the version",
        vec![
            Step::tool("edit_file", json!({"path": "app.txt", "old_text": "v1", "new_text": "v2"})),
            // An ordinary commit on the worktree's branch, in the sandbox: git writes the repository's
            // objects and refs, which the worktree's sandbox allows.
            Step::tool("bash", json!({"command": "git add -A && git -c user.name=a -c user.email=a@a commit -q -m bump && git log --oneline | wc -l"})),
            Step::text("bumped"),
        ],
    );
    let o = finished(run(&mock, &ws, &state, &["--worktree", "bump the version"])).await;
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let lines: Vec<&str> = out.lines().collect();
    let (tree, branch) = (lines[lines.len() - 2], lines[lines.len() - 1]);
    let tree = tree.strip_prefix("worktree: ").unwrap_or_else(|| panic!("{out}"));
    let id = branch.strip_prefix("branch: stepwise/").unwrap_or_else(|| panic!("{out}"));
    assert_eq!(ws.read("app.txt"), "v1\n", "the folder is left alone");
    assert_eq!(std::fs::read_to_string(Path::new(tree).join("app.txt")).unwrap(), "v2\n");
    // (git 2.42+ also drops AUTO_MERGE, which takes `.git/packed-refs.lock`: outside what the sandbox lets a
    // worktree session write, so that one line of noise may follow; the commit is made.)
    let results = tool_results(&mock.requests()[2].body);
    assert!(results[0].0.starts_with("2") && !results[0].1, "the commit went through in the sandbox: {results:?}");
    assert!(!results[0].0.contains("sandbox"), "{results:?}");
    assert_eq!(git(ws.path(), &["log", "--oneline", &format!("stepwise/{id}")]).lines().count(), 2);

    // An editor of the folder lists the session (closed) and brings its change in.
    let ed = auto_editor(ClientPreset::Bare, &ws, &state, &mock)
        .ignore(&["stepwise/review", "stepwise/checkpoint", "stepwise/sessions"])
        .start()
        .await;
    let listed = ed.execute("stepwise.sessions", json!({})).await.unwrap();
    let s = &listed["sessions"][1];
    assert_eq!(
        (s["session"].clone(), s["title"].clone(), s["state"].clone()),
        (json!(id), json!("bump the version"), json!("closed"))
    );
    let applied = ed.execute("stepwise.applySession", json!({"session": id})).await.unwrap();
    assert_eq!(applied["applied"], json!(["app.txt"]), "{applied}");
    assert_eq!(ws.read("app.txt"), "v2\n");
    ed.finish().await;
}
