//! A workspace's ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`), read for the walks that honour
//! them (the checkpoints' scan, code intelligence's look), and what they leave out.
//!
//! The matcher is our own (`pattern.rs`, git's rules: gitignore(5), `dir.c`, `wildmatch.c`) rather than the
//! `ignore` crate's: that one compiled a few glob lines into regular expressions, and the regex crates it
//! pulled in (`regex-automata`, `regex-syntax`, `globset`) were 0.36 MB of the 10.9 MB release binary. Each
//! line is compiled once, when the file is read, into a few tokens (a plain name or `*.ext` compared
//! directly), so a walk costs no more than it did.
//!
//! The files are read here (`text_file`) with care, because the workspace is not trusted: a FIFO named
//! `.gitignore` would block a plain open for ever (the scan, and with it every shell command's checkpoint,
//! would hang), and a huge file would be read whole.

mod pattern;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pattern::Pattern;

/// The rules of one ignore file, for the paths beneath its folder.
pub struct IgnoreFile {
    /// The folder the rules speak from (a `.gitignore`'s own; the workspace's top for `.git/info/exclude`).
    base: PathBuf,
    /// The lines, in the file's order (the last that matches decides).
    patterns: Vec<Pattern>,
}

/// What an ignore file says of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// No line matches it.
    None,
    Ignore,
    /// The last line that matches is a `!` one: re-included.
    Whitelist,
}

/// The ignore rules in force inside a folder, outermost first; folders without rules of their own share
/// their parent's.
pub type Rules = Arc<Vec<Arc<IgnoreFile>>>;

/// The most of an ignore file read (a workspace's are a few KB; a larger one is cut there).
const MAX_BYTES: u64 = 1 << 20;

impl IgnoreFile {
    /// The rules `text` holds for paths under `base` (lines as git reads them: a UTF-8 byte order mark
    /// skipped, `\n` or `\r\n` ends). `None` when it holds no rule.
    pub fn parse(text: &[u8], base: &Path) -> Option<IgnoreFile> {
        let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        let lines = text.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
        let patterns: Vec<Pattern> = lines.filter_map(Pattern::parse).collect();
        (!patterns.is_empty()).then(|| IgnoreFile { base: base.to_path_buf(), patterns })
    }

    /// What the file's last line that matches `path` (beneath its folder; a folder if `is_dir`) says of it.
    pub fn matched(&self, path: &Path, is_dir: bool) -> Match {
        let Some(rel) = self.relative(path) else { return Match::None };
        let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
        for p in self.patterns.iter().rev() {
            if (is_dir || !p.dir_only) && p.matches(rel, name) {
                return if p.negated { Match::Whitelist } else { Match::Ignore };
            }
        }
        Match::None
    }

    /// `path` from the file's folder, as bytes: a comparison of bytes for the walks' paths (the folder's
    /// own path joined with names), component by component otherwise.
    fn relative<'a>(&self, path: &'a Path) -> Option<&'a [u8]> {
        let bytes = path.as_os_str().as_encoded_bytes();
        let base = self.base.as_os_str().as_encoded_bytes();
        let base = base.strip_suffix(b"/").unwrap_or(base);
        let fast = bytes.strip_prefix(base).and_then(|rest| rest.strip_prefix(b"/"));
        let rel = match fast {
            Some(rel) => rel,
            None => path.strip_prefix(&self.base).ok()?.as_os_str().as_encoded_bytes(),
        };
        (!rel.is_empty()).then_some(rel)
    }
}

/// The rules of the ignore file `file`, for paths under `base` (its folder; the workspace's top for
/// `.git/info/exclude`). `None` when it is not a regular file (symlinks are not followed, as git does not
/// from 2.32 on), cannot be read, or holds no rule. A line that can match nothing is left out and the
/// others kept (git keeps it, and it never matches).
pub fn read(file: &Path, base: &Path) -> Option<IgnoreFile> {
    let bytes = crate::text_file::read(file, MAX_BYTES, false).ok()?;
    IgnoreFile::parse(&bytes, base)
}

/// `rules` with those of `folder`'s own ignore files, `has(name)` telling which names it holds: its
/// `.git/info/exclude` first where `exclude` (the workspace's top), then `.gitignore`, then `.ignore` (the
/// innermost rule decides, so `.ignore` wins, as in ripgrep). Folders without any share their parent's.
pub fn with_folder(folder: &Path, mut rules: Rules, exclude: bool, has: impl Fn(&str) -> bool) -> Rules {
    let exclude = (exclude && has(".git")).then(|| folder.join(".git/info/exclude"));
    let own = [".gitignore", ".ignore"].into_iter().filter(|n| has(n)).map(|n| folder.join(n));
    for file in exclude.into_iter().chain(own) {
        if let Some(here) = read(&file, folder) {
            Arc::make_mut(&mut rules).push(Arc::new(here));
        }
    }
    rules
}

/// Whether the innermost rule that speaks of `path` ignores it (a `!` line re-includes). What lies beneath
/// an ignored folder is the walks' to leave out: they do not enter it, as git does not.
pub fn ignored(rules: &[Arc<IgnoreFile>], path: &Path, is_dir: bool) -> bool {
    for r in rules.iter().rev() {
        match r.matched(path, is_dir) {
            Match::Ignore => return true,
            Match::Whitelist => return false,
            Match::None => {}
        }
    }
    false
}
