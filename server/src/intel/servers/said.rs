//! Why a language server did not start or stopped, in its own words (issue 51): the first line it wrote to
//! stderr that says error, else the start of what it wrote, bounded; never a backtrace's tail (rustup's
//! proxy with `RUST_BACKTRACE=1` ends its one line with thirty lines of frames). And what usually fixes it,
//! where that is known. The same words wherever they show: the `not checked` lines, the tools' errors,
//! `stepwise doctor`.

use crate::mcp::process::Stderr;

/// The most characters of a server's words kept.
const MOST: usize = 200;

/// Why a server did not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotStarted {
    pub name: String,
    /// How it ended: `it exited with code 1`, `no answer in 10 s`, `cannot start bash for ...`.
    pub how: String,
    /// What it said (`words`).
    pub words: Option<String>,
    /// What usually fixes it (`fix`).
    pub fix: Option<String>,
}

impl NotStarted {
    pub fn new(name: &str, how: String, stderr: Option<&Stderr>) -> NotStarted {
        let words = stderr.and_then(words);
        let fix = words.as_deref().and_then(fix);
        NotStarted { name: name.to_string(), how, words, fix }
    }

    /// How it ended and what it said: `it exited with code 1: error: ...`.
    pub fn said(&self) -> String {
        match &self.words {
            Some(w) => format!("{}: {w}", self.how),
            None => self.how.clone(),
        }
    }

    /// `said`, and what fixes it: `...; usually fixed by: rustup component add rust-analyzer`.
    pub fn why(&self) -> String {
        match &self.fix {
            Some(f) => format!("{}; usually fixed by: {f}", self.said()),
            None => self.said(),
        }
    }

    /// The line once the model was told why: `rust-analyzer could not start`.
    pub fn short(&self) -> String {
        format!("{} could not start", self.name)
    }
}

impl std::fmt::Display for NotStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.short(), self.why())
    }
}

/// A server's words: its first line that says error (not a backtrace's frame), else the lines it began
/// with up to the first indented or empty one or a backtrace's heading, joined; at most `MOST` characters.
/// `None`: it said nothing.
pub fn words(s: &Stderr) -> Option<String> {
    let text = match &s.error {
        Some(line) => line.trim().to_string(),
        None => {
            let mut lines = s.head.iter().skip_while(|l| l.trim().is_empty());
            let first = lines.next()?.trim();
            let rest = lines.take_while(|l| {
                !l.trim().is_empty() && !l.starts_with(char::is_whitespace) && !l.to_lowercase().contains("backtrace")
            });
            std::iter::once(first).chain(rest.map(|l| l.trim())).collect::<Vec<_>>().join(" ")
        }
    };
    Some(bounded(text)).filter(|t| !t.is_empty())
}

/// Also `…` at the end when cut.
fn bounded(text: String) -> String {
    match text.char_indices().nth(MOST) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// What usually fixes a server that says `words`, where it is known: rustup's proxy for a component not
/// installed says `error: Unknown binary 'rust-analyzer' in official toolchain '...'` (before rustup 1.28:
/// `error: 'rust-analyzer' is not installed for the toolchain '...'`).
pub fn fix(words: &str) -> Option<String> {
    let quoted = |after: &str| words.split_once(after).and_then(|(_, rest)| rest.split_once('\'')).map(|(n, _)| n);
    let component = if words.contains("in official toolchain") {
        quoted("Unknown binary '")
    } else if words.contains("is not installed for the toolchain") {
        quoted("'")
    } else {
        None
    };
    component.filter(|c| is_name(c)).map(|c| format!("rustup component add {c}"))
}

/// A component's name: nothing a shell would read as more than a word.
fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(lines: &[&str]) -> Stderr {
        let mut s = Stderr::default();
        for l in lines {
            s.push(l.to_string());
        }
        s
    }

    #[test]
    fn the_error_line_not_the_backtrace_and_the_fix_for_rustup() {
        let s = said(&[
            "error: Unknown binary 'rust-analyzer' in official toolchain 'stable-x86_64-unknown-linux-gnu'.",
            "",
            "Stack backtrace:",
            "   0: anyhow::kind::Adhoc::new",
            "   2: rustup::toolchain::distributable::DistributableToolchain::recursion_error",
            "  13: __libc_start_call_main",
            "             at ./csu/../sysdeps/nptl/libc_start_call_main.h:58:16",
            "  15: <unknown>",
        ]);
        let n = NotStarted::new("rust-analyzer", "it exited with code 1".into(), Some(&s));
        assert_eq!(
            n.to_string(),
            "rust-analyzer could not start: it exited with code 1: error: Unknown binary 'rust-analyzer' in official \
             toolchain 'stable-x86_64-unknown-linux-gnu'.; usually fixed by: rustup component add rust-analyzer"
        );
        assert_eq!(n.short(), "rust-analyzer could not start");
        let old = "error: 'rust-analyzer' is not installed for the toolchain 'stable-x86_64-unknown-linux-gnu'";
        assert_eq!(fix(old).as_deref(), Some("rustup component add rust-analyzer"));
        assert_eq!(fix("error: Unknown binary 'x; rm -rf ~' in official toolchain 'stable'"), None);
        assert_eq!(fix("error: cannot open the database"), None);
    }

    #[test]
    fn a_frame_naming_an_error_is_not_the_line_and_without_one_the_start_is() {
        // A Python traceback: the frames are indented (one names errors.py); the line that says why is not.
        let s = said(&[
            "Traceback (most recent call last):",
            "  File \"/usr/lib/python3/pylsp/errors.py\", line 3, in <module>",
            "ModuleNotFoundError: No module named 'pylsp'",
        ]);
        assert_eq!(words(&s).as_deref(), Some("ModuleNotFoundError: No module named 'pylsp'"));
        // A panic without the word: the lines it began with, up to its backtrace.
        let s = said(&[
            "thread 'main' panicked at src/main.rs:2:5:",
            "no config found",
            "stack backtrace:",
            "   0: rust_begin_unwind",
        ]);
        assert_eq!(words(&s).as_deref(), Some("thread 'main' panicked at src/main.rs:2:5: no config found"));
        assert_eq!(words(&said(&["", "  "])), None);
        let long = "x".repeat(500);
        let w = words(&said(&[&format!("error: {long}")])).unwrap_or_default();
        assert_eq!(w.chars().count(), MOST + 1, "{w}");
        assert!(w.ends_with('…'));
    }
}
