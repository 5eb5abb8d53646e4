//! Sessions side by side over LSP (issue 47): two sessions of one folder run at the same time, each
//! notification naming its session and each plan its own; `write_file` over a file changed since the session
//! read it is refused; one session's rewind leaves the other's change; commands that overlap in time are
//! said to, not guessed; sessions survive a restart, close and reopen.

use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::lsp_client::*;
use stepwise_tests::mock::{MockModel, Step};

const T: Duration = Duration::from_secs(20);

fn todo(items: &[(&str, &str, &str)]) -> Value {
    let items: Vec<Value> =
        items.iter().map(|(id, text, status)| json!({"id": id, "text": text, "status": status})).collect();
    json!({ "items": items })
}

async fn new_session(ed: &TestEditor, ws: &str, args: Value) -> String {
    let mut args = args;
    args["workspace"] = json!(ws);
    let made = ed.execute("stepwise.newSession", args).await.unwrap_or_else(|e| panic!("newSession: {e}"));
    made["session"].as_str().unwrap_or_else(|| panic!("{made}")).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_of_one_folder_run_at_once_each_with_its_own_plan_and_notifications() {
    let (dir, state) = folder_and_state("sessions-two");
    let mock = MockModel::start(vec![]).await;
    // The folder's own session plans, then waits in its second request while the other runs to its end.
    mock.route("task A", vec![Step::tool("todo", todo(&[("1", "A's step", "in_progress")])), Step::Hang]);
    mock.route(
        "task B",
        vec![
            Step::tool("todo", todo(&[("1", "B's step", "in_progress"), ("2", "B's next", "pending")])),
            Step::tool("write_file", json!({"path": "b.txt", "content": "from B\n"})),
            Step::text("B done."),
        ],
    );
    let ed = auto_editor(ClientPreset::Bare, &dir, &state, &mock).ignore(&["stepwise/review"]).start().await;
    let ws = ed.folder_uri(0);
    let listed = ed.execute("stepwise.sessions", json!({"workspace": ws})).await.unwrap();
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(
        (listed["sessions"][0]["session"].clone(), listed["sessions"][0]["state"].clone()),
        (json!("main"), json!("idle"))
    );

    let run_a = ed.start_run(&ws, "task A").await;
    mock.wait_for_requests(2, T).await;
    let b = new_session(&ed, &ws, json!({"title": "Side"})).await;
    let run_b = ed.start_run_in(&ws, &b, "task B").await;
    let log_b = ed.await_run(&ws, &run_b, T).await;
    assert_eq!(log_b.reason(), "end_turn");
    assert_eq!(dir.read("b.txt"), "from B\n");

    // A still runs: its run went on beside B's from start to end.
    let listed = ed.execute("stepwise.sessions", json!({"workspace": ws})).await.unwrap();
    let states: Vec<(Value, Value, Value)> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["session"].clone(), s["title"].clone(), s["state"].clone()))
        .collect();
    assert_eq!(states, [(json!("main"), json!("Main"), json!("running")), (json!(b), json!("Side"), json!("idle"))]);

    // Every notification of B's run names B; its plan is its own, and A's stays A's.
    let of_b: Vec<&(String, Value)> = log_b.all.iter().filter(|(_, p)| p["runId"] == run_b.as_str()).collect();
    assert!(!of_b.is_empty());
    assert!(of_b.iter().all(|(_, p)| p["session"] == b.as_str() && p["workspace"] == ws.as_str()), "{of_b:?}");
    let plan_b = ed.execute("stepwise.plan", json!({"workspace": ws, "session": b})).await.unwrap();
    let plan_a = ed.execute("stepwise.plan", json!({"workspace": ws})).await.unwrap();
    assert_eq!((plan_b["total"].clone(), plan_b["session"].clone()), (json!(2), json!(b)));
    assert_eq!((plan_a["items"][0]["text"].clone(), plan_a["session"].clone()), (json!("A's step"), json!("main")));
    let plans = ed.received("stepwise/plan");
    assert!(plans.iter().any(|p| p["session"] == "main" && p["items"][0]["text"] == "A's step"));
    assert!(plans.iter().any(|p| p["session"] == b.as_str() && p["items"][0]["text"] == "B's step"));
    // The list was announced when B was made.
    assert!(ed.received("stepwise/sessions").iter().any(|l| l["sessions"].as_array().is_some_and(|s| s.len() == 2)));

    // Cancelling A leaves B alone; A ends cancelled.
    ed.execute("stepwise.cancel", json!({"workspace": ws})).await.unwrap();
    let log_a = ed.await_run(&ws, &run_a, T).await;
    assert_eq!(log_a.reason(), "cancelled");
    let conv_b = ed.execute("stepwise.conversation", json!({"session": b})).await.unwrap();
    let texts: Vec<&str> = conv_b["entries"].as_array().unwrap().iter().filter_map(|e| e["text"].as_str()).collect();
    assert!(texts.contains(&"task B") && !texts.contains(&"task A"), "{texts:?}");
    ed.drain("stepwise/sessions");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_over_a_file_another_session_changed_since_it_was_read_is_refused() {
    let (dir, state) = folder_and_state("sessions-stale");
    dir.write("a.txt", "first\n");
    let mock = MockModel::start(vec![]).await;
    mock.route(
        "read it",
        vec![
            Step::tool("read_file", json!({"path": "a.txt"})),
            Step::text("read."),
            // The second run of the same session: the write, refused; then read again and write.
            Step::tool("write_file", json!({"path": "./a.txt", "content": "mine\n"})),
            Step::tool("read_file", json!({"path": "a.txt"})),
            Step::tool("write_file", json!({"path": "a.txt", "content": "mine\n"})),
            Step::text("written."),
        ],
    );
    mock.route(
        "overwrite it",
        vec![Step::tool("write_file", json!({"path": "a.txt", "content": "theirs\n"})), Step::text("done.")],
    );
    let ed = auto_editor(ClientPreset::Bare, &dir, &state, &mock).ignore(&["stepwise/review"]).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "read it").await;
    ed.await_run(&ws, &run, T).await;
    let other = new_session(&ed, &ws, json!({})).await;
    let run = ed.start_run_in(&ws, &other, "overwrite it").await;
    ed.await_run(&ws, &run, T).await;
    assert_eq!(dir.read("a.txt"), "theirs\n");

    let run = ed.start_run(&ws, "now write it").await;
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    let results: Vec<(String, bool)> = log.results().into_iter().map(|(_, out, err)| (out, err)).collect();
    assert_eq!(results[0], ("Error: ./a.txt changed since you last read it; read it again".to_string(), true));
    assert_eq!(results[2], ("Wrote 5 bytes".to_string(), false), "read again, the write goes through");
    assert_eq!(dir.read("a.txt"), "mine\n");
    ed.drain("stepwise/sessions");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_rewind_puts_back_only_its_own_changes() {
    let (dir, state) = folder_and_state("sessions-rewind");
    let mock = MockModel::start(vec![]).await;
    mock.route(
        "main writes",
        vec![Step::tool("write_file", json!({"path": "a.txt", "content": "main\n"})), Step::text("ok")],
    );
    mock.route(
        "side writes",
        vec![
            Step::tool("write_file", json!({"path": "b.txt", "content": "side\n"})),
            Step::tool("edit_file", json!({"path": "a.txt", "old_text": "main", "new_text": "main and side"})),
            Step::text("ok"),
        ],
    );
    let ed = auto_editor(ClientPreset::Bare, &dir, &state, &mock).ignore(&["stepwise/review"]).start().await;
    let ws = ed.folder_uri(0);
    let run = ed.start_run(&ws, "main writes").await;
    ed.await_run(&ws, &run, T).await;
    let side = new_session(&ed, &ws, json!({})).await;
    let run = ed.start_run_in(&ws, &side, "side writes").await;
    ed.await_run(&ws, &run, T).await;

    // The folder's own session's rewind: its a.txt was changed since by the other session: left alone.
    let done =
        ed.execute("stepwise.rewind", json!({"workspace": ws, "checkpoint": "1", "restore": "files"})).await.unwrap();
    assert_eq!((done["files"].clone(), done["conflicts"].clone()), (json!([]), json!(["a.txt"])), "{done}");
    assert_eq!(dir.read("a.txt"), "main and side\n");
    assert_eq!(dir.read("b.txt"), "side\n", "the other session's file is not this session's to put back");

    // The other session's rewind puts back what it did, and only that.
    let done =
        ed.execute("stepwise.rewind", json!({"session": side, "checkpoint": "1", "restore": "files"})).await.unwrap();
    assert_eq!(done["files"], json!(["a.txt", "b.txt"]), "{done}");
    assert_eq!(dir.read("a.txt"), "main\n");
    assert!(!dir.join("b.txt").exists());
    ed.drain("stepwise/sessions");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_of_two_sessions_that_overlap_in_time_are_said_to_not_guessed() {
    let (dir, state) = folder_and_state("sessions-overlap");
    let mock = MockModel::start(vec![]).await;
    // A writes its own file in a command that ends before B's run begins; then both write shared.txt while
    // both commands run: each waits for the other's marker (they synchronise on files, not on time).
    let a = "touch a-started; while [ ! -e b-wrote ]; do sleep 0.02; done; echo a >> shared.txt";
    let b = "while [ ! -e a-started ]; do sleep 0.02; done; echo b >> shared.txt; touch b-wrote";
    mock.route(
        "session a",
        vec![
            Step::tool("bash", json!({"command": "echo a > only-a.txt"})),
            Step::tool("bash", json!({"command": a})),
            Step::text("a done"),
        ],
    );
    mock.route("session b", vec![Step::tool("bash", json!({"command": b})), Step::text("b done")]);
    let ed = auto_editor(ClientPreset::Bare, &dir, &state, &mock).ignore(&["stepwise/review"]).start().await;
    let ws = ed.folder_uri(0);
    let side = new_session(&ed, &ws, json!({"title": "B"})).await;
    let run_a = ed.start_run(&ws, "session a").await;
    // A's first command has ended when its second request comes.
    mock.wait_for_requests(2, T).await;
    let run_b = ed.start_run_in(&ws, &side, "session b").await;
    ed.await_run(&ws, &run_b, T).await;
    ed.await_run(&ws, &run_a, T).await;

    let changes = |v: &Value, path: &str| v["files"].as_array().unwrap().iter().find(|f| f["path"] == path).cloned();
    let of_a = ed.execute("stepwise.changes", json!({"workspace": ws})).await.unwrap();
    let of_b = ed.execute("stepwise.changes", json!({"session": side})).await.unwrap();
    assert_eq!(changes(&of_a, "shared.txt").map(|f| f["sharedWith"].clone()), Some(json!(["B"])), "{of_a}");
    assert_eq!(changes(&of_b, "shared.txt").map(|f| f["sharedWith"].clone()), Some(json!(["Main"])), "{of_b}");
    let only_a = changes(&of_a, "only-a.txt").expect("A's own file");
    assert!(only_a.get("sharedWith").is_none(), "made before B's run began: A's alone: {only_a}");
    assert!(changes(&of_b, "only-a.txt").is_none(), "{of_b}");

    // Undo leaves the shared file alone, as a conflict; A's own file is undone.
    let undone =
        ed.execute("stepwise.review", json!({"workspace": ws, "path": "shared.txt", "action": "undo"})).await.unwrap();
    assert_eq!(undone["conflicts"], json!(["shared.txt"]), "{undone}");
    assert!(dir.join("shared.txt").exists());
    let undone =
        ed.execute("stepwise.review", json!({"workspace": ws, "path": "only-a.txt", "action": "undo"})).await.unwrap();
    assert_eq!(undone["undone"], json!(["only-a.txt"]), "{undone}");
    ed.drain("stepwise/sessions");
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_survive_a_restart_and_a_closed_one_reopens_when_named() {
    let (dir, state) = folder_and_state("sessions-restart");
    let mock = MockModel::start(vec![]).await;
    mock.route("kept task", vec![Step::tool("todo", todo(&[("1", "Kept step", "in_progress")])), Step::text("ok")]);
    let ed = auto_editor(ClientPreset::Bare, &dir, &state, &mock).ignore(&["stepwise/review"]).start().await;
    let ws = ed.folder_uri(0);
    let kept = new_session(&ed, &ws, json!({"title": "Kept"})).await;
    let closed = new_session(&ed, &ws, json!({"title": "Closed"})).await;
    let run = ed.start_run_in(&ws, &kept, "kept task").await;
    ed.await_run(&ws, &run, T).await;
    ed.execute("stepwise.closeSession", json!({"session": closed})).await.unwrap();
    let refused = ed.execute("stepwise.closeSession", json!({"session": "main"})).await.unwrap_err();
    assert!(refused.message.contains("cannot be closed"), "{}", refused.message);
    ed.drain("stepwise/sessions");
    ed.finish().await;

    let ed = auto_editor(ClientPreset::Bare, &dir, &state, &mock).ignore(&["stepwise/review"]).start().await;
    let ws = ed.folder_uri(0);
    let listed = ed.execute("stepwise.sessions", json!({"workspace": ws})).await.unwrap();
    let seen: Vec<(Value, Value, Value)> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["title"].clone(), s["state"].clone(), s.get("progress").cloned().unwrap_or(Value::Null)))
        .collect();
    assert_eq!(
        seen,
        [
            (json!("Main"), json!("idle"), Value::Null),
            (json!("Kept"), json!("idle"), json!("0/1")),
            (json!("Closed"), json!("closed"), Value::Null)
        ]
    );
    // The restored session's plan is announced as the folder's own is.
    let plan = ed.await_notification_matching("stepwise/plan", |p| p["session"] == kept.as_str(), T).await;
    assert_eq!(plan["items"][0]["text"], "Kept step");
    // Naming the closed session opens it again.
    ed.execute("stepwise.plan", json!({"session": closed})).await.unwrap();
    let listed = ed.execute("stepwise.sessions", json!({})).await.unwrap();
    assert_eq!(listed["sessions"][2]["state"], "idle", "{listed}");
    // Discarded: gone from the list, its state removed.
    ed.execute("stepwise.closeSession", json!({"session": closed, "discard": true})).await.unwrap();
    let listed = ed.execute("stepwise.sessions", json!({})).await.unwrap();
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(2), "{listed}");
    let unknown = ed.execute("stepwise.plan", json!({"session": closed})).await.unwrap_err();
    assert!(unknown.message.contains("unknown session"), "{}", unknown.message);
    ed.drain("stepwise/sessions");
    ed.finish().await;
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
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
async fn a_worktree_sessions_changes_reach_the_folder_only_when_applied_and_never_over_the_users() {
    let (dir, state) = folder_and_state("sessions-worktree");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    dir.write("kept.txt", "committed\n");
    dir.write("theirs.txt", "committed\n");
    dir.write(".gitignore", "ignored/\n");
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "start"]);
    // The folder as the user left it: an uncommitted change, an untracked file, an ignored one.
    dir.write("kept.txt", "the user's uncommitted text\n");
    dir.write("notes.txt", "untracked\n");
    dir.write("ignored/big.bin", "not copied\n");
    let mock = MockModel::start(vec![]).await;
    mock.route(
        "in the worktree",
        vec![
            Step::tool("read_file", json!({"path": "kept.txt"})),
            Step::tool(
                "edit_file",
                json!({"path": "kept.txt", "old_text": "uncommitted", "new_text": "uncommitted, then the agent's"}),
            ),
            Step::tool("write_file", json!({"path": "new.txt", "content": "made in the worktree\n"})),
            Step::tool("write_file", json!({"path": "theirs.txt", "content": "the agent's\n"})),
            Step::tool("bash", json!({"command": "rm notes.txt && git status --porcelain | wc -l"})),
            Step::text("done"),
        ],
    );
    let ed = auto_editor(ClientPreset::Bare, &dir, &state, &mock)
        .ignore(&["stepwise/review", "stepwise/checkpoint", "stepwise/sessions"])
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let made =
        ed.execute("stepwise.newSession", json!({"workspace": ws, "worktree": true, "title": "Tree"})).await.unwrap();
    let (sid, tree) = (made["session"].as_str().unwrap().to_string(), made["worktree"].as_str().unwrap().to_string());
    assert_eq!(made["branch"], json!(format!("stepwise/{sid}")));
    let tree = std::path::PathBuf::from(tree);
    assert!(tree.starts_with(state.path()), "under the state directory: {}", tree.display());
    assert_eq!(std::fs::read_to_string(tree.join("kept.txt")).unwrap(), "the user's uncommitted text\n");
    assert_eq!(std::fs::read_to_string(tree.join("notes.txt")).unwrap(), "untracked\n");
    assert!(!tree.join("ignored").exists(), "ignored files are not copied");
    let branches = git(dir.path(), &["branch", "--list", "stepwise/*"]);
    assert!(branches.contains(&format!("stepwise/{sid}")), "{branches}");

    let run = ed.start_run_in(&ws, &sid, "in the worktree").await;
    let log = ed.await_run(&ws, &run, T).await;
    assert_eq!(log.reason(), "end_turn");
    // Nothing reached the folder.
    assert_eq!(dir.read("kept.txt"), "the user's uncommitted text\n");
    assert!(!dir.join("new.txt").exists());
    assert_eq!(dir.read("notes.txt"), "untracked\n");
    assert_eq!(std::fs::read_to_string(tree.join("new.txt")).unwrap(), "made in the worktree\n");

    // The user changes a file the session changed too: a conflict, never overwritten.
    dir.write("theirs.txt", "the user's since\n");
    let listed = ed.execute("stepwise.sessions", json!({"workspace": ws})).await.unwrap();
    assert_eq!(listed["sessions"][1]["unapplied"], 4, "{listed}");
    let applied = ed.execute("stepwise.applySession", json!({"session": sid})).await.unwrap();
    assert_eq!(applied["applied"], json!(["kept.txt", "new.txt", "notes.txt"]), "{applied}");
    assert_eq!(applied["conflicts"], json!(["theirs.txt"]));
    assert_eq!(dir.read("kept.txt"), "the user's uncommitted, then the agent's text\n");
    assert_eq!(dir.read("new.txt"), "made in the worktree\n");
    assert!(!dir.join("notes.txt").exists());
    assert_eq!(dir.read("theirs.txt"), "the user's since\n");
    // The applied files are a run of the folder's own session: reviewed and rewound like the agent's edits.
    let changes = ed.execute("stepwise.changes", json!({"workspace": ws, "runId": applied["runId"]})).await.unwrap();
    let paths: Vec<&str> = changes["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["kept.txt", "new.txt", "notes.txt"], "{changes}");
    // Applying again carries nothing new; the conflict stays one.
    let again = ed.execute("stepwise.applySession", json!({"session": sid})).await.unwrap();
    assert_eq!((again["applied"].clone(), again["conflicts"].clone()), (json!([]), json!(["theirs.txt"])));

    // Closed without discarding, the worktree stays; discarded, it goes with its branch.
    ed.execute("stepwise.closeSession", json!({"session": sid})).await.unwrap();
    assert!(tree.exists());
    ed.execute("stepwise.closeSession", json!({"session": sid, "discard": true})).await.unwrap();
    assert!(!tree.exists());
    assert!(git(dir.path(), &["branch", "--list", "stepwise/*"]).is_empty());
    ed.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_that_is_no_repository_gets_a_copy_and_bad_requests_say_why() {
    let (dir, state) = folder_and_state("sessions-copy");
    dir.write("a.txt", "one\n");
    let mock = MockModel::start(vec![]).await;
    mock.route("in the copy", vec![Step::tool("write_file", json!({"path": "a.txt", "content": "two\n"})), Step::Hang]);
    let ed = auto_editor(ClientPreset::Bare, &dir, &state, &mock)
        .ignore(&["stepwise/review", "stepwise/checkpoint", "stepwise/sessions"])
        .start()
        .await;
    let ws = ed.folder_uri(0);
    let made = ed.execute("stepwise.newSession", json!({"workspace": ws, "worktree": true})).await.unwrap();
    assert!(made.get("branch").is_none(), "{made}");
    let sid = made["session"].as_str().unwrap().to_string();
    let run = ed.start_run_in(&ws, &sid, "in the copy").await;
    mock.wait_for_requests(2, T).await;
    // Refused while it runs; and a session without a worktree has nothing to apply.
    let refused = ed.execute("stepwise.applySession", json!({"session": sid})).await.unwrap_err();
    assert!(refused.message.contains("is running"), "{}", refused.message);
    let refused = ed.execute("stepwise.applySession", json!({"session": "main"})).await.unwrap_err();
    assert!(refused.message.contains("has no worktree"), "{}", refused.message);
    ed.execute("stepwise.cancel", json!({"session": sid})).await.unwrap();
    ed.await_run(&ws, &run, T).await;
    assert_eq!(dir.read("a.txt"), "one\n");
    let applied = ed.execute("stepwise.applySession", json!({"session": sid})).await.unwrap();
    assert_eq!(applied["applied"], json!(["a.txt"]));
    assert_eq!(dir.read("a.txt"), "two\n");
    let unknown = ed.execute("stepwise.applySession", json!({"session": "nope"})).await.unwrap_err();
    assert!(unknown.message.contains("unknown session: nope"), "{}", unknown.message);
    ed.finish().await;
}
