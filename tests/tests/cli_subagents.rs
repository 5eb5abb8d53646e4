//! Subagents from the command line: a child's calls are printed indented under its `task` call and named
//! for it, its end said with its rounds and tokens; `stepwise doctor` lists the agents of files and says
//! which files are no agent.

use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use stepwise_tests::mock::{MockModel, Step, Turn};
use stepwise_tests::terminal::Stepwise;
use stepwise_tests::TempDir;

const T: Duration = Duration::from_secs(30);

async fn output(mut cmd: std::process::Command) -> Output {
    let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    tokio::time::timeout(T, tokio::task::spawn_blocking(move || child.wait_with_output()))
        .await
        .expect("stepwise ends")
        .unwrap()
        .unwrap()
}

fn show(o: &Output) -> String {
    format!("{:?}\n{}\n{}", o.status, String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_calls_are_printed_indented_and_named_under_its_task_call() {
    let (ws, state) = (TempDir::new("cli-sub"), TempDir::new("cli-sub-state"));
    ws.write("a.txt", "forty-two\n");
    let t = Turn::default().with_tool_id(
        "t1",
        "task",
        json!({"prompt": "CHILD-A: read a.txt", "description": "reads a.txt"}),
    );
    let mock = MockModel::start(vec![t.into(), Step::text("It says forty-two.")]).await;
    mock.route("CHILD-A", vec![Step::tool("read_file", json!({"path": "a.txt"})), Step::text("a.txt: forty-two")]);
    let cmd = Stepwise::with_model(&mock)
        .env("STEPWISE_STATE_DIR", state.path())
        .env("HOME", state.path())
        .args(["run", "--yes"])
        .workspace(&ws)
        .args(["what does a.txt say? ask a subagent"])
        .command();
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let at =
        |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle:?} in\n{text}"));
    let (task, start, call, end) = (
        at("> task: general: reads a.txt"),
        at("  sa-1 (general): reads a.txt"),
        at("  sa-1 > read_file: a.txt"),
        at("  sa-1 done: 2 rounds"),
    );
    assert!(task < start && start < call && call < end, "in order under the task call:\n{text}");
    assert!(text.contains("It says forty-two."), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_lists_the_agents_of_files_and_says_which_files_are_none() {
    let (ws, home) = (TempDir::new("doctor-agents"), TempDir::new("doctor-agents-home"));
    ws.write(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews\ntools: Read, Bash\n---\nReview.\n",
    );
    ws.write(".agents/agents/broken.md", "---\ndescription: no name\n---\n");
    let mut cmd = Stepwise::bare().env("HOME", home.path()).env("XDG_CONFIG_HOME", home.join("config")).command();
    cmd.args(["doctor", "--no-language-servers", "--json", "--workspace"]).arg(ws.path());
    let out = output(cmd).await;
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    let names: Vec<&str> = r["agents"]["list"].as_array().unwrap().iter().filter_map(|a| a["name"].as_str()).collect();
    assert_eq!(names, ["general", "explore", "reviewer"]);
    assert_eq!(r["agents"]["list"][2]["tools"], json!(["read_file", "bash"]));
    assert_eq!(
        r["agents"]["problems"],
        json!([{"path": ws.join(".agents/agents/broken.md"), "problem": "no `name` in the frontmatter"}])
    );
    let mut cmd = Stepwise::bare().env("HOME", home.path()).env("XDG_CONFIG_HOME", home.join("config")).command();
    cmd.args(["doctor", "--no-language-servers", "--workspace"]).arg(ws.path());
    let text = String::from_utf8_lossy(&output(cmd).await.stdout).to_string();
    assert!(
        text.contains(&format!(
            "agent problem {}: no `name` in the frontmatter (skipped)",
            ws.join(".agents/agents/broken.md").display()
        )),
        "{text}"
    );
}
