//! What the sandbox stopped, named as precisely as the command's error allows: the path in the error,
//! held against the policy (a write outside the writable folders is the sandbox's; a refused write to a
//! file inside them, a `chmod 000` file of the project, is the project's own and not a stop), a signal or
//! a connection refused; and the line the model reads about it.

use std::path::{Component, Path, PathBuf};

use super::policy::Policy;

/// The errors Landlock and Seatbelt give (EACCES, EPERM; EXDEV for a hard link or rename out of the
/// writable tree), as the C library, Python, Node and the shells print them.
const SIGNS: [&str; 6] =
    ["permission denied", "operation not permitted", "cross-device link", "eacces", "eperm", "exdev"];

/// What the sandbox stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// A write to this path (absolute), outside what the policy lets a command write.
    Write(PathBuf),
    /// A TCP connection or listening port, with the network off.
    Network,
    /// A signal to a process outside the sandbox.
    Signal,
    /// An operation refused whose error names no path (a mount, a namespace).
    Other,
}

impl Stop {
    /// What the result and the question say it stopped.
    pub fn describe(&self) -> String {
        match self {
            Stop::Write(p) => format!("a write to {}, outside the folders it may write", p.display()),
            Stop::Network => "a network connection or listening port (the network is off)".into(),
            Stop::Signal => "a signal to a process outside the sandbox".into(),
            Stop::Other => "an operation the sandbox does not allow (its error names no path)".into(),
        }
    }
}

/// What the sandbox stopped in a failed command run under `policy`, from its output; `None` when it
/// did not fail so, or when every refusal it shows is of a path the policy lets it write (the project's
/// own permission error).
pub fn stopped(output: &str, failed: bool, policy: &Policy) -> Option<Stop> {
    if !failed {
        return None;
    }
    let roots = policy.write_roots();
    let mut pathless = None;
    for line in output.lines() {
        let lower = line.to_ascii_lowercase();
        if !SIGNS.iter().any(|s| lower.contains(s)) {
            continue;
        }
        let paths = paths_in(line);
        if let Some(p) =
            paths.iter().map(|p| absolute(&policy.root, p)).find(|p| !roots.iter().any(|r| p.starts_with(r)))
        {
            return Some(Stop::Write(p));
        }
        if !paths.is_empty() {
            continue;
        }
        let kind = if ["connect", "bind", "socket", "network", "/dev/tcp", "listen"].iter().any(|w| lower.contains(w)) {
            Stop::Network
        } else if lower.contains("kill") || lower.contains("signal") {
            Stop::Signal
        } else {
            Stop::Other
        };
        pathless.get_or_insert(kind);
    }
    pathless
}

/// The paths an error line names: quoted ones (`'x'`, `"x"`, `` `x' ``), and `x:` fields that look like
/// paths (`bash: /root/x: Permission denied`).
fn paths_in(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find(['\'', '"', '`']) {
        let close = if &rest[i..i + 1] == "`" { '\'' } else { rest[i..].chars().next().unwrap_or('\'') };
        let after = &rest[i + 1..];
        let Some(j) = after.find(close) else { break };
        let quoted = &after[..j];
        if looks_like_path(quoted) {
            out.push(quoted.to_string());
        }
        rest = &after[j + 1..];
    }
    if out.is_empty() {
        // `program: PATH: error`: the fields between the program and the error, if path-like.
        let fields: Vec<&str> = line.split(": ").map(str::trim).collect();
        let middle = fields.get(1..fields.len().saturating_sub(1)).unwrap_or_default();
        out.extend(
            middle.iter().filter(|f| !f.contains(' ') && (f.contains('/') || f.contains('.'))).map(|f| f.to_string()),
        );
    }
    out
}

fn looks_like_path(s: &str) -> bool {
    !s.is_empty() && !s.contains('\n') && (s.contains('/') || s.starts_with('.') || !s.contains(' '))
}

/// `p` made absolute against `root` (where the command started), tidied, and with the part of it that
/// exists resolved (a symlink in the workspace is judged where it leads, as the sandbox judged it).
fn absolute(root: &Path, p: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in root.join(p).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    let mut tail = Vec::new();
    let mut head = out.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(head) {
            return tail.iter().rev().fold(real, |acc: PathBuf, n| acc.join(n));
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_os_string());
                head = parent;
            }
            _ => return out,
        }
    }
}

