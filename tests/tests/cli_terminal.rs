//! `stepwise chat` on a real pseudo-terminal: the approval prompt (y / a / N), Ctrl-C while it waits,
//! and the line typed after a cancelled prompt (the next task, not an answer).

use std::process::{Child, Stdio};

use std::time::Duration;

use serde_json::json;
use stepwise_tests::mock::{MockModel, Step};
use stepwise_tests::pty::Pty;
use stepwise_tests::terminal::{exit_code, Stepwise};
use stepwise_tests::TempDir;

const T: Duration = Duration::from_secs(20);

/// `stepwise chat` on a terminal (its answers off it: the terminal shows the questions), sandbox off.
fn chat(ws: &TempDir, mock: &MockModel) -> (Pty, Child) {
    chat_with(ws, mock, &[("NO_COLOR", "1")])
}

fn chat_with(ws: &TempDir, mock: &MockModel, env: &[(&str, &str)]) -> (Pty, Child) {
    chat_cmd(mock, env).workspace(ws).stdout_off_the_terminal().on_pty(T)
}

fn chat_cmd(mock: &MockModel, env: &[(&str, &str)]) -> Stepwise {
    Stepwise::with_model(mock).env("STEPWISE_SANDBOX", "off").envs(env).arg("chat")
}

const PROMPT: &str = "[y]es / [a]lways / [N]o: ";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_prompt_answers_and_ctrl_c_on_a_terminal() {
    let mock = MockModel::start(vec![
        Step::tool("bash", json!({"command": "touch one"})),
        Step::text("did one"),
        Step::tool("bash", json!({"command": "touch never"})),
        Step::tool("bash", json!({"command": "touch two"})),
        Step::text("did two"),
        Step::tool("bash", json!({"command": "touch three"})),
        Step::tool("bash", json!({"command": "touch four"})),
        Step::text("did three and four"),
    ])
    .await;
    let ws = TempDir::new("pty-ws");
    let (mut pty, child) = chat(&ws, &mock);

    // y: this command runs.
    pty.type_line("first task");
    assert!(pty.expect(PROMPT).contains("Run shell command? touch one"));
    pty.type_line("y");
    pty.expect("[end_turn");
    assert!(ws.join("one").exists());

    // Ctrl-C while the question waits: the task is cancelled at once, and the line typed next is the
    // next task, not an answer to the abandoned question.
    pty.type_line("second task");
    assert!(pty.expect(PROMPT).contains("touch never"));
    // SAFETY: plain syscall on our child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    pty.expect("(cancelled: the conversation and plan are kept)");
    pty.type_line("y");
    // "y" went to the chat as a task; the model's next call asks again.
    assert!(pty.expect(PROMPT).contains("touch two"));
    pty.type_line("n");
    pty.expect("[end_turn");
    assert!(!ws.join("never").exists() && !ws.join("two").exists(), "refused and cancelled commands never ran");
    let reqs = mock.wait_for_requests(4, T).await;
    let last_user =
        reqs[3].body["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "user").unwrap().clone();
    assert!(last_user.to_string().contains("\"y\""), "the line after Ctrl-C was the next task: {last_user}");

    // a: this and every later command of the session run without asking.
    pty.type_line("third task");
    assert!(pty.expect(PROMPT).contains("touch three"));
    pty.type_line("a");
    pty.expect("[end_turn");
    assert!(ws.join("three").exists() && ws.join("four").exists());
    let asked_again = pty.unmatched().contains(PROMPT);
    assert!(!asked_again, "'always' holds for the session");

    pty.type_line("q");
    assert_eq!(exit_code(child, T), 0);
}

/// Colour codes on a terminal, none with `NO_COLOR` (the question is bold only when colour is wanted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colour_on_a_terminal_unless_no_color() {
    for no_color in [false, true] {
        let mock = MockModel::start(vec![Step::tool("bash", json!({"command": "true"})), Step::text("ok")]).await;
        let ws = TempDir::new("pty-colour");
        let env: &[(&str, &str)] = if no_color { &[("NO_COLOR", "1")] } else { &[("TERM", "xterm")] };
        let (mut pty, child) = chat_with(&ws, &mock, env);
        pty.type_line("task");
        let before = pty.expect(PROMPT);
        let sgr = ["\x1b[1m", "\x1b[2m", "\x1b[3", "\x1b[0m"];
        if no_color {
            assert!(before.contains("Run shell command? true"), "{before:?}");
            assert!(!sgr.iter().any(|c| before.contains(c)), "NO_COLOR, yet colour codes: {before:?}");
        } else {
            assert!(before.contains("\x1b[1mRun shell command?\x1b[0m true"), "{before:?}");
        }
        pty.type_line("y");
        pty.expect("[end_turn");
        pty.type_line("q");
        assert_eq!(exit_code(child, T), 0);
    }
}

