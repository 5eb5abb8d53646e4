//! The sandbox on macOS: the policy (`policy.rs`) as a Seatbelt profile, run as `sandbox-exec -p PROFILE --
//! bash ...` (the guard and the command run inside it, stepwise does not). Generated as text on every
//! platform, so its golden test runs on Linux too.
//!
//! The profile allows by default and denies what the policy forbids (writes, TCP/UDP over IP, signals
//! to processes outside the sandbox), rather than Codex's deny-by-default list of Mach services and
//! sysctls: the policy lets a command read everything, and a deny-list that cannot be run here must not
//! break the developer tools it was never tried with. Later rules win, so each allowance follows its
//! deny. The writable paths are the same as Landlock's: the workspace whole, the private `TMPDIR`, the
//! user's `sandboxWritable` folders and the usual character devices; then, unlike Landlock, Seatbelt can
//! deny by name, so the protected paths are denied beneath the workspace (names made later too), and
//! the keeper's after-check (`keep/`) is a second line rather than the only one.

use std::fmt::Write;

use super::policy::Policy;

pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A path as an SBPL string literal.
fn quoted(path: &std::path::Path) -> String {
    let s = path.to_string_lossy();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A path as the start of an SBPL regular expression (its metacharacters escaped).
fn regex_prefix(path: &std::path::Path) -> String {
    let mut out = String::from("^");
    for c in path.to_string_lossy().chars() {
        if "\\.^$|?*+()[]{}\"".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The protected paths beneath the workspace, as regular expressions after its path (CONTRACT "Sandbox").
const PROTECTED: [&str; 8] = [
    "(/.*)?/\\.git/(hooks(/.*)?|config|modules/.*/(hooks(/.*)?|config))$",
    "(/.*)?/\\.env[^/]*$",
    "(/.*)?/\\.envrc$",
    "(/.*)?/\\.vscode(/.*)?$",
    "(/.*)?/(AGENTS|CLAUDE)\\.md$",
    "(/.*)?/\\.mcp\\.json$",
    "/(\\.nvim\\.lua|\\.nvimrc|\\.exrc)$",
    "(/.*)?/\\.husky(/.*)?$",
];

/// The profile for `policy`.
pub fn profile(policy: &Policy) -> String {
    let mut p = String::from("(version 1)\n(allow default)\n");
    p.push_str("(deny signal)\n(allow signal (target same-sandbox))\n");
    p.push_str("(deny file-write*)\n(allow file-write*\n");
    for dir in policy.write_roots() {
        let _ = writeln!(p, "  (subpath {})", quoted(&dir));
    }
    p.push_str("  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\")\n");
    p.push_str("  (regex #\"^/dev/ttys[0-9]+$\") (regex #\"^/dev/fd/[0-9]+$\"))\n");
    if policy.write {
        let root = regex_prefix(&policy.root);
        p.push_str("(deny file-write*\n");
        for r in PROTECTED {
            let _ = writeln!(p, "  (regex #\"{root}{r}\")");
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
    let profile = profile(policy);
    let mut args = vec!["-p".to_string(), profile, "--".to_string()];
    args.extend(rest.iter().map(|s| s.to_string()));
    (SANDBOX_EXEC.to_string(), args)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unit tests' policy in macOS's paths, one of them in need of quoting.
    fn policy(write: bool, network: bool) -> Policy {
        Policy {
            root: "/Users/u/pro.j".into(),
            tmp: "/private/var/folders/x/T/stepwise-sandbox-1-1-0".into(),
            write,
            network,
            writable: vec!["/Users/u/we\"ird\\".into()],
            ..crate::sandbox::policy::example()
        }
    }

    #[test]
    fn workspace_write_without_network() {
        let p = profile(&policy(true, false));
        let want_start = r#"(version 1)
(allow default)
(deny signal)
(allow signal (target same-sandbox))
(deny file-write*)
(allow file-write*
  (subpath "/private/var/folders/x/T/stepwise-sandbox-1-1-0")
  (subpath "/Users/u/pro.j")
  (subpath "/Users/u/we\"ird\\")
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty")
  (regex #"^/dev/ttys[0-9]+$") (regex #"^/dev/fd/[0-9]+$"))
(deny file-write*
  (regex #"^/Users/u/pro\.j(/.*)?/\.git/(hooks(/.*)?|config|modules/.*/(hooks(/.*)?|config))$")
  (regex #"^/Users/u/pro\.j(/.*)?/\.env[^/]*$")
"#;
        assert!(p.starts_with(want_start), "{p}");
        assert!(p.ends_with(
            r#"(deny network-outbound (remote ip "*:*"))
(deny network-inbound (local ip "*:*"))
(deny network-bind (local ip "*:*"))
"#
        ));
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
  (subpath "/Users/u/we\"ird\\")
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty")
  (regex #"^/dev/ttys[0-9]+$") (regex #"^/dev/fd/[0-9]+$"))
"#;
        assert_eq!(profile(&policy(false, true)), want);
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
