//! Driving code intelligence through the real binary: `stepwise run` in a workspace with a language
//! server (real pylsp from tests/intel/setup.sh, or a scripted fake from tests/intel/*_server.py), and
//! reading back what the scripted model was told (the `<diagnostics>` block, tool results, the tools).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::lsp_client::stepwise_binary;
use crate::mock::MockModel;
use crate::TempDir;

/// The folder of the fake servers and of setup.sh.
pub fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("intel")
}

/// The pylsp venv's bin folder; a machine that cannot install it fails the caller, saying why.
pub fn pylsp_bin() -> PathBuf {
    let o = std::process::Command::new("bash").arg(scripts().join("setup.sh")).output().expect("bash runs");
    assert!(
        o.status.success(),
        "cannot install the Python language server for these tests (tests/intel/setup.sh): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

/// The user's language-servers.json in the config folder `config`: one server `name` for `.py` files.
pub fn py_server(config: &TempDir, name: &str, command: &[impl AsRef<str>]) {
    let command: Vec<&str> = command.iter().map(AsRef::as_ref).collect();
    let servers = json!({"servers": {name: {"command": command, "extensions": ["py"]}}});
    config.write("stepwise/language-servers.json", &servers.to_string());
}

/// The command of a fake server (tests/intel/crash_server.py --nul, which publishes nothing but empty
/// diagnostics) that touches `marker` as it starts: whether it started, and with what rights.
pub fn marker_server(marker: &Path) -> Vec<String> {
    let script = scripts().join("crash_server.py");
    let start = format!("touch '{}'; exec python3 '{}' --nul", marker.display(), script.display());
    vec!["sh".into(), "-c".into(), start]
}

/// A folder under `dir` holding `rust-analyzer`: the fake of rustup's proxy without the component
/// (tests/intel/rustup_proxy.sh), to put first on `PATH`.
pub fn rustup_proxy_bin(dir: &TempDir) -> PathBuf {
    let script = scripts().join("rustup_proxy.sh");
    dir.write("bin/rust-analyzer", &format!("#!/bin/sh\nexec sh '{}' \"$@\"\n", script.display()));
    let bin = dir.join("bin");
    make_executable(&bin.join("rust-analyzer"));
    bin
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A run's state and config folders, and its PATH.
pub struct Env {
    pub state: TempDir,
    pub config: TempDir,
    pub path: String,
}

impl Env {
    /// `extra_bin` goes first on PATH.
    pub fn new(extra_bin: Option<&Path>) -> Env {
        let mut path = std::env::var("PATH").unwrap_or_default();
        if let Some(b) = extra_bin {
            path = format!("{}:{path}", b.display());
        }
        Env { state: TempDir::new("intel-state"), config: TempDir::new("intel-config"), path }
    }

    /// The user's language-servers.json naming one server for `.py` files: `command`.
    pub fn server(&self, name: &str, command: &[impl AsRef<str>]) {
        py_server(&self.config, name, command);
    }

    /// One of the fake servers of tests/intel (`script`, with `args`), for `.py` files.
    pub fn fake_server(&self, name: &str, script: &str, args: &[&str]) {
        let path = scripts().join(script);
        let mut command = vec!["python3", path.to_str().expect("a UTF-8 path")];
        command.extend_from_slice(args);
        self.server(name, &command);
    }

    /// A `stepwise` command for this environment (the model at `mock`, nothing else of the caller's).
    pub fn command(&self, mock: &MockModel, ws: &TempDir) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(stepwise_binary(false));
        cmd.env_clear();
        for keep in ["HOME", "TMPDIR", "LANG"] {
            if let Ok(v) = std::env::var(keep) {
                cmd.env(keep, v);
            }
        }
        cmd.env("PATH", &self.path)
            .env("ANTHROPIC_BASE_URL", mock.url())
            .env("ANTHROPIC_API_KEY", "k")
            .env("MODEL_ID", "m")
            .env("STEPWISE_PROMPT_CACHE", "off")
            .env("STEPWISE_STATE_DIR", self.state.path())
            .env("XDG_CONFIG_HOME", self.config.path())
            .current_dir(ws.path())
            .kill_on_drop(true);
        cmd
    }

    /// `stepwise run --yes TASK` with `extra` variables; its output (the run is bounded generously).
    pub async fn run(&self, mock: &MockModel, ws: &TempDir, extra: &[(&str, &str)], task: &str) -> Output {
        let mut cmd = self.command(mock, ws);
        cmd.args(["run", "--yes", task]);
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let o = tokio::time::timeout(Duration::from_secs(120), cmd.output())
            .await
            .expect("stepwise run ends")
            .expect("stepwise runs");
        eprintln!("stepwise run took {:?}\n{}", started.elapsed(), show(&o));
        o
    }

    /// `stepwise chat --yes` fed `input` (prompts and slash commands, a line each); its output when stdin's
    /// end ends the chat.
    pub async fn chat(&self, mock: &MockModel, ws: &TempDir, input: &[u8]) -> Output {
        self.chat_with(mock, ws, &[], input).await
    }

    /// `chat` with `extra` variables.
    pub async fn chat_with(&self, mock: &MockModel, ws: &TempDir, extra: &[(&str, &str)], input: &[u8]) -> Output {
        use std::process::Stdio;
        use tokio::io::AsyncWriteExt;
        let mut cmd = self.command(mock, ws);
        cmd.envs(extra.iter().copied());
        cmd.args(["chat", "--yes"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = cmd.spawn().expect("stepwise chat starts");
        let mut stdin = child.stdin.take().expect("a piped stdin");
        stdin.write_all(input).await.expect("the chat reads its input");
        drop(stdin);
        let o = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
            .await
            .expect("stepwise chat ends")
            .expect("stepwise chat runs");
        eprintln!("stepwise chat took {:?}\n{}", started.elapsed(), show(&o));
        o
    }
}

pub fn show(o: &Output) -> String {
    format!("--- stdout\n{}\n--- stderr\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn last_message(mock: &MockModel, n: usize) -> Value {
    let reqs = mock.requests();
    reqs.get(n).and_then(|r| r.body["messages"].as_array().and_then(|m| m.last()).cloned()).unwrap_or(Value::Null)
}

/// The text blocks of the last (user) message of request `n` (0-based).
pub fn user_texts(mock: &MockModel, n: usize) -> Vec<String> {
    last_message(mock, n)["content"]
        .as_array()
        .map(|c| {
            c.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str().map(str::to_string)).collect()
        })
        .unwrap_or_default()
}

/// The `<diagnostics>` block request `n` carries.
pub fn diagnostics_block(mock: &MockModel, n: usize) -> Option<String> {
    user_texts(mock, n).into_iter().find(|t| t.starts_with("<diagnostics>"))
}

/// The block's lines between `<diagnostics>` and `</diagnostics>`.
pub fn block_lines(block: &str) -> Vec<String> {
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines.first(), Some(&"<diagnostics>"), "{block}");
    assert_eq!(lines.last(), Some(&"</diagnostics>"), "{block}");
    lines[1..lines.len() - 1].iter().map(|l| l.to_string()).collect()
}

/// The first tool result request `n` carries.
pub fn tool_result(mock: &MockModel, n: usize) -> String {
    last_message(mock, n)["content"]
        .as_array()
        .and_then(|c| c.iter().find(|b| b["type"] == "tool_result"))
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

/// The tools offered in the first request.
pub fn tool_names(mock: &MockModel) -> Vec<String> {
    tool_names_in(mock, 0)
}

/// The tools offered in request `n` (0-based).
pub fn tool_names_in(mock: &MockModel, n: usize) -> Vec<String> {
    crate::sent::tool_names(&mock.requests()[n].body)
}