/// Ctrl-C at the chat prompt (nothing running) leaves chat with 130.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_the_chat_prompt_exits_130() {
    let mock = MockModel::start(vec![Step::text("first answer")]).await;
    let ws = TempDir::new("pty-ctrl-c");
    let (mut pty, mut child) = chat_cmd(&mock, &[("NO_COLOR", "1")]).workspace(&ws).on_pty(T);
    pty.type_line("a task");
    pty.expect("first answer");
    pty.expect("stepwise >> ");
    // SAFETY: plain syscall on our child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let pid = child.id() as i32;
    let waited = tokio::time::timeout(T, tokio::task::spawn_blocking(move || child.wait())).await;
    let Ok(status) = waited else {
        // SAFETY: plain syscall on our child's pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("chat did not end on Ctrl-C at the prompt");
    };
    assert_eq!(status.unwrap().unwrap().code(), Some(130));
}

/// The sandbox on a terminal (on by default): a command inside the workspace runs without a question;
/// one the sandbox stops is offered to run outside it, and runs there only on "y"; the model reads what
/// became of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_the_sandbox_stopped_runs_outside_it_only_when_approved() {
    let outside = TempDir::new("pty-sandbox-outside");
    let (a, b) = (outside.join("a"), outside.join("b"));
    let mock = MockModel::start(vec![
        Step::tool("bash", json!({"command": "echo in > src/inside"})),
        Step::tool("bash", json!({"command": format!("echo x > {}", a.display())})),
        Step::text("first done"),
        Step::tool("bash", json!({"command": format!("echo x > {}", b.display())})),
        Step::text("second done"),
    ])
    .await;
    let ws = TempDir::new("pty-sandbox");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    let (mut pty, child) = chat_with(&ws, &mock, &[("NO_COLOR", "1"), ("STEPWISE_SANDBOX", "workspace-write")]);

    pty.type_line("first task");
    let before = pty.expect(PROMPT);
    assert!(!before.contains("Run shell command?"), "a sandboxed command asked: {before}");
    // What the sandbox stopped (the error line naming the path), then the question with the command.
    // What the sandbox stopped, as it reads it (the path held against the policy), then the question.
    let asked = "The sandbox stopped this command:\n  a write to ";
    assert!(before.replace("\r\n", "\n").contains(asked), "{before}");
    assert!(before.contains(&format!("{}, outside the folders it may write", a.display())), "{before}");
    assert!(before.contains(&format!("Run it outside the sandbox? echo x > {}", a.display())), "{before}");
    assert_eq!(ws.read("src/inside"), "in\n", "the command inside the workspace ran, unasked");
    assert!(!a.exists(), "the sandbox let the write out");
    pty.type_line("y");
    pty.expect("[end_turn");
    assert!(a.exists(), "approved, it ran outside the sandbox");

    pty.type_line("second task");
    assert!(pty.expect(PROMPT).contains(&format!("Run it outside the sandbox? echo x > {}", b.display())));
    pty.type_line("n");
    pty.expect("[end_turn");
    assert!(!b.exists(), "declined, it did not run outside the sandbox");

    let reqs = mock.wait_for_requests(5, T).await;
    let result = |i: usize| reqs[i].body["messages"].as_array().unwrap().last().unwrap()["content"][0].clone();
    assert_eq!(result(1)["content"], "(no output)");
    let approved = result(2)["content"].as_str().unwrap().to_string();
    assert!(approved.starts_with("[sandbox: the command was stopped by the sandbox ("), "{approved}");
    assert!(approved.contains("the user approved running it again outside the sandbox"), "{approved}");
    assert_eq!(result(2)["is_error"], json!(null), "the run outside succeeded: {}", result(2));
    let declined = result(4)["content"].as_str().unwrap().to_string();
    assert!(declined.contains("Permission denied"), "the sandbox's own error is kept: {declined}");
    assert!(
        declined.ends_with("the user declined to run it outside the sandbox: do it another way, or ask the user]"),
        "{declined}"
    );
    assert_eq!(result(4)["is_error"], true);

    pty.type_line("q");
    assert_eq!(exit_code(child, T), 0);
}

