//! The sandbox on macOS: `sandbox.rs`'s policy as a Seatbelt profile, run as `sandbox-exec -p PROFILE --
//! bash ...` (the guard and the command run inside it, stepwise does not). Generated as text on every
//! platform, so its golden test runs on Linux too.
//!
//! The profile allows by default and denies what the policy forbids (writes, TCP/UDP over IP, signals
//! to processes outside the sandbox), rather than Codex's deny-by-default list of Mach services and
//! sysctls: the policy lets a command read everything, and a deny-list that cannot be run here must not
//! break the developer tools it was never tried with. Later rules win, so each allowance follows its
//! deny. The writable paths are the same as Landlock's: the workspace's non-protected top-level
//! entries (folders with their trees, files for their contents), the private `TMPDIR`, and the usual
//! character devices.

use std::fmt::Write;

use super::policy::{Entry, Policy};

pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A path as an SBPL string literal.
fn quoted(path: &std::path::Path) -> String {
    let s = path.to_string_lossy();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The profile for `policy`, whose writable top-level entries are `entries`.
pub fn profile(policy: &Policy, entries: &[Entry]) -> String {
    let mut p = String::from("(version 1)\n(allow default)\n");
    p.push_str("(deny signal)\n(allow signal (target same-sandbox))\n");
    p.push_str("(deny file-write*)\n(allow file-write*\n");
    let _ = writeln!(p, "  (subpath {})", quoted(&policy.tmp));
    for e in entries.iter().filter(|e| e.dir) {
        let _ = writeln!(p, "  (subpath {})", quoted(&e.path));
    }
    p.push_str("  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\")\n");
    p.push_str("  (regex #\"^/dev/ttys[0-9]+$\") (regex #\"^/dev/fd/[0-9]+$\"))\n");
    let files: Vec<&Entry> = entries.iter().filter(|e| !e.dir).collect();
    if !files.is_empty() {
        p.push_str("(allow file-write-data\n");
        for e in files {
            let _ = writeln!(p, "  (literal {})", quoted(&e.path));
        }
        p.push_str(")\n");
    }
    if !policy.network {
        p.push_str("(deny network-outbound (remote ip \"*:*\"))\n");
        p.push_str("(deny network-inbound (local ip \"*:*\"))\n");
        p.push_str("(deny network-bind (local ip \"*:*\"))\n");
    }
    p
}

/// The program and arguments that start `rest` (the guard's own command line) inside the profile.
pub fn wrap(policy: &Policy, rest: &[&str]) -> (String, Vec<String>) {
    let profile = profile(policy, &policy.writable_entries());
    let mut args = vec!["-p".to_string(), profile, "--".to_string()];
    args.extend(rest.iter().map(|s| s.to_string()));
    (SANDBOX_EXEC.to_string(), args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn policy(write: bool, network: bool) -> Policy {
        Policy {
            root: "/Users/u/proj".into(),
            tmp: "/private/var/folders/x/T/stepwise-sandbox-1-1-0".into(),
            write,
            network,
        }
    }

    fn entry(p: &str, dir: bool) -> Entry {
        Entry { path: PathBuf::from(p), dir }
    }

    #[test]
    fn workspace_write_without_network() {
        let entries = [
            entry("/Users/u/proj/Cargo.toml", false),
            entry("/Users/u/proj/src", true),
            entry("/Users/u/proj/we\"ird\\", true),
        ];
        let want = r#"(version 1)
(allow default)
(deny signal)
(allow signal (target same-sandbox))
(deny file-write*)
(allow file-write*
  (subpath "/private/var/folders/x/T/stepwise-sandbox-1-1-0")
  (subpath "/Users/u/proj/src")
  (subpath "/Users/u/proj/we\"ird\\")
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty")
  (regex #"^/dev/ttys[0-9]+$") (regex #"^/dev/fd/[0-9]+$"))
(allow file-write-data
  (literal "/Users/u/proj/Cargo.toml")
)
(deny network-outbound (remote ip "*:*"))
(deny network-inbound (local ip "*:*"))
(deny network-bind (local ip "*:*"))
"#;
        assert_eq!(profile(&policy(true, false), &entries), want);
    }

    #[test]
    fn read_only_with_network() {
        let want = r#"(version 1)
(allow default)
(deny signal)
(allow signal (target same-sandbox))
(deny file-write*)
(allow file-write*
  (subpath "/private/var/folders/x/T/stepwise-sandbox-1-1-0")
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty")
  (regex #"^/dev/ttys[0-9]+$") (regex #"^/dev/fd/[0-9]+$"))
"#;
        assert_eq!(profile(&policy(false, true), &[]), want);
    }

    #[test]
    fn the_guard_runs_inside_sandbox_exec() {
        let (program, args) = wrap(&policy(false, false), &["bash", "-c", "true"]);
        assert_eq!(program, "/usr/bin/sandbox-exec");
        assert_eq!(args[0], "-p");
        assert!(args[1].starts_with("(version 1)\n"));
        assert_eq!(&args[2..], ["--", "bash", "-c", "true"]);
    }
}