/// The line the model reads when the sandbox stopped a command: what it stopped (where known), what it
/// allows, and what came of the question to run it outside.
pub fn stopped_note(policy: &Policy, stop: Option<&Stop>, outcome: Escalation) -> String {
    let allows = if policy.write {
        "it writes beneath the workspace, in $TMPDIR and in the sandboxWritable folders; what it writes to \
         git's hooks and config, .env*, .envrc, .vscode/, AGENTS.md, CLAUDE.md or .mcp.json is put back"
    } else {
        "it is read-only: writes only in $TMPDIR"
    };
    let net = if policy.network { "" } else { ", no network beyond its own loopback" };
    let what = stop.map(|s| format!("it stopped {}; ", s.describe())).unwrap_or_default();
    let then = match outcome {
        Escalation::Declined => "the user declined to run it outside the sandbox: do it another way, or ask the user",
        Escalation::NotOffered => "it cannot run outside the sandbox in this mode",
        Escalation::Approved => "the user approved running it again outside the sandbox; that run's output follows",
        Escalation::Background => {
            "a background task is not offered to run outside the sandbox: do it another way, or ask the user"
        }
    };
    format!("[sandbox: the command was stopped by the sandbox ({what}{allows}{net}); {then}]")
}

/// What became of a command the sandbox stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escalation {
    Approved,
    Declined,
    NotOffered,
    /// A background task: its end comes when nobody waits to answer a question, so none is put.
    Background,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::policy::example as policy;

    #[test]
    fn the_path_in_the_error_is_held_against_the_policy() {
        let p = policy();
        let write = |s: &str| Some(Stop::Write(PathBuf::from(s)));
        assert_eq!(stopped("bash: /root/x: Permission denied", true, &p), write("/root/x"));
        assert_eq!(stopped("touch: cannot touch '../x': Operation not permitted", true, &p), write("/x"));
        assert_eq!(
            stopped("ln: failed to create hard link 'a' => '/etc/passwd': Invalid cross-device link", true, &p),
            write("/etc/passwd")
        );
        assert_eq!(
            stopped("Error: EACCES: permission denied, open '/home/u/.npm/x'", true, &p),
            write("/home/u/.npm/x")
        );
        assert_eq!(
            stopped("PermissionError: [Errno 13] Permission denied: '/usr/lib/x'", true, &p),
            write("/usr/lib/x")
        );
        // The project's own: a file inside the writable folders it may not write (chmod 000).
        assert_eq!(stopped("bash: src/locked.txt: Permission denied", true, &p), None);
        assert_eq!(stopped("cat: '/w/secret': Permission denied", true, &p), None);
        assert_eq!(stopped("cp: cannot create regular file '/cache/a': Permission denied", true, &p), None);
        assert_eq!(
            stopped("bash: connect: Permission denied\nbash: /dev/tcp/1.2.3.4/80: Permission denied", true, &p),
            write("/dev/tcp/1.2.3.4/80")
        );
        assert_eq!(stopped("bash: connect: Permission denied", true, &p), Some(Stop::Network));
        assert_eq!(stopped("bash: kill: (42) - Operation not permitted", true, &p), Some(Stop::Signal));
        assert_eq!(stopped("unshare: unshare failed: Operation not permitted", true, &p), Some(Stop::Other));
        assert_eq!(stopped("bash: /root/x: Permission denied", false, &p), None);
        assert_eq!(stopped("error[E0425]: cannot find value", true, &p), None);
    }

    #[test]
    fn the_note_names_what_it_stopped() {
        let note = stopped_note(&policy(), Some(&Stop::Write("/root/x".into())), Escalation::Declined);
        assert!(
            note.starts_with("[sandbox: the command was stopped by the sandbox (it stopped a write to /root/x,"),
            "{note}"
        );
        assert!(note.ends_with("the user declined to run it outside the sandbox: do it another way, or ask the user]"));
    }
}