/// Where the sandbox cannot start, stepwise says so once and every command asks, as with it off: never
/// unconfined unasked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_sandbox_it_says_so_once_and_asks_per_command() {
    let mock = MockModel::start(vec![
        Step::tool("bash", json!({"command": "touch one"})),
        Step::text("one"),
        Step::tool("bash", json!({"command": "touch two"})),
        Step::text("two"),
    ])
    .await;
    let ws = TempDir::new("pty-no-sandbox");
    let env = [("NO_COLOR", "1"), ("STEPWISE_SANDBOX", "workspace-write"), (stepwise::sandbox::UNAVAILABLE_ENV, "1")];
    let (mut pty, child) = chat_with(&ws, &mock, &env);
    pty.type_line("first");
    let before = pty.expect(PROMPT);
    assert!(before.contains("stepwise: the sandbox cannot start here ("), "{before}");
    assert!(before.contains("Run shell command? touch one"), "{before}");
    pty.type_line("y");
    pty.expect("[end_turn");
    pty.type_line("second");
    let before = pty.expect(PROMPT);
    assert!(before.contains("Run shell command? touch two"), "{before}");
    assert!(!before.contains("the sandbox cannot start"), "said twice: {before}");
    pty.type_line("n");
    pty.expect("[end_turn");
    assert!(ws.join("one").exists() && !ws.join("two").exists());
    pty.type_line("q");
    assert_eq!(exit_code(child, T), 0);
}

/// A `.env` file's base URL for an API key set elsewhere is asked about on the terminal (the engine's
/// set-up asks, the terminal answers); without a terminal the run refuses and says how to approve it,
/// and once approved it is remembered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dotenv_endpoint_for_a_key_from_elsewhere_is_asked_about_on_the_terminal() {
    let mock = MockModel::start(vec![Step::text("asked first"), Step::text("remembered")]).await;
    let (ws, state) = (TempDir::new("pty-endpoint"), TempDir::new("pty-endpoint-state"));
    ws.write(".env", &format!("ANTHROPIC_BASE_URL={}\n", mock.url()));
    // The base URL is only in the workspace's .env.
    let stepwise = |args: &[&str]| {
        Stepwise::bare()
            .env("ANTHROPIC_API_KEY", "k")
            .env("MODEL_ID", "m")
            .env("NO_COLOR", "1")
            .env("STEPWISE_SANDBOX", "off")
            .env("STEPWISE_STATE_DIR", state.path())
            .args(args)
            .workspace(&ws)
    };
    let headless = |task: &str| stepwise(&["run"]).arg(task).command().stdin(Stdio::null()).output().unwrap();

    // No terminal to ask on: refused before any request, saying how to approve it.
    let refused = headless("one");
    let err = String::from_utf8_lossy(&refused.stderr).to_string();
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("approve the endpoint once with `stepwise run` on a terminal"), "{err}");
    assert!(mock.requests().is_empty());

    // On a terminal: asked, approved, used.
    let (mut pty, child) = stepwise(&["chat"]).stdout_off_the_terminal().on_pty(T);
    let asked = pty.expect("Allow this endpoint? [y/N]: ");
    assert!(asked.contains(&format!("sends your API key (ANTHROPIC_API_KEY) to {}", mock.url())), "{asked}");
    pty.type_line("y");
    pty.type_line("two");
    pty.expect("[end_turn");
    pty.type_line("q");
    assert_eq!(exit_code(child, T), 0);
    assert_eq!(mock.requests().len(), 1);

    // Remembered: a run without a terminal now goes ahead.
    let ran = headless("three");
    assert_eq!(ran.status.code(), Some(0), "{}", String::from_utf8_lossy(&ran.stderr));
    assert_eq!(mock.requests().len(), 2);
}
