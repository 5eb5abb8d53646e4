//! The first seam: where files and commands live.
//!
//! The agent reads, writes and runs through a `Host`. The command line uses `DiskHost`; the LSP sidecar
//! implements the same trait on top of the editor's buffers and `workspace/applyEdit`.

mod approval;
pub(crate) mod beneath;
mod change;
pub mod detached;
pub mod disk;
mod dyn_host;
#[cfg(target_os = "linux")]
mod fork_guard;
pub(crate) mod guard;
pub mod intelligence;
pub mod output;
mod path;
mod platform;
pub mod preview;
mod procs;
pub(crate) mod shell;

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use crate::sandbox::Policy;

pub use approval::{protected, Approval, ApprovalMode, Approvals, Ask, Scope};
pub use change::FileChange;
pub use disk::DiskHost;
pub use dyn_host::DynHost;
pub use path::{resolve, ResolvedPath};
pub use platform::PORTABLE_ENV;
pub use shell::{is_dangerous, run_shell, run_shell_in, ShellOutput};

/// Context of a change, so the editor can label it ("edit_file src/a.rs — Fix the parser") and the
/// client can tie it to the tool call that made it.
#[derive(Debug, Clone, Default)]
pub struct EditContext {
    pub tool: &'static str,
    pub step: Option<String>,
    pub call_id: String,
}

/// The first seam. What differs between hosts: where a file's current text comes from, how a change
/// reaches it, where commands run and who answers a question. What `write_file` and `edit_file` do is
/// the engine's (`tools`), once.
pub trait Host: Send + Sync {
    /// The workspace folder; every path the model names is resolved inside it.
    fn root(&self) -> &Path;

    /// The current text of a file (the editor's buffer where one is open), for edits: whole, up to
    /// `disk::MAX_FILE`.
    fn read_file(&self, path: &ResolvedPath) -> impl Future<Output = Result<String, String>> + Send;

    /// What the `read_file` tool shows: the first `limit` lines and a count of the rest, at most
    /// `preview::READ_CAP` characters. Hosts reading from disk stream it (`disk::preview_disk`).
    fn read_preview(
        &self,
        path: &ResolvedPath,
        limit: Option<u64>,
    ) -> impl Future<Output = Result<preview::Preview, String>> + Send {
        async move { self.read_file(path).await.map(|t| preview::Preview::of(&t, limit)) }
    }

    /// Applies a change the engine computed from the text `read_file` gave (creating the file and its
    /// folders when `change.old_text` is `None`).
    fn apply_change(
        &self,
        path: &ResolvedPath,
        change: &FileChange,
        ctx: &EditContext,
    ) -> impl Future<Output = Result<(), String>> + Send;

    /// Ask the user whether a shell command may run, or a protected file may be written; `call_id` is
    /// the tool call asking (a client may show the question on it).
    fn approve(&self, ask: &Ask<'_>, call_id: &str) -> impl Future<Output = Approval> + Send;

    /// Run a shell command in the workspace: confined by `sandbox` when given (the host must then run it
    /// itself, under that policy), else an approved command with the user's rights. Dropping the future
    /// kills it. `Err` is a failure to run it at all (or its timeout); a command that ran and failed is an
    /// `Ok` marked `is_error`.
    fn run_command(
        &self,
        command: &str,
        timeout: Duration,
        sandbox: Option<&Policy>,
    ) -> impl Future<Output = Result<ShellOutput, String>> + Send;

    /// Starts a background command (`background_run`) in the workspace, confined by `sandbox` when given,
    /// under stepwise's own guard wherever the host is (an ACP client's terminal would run it with the
    /// user's full rights, beyond stepwise's reach after a `kill -9`). It runs until it ends, is killed or
    /// the session's `Background` goes.
    fn start_background(
        &self,
        command: &str,
        sandbox: Option<&Policy>,
    ) -> impl Future<Output = Result<detached::Started, String>> + Send {
        detached::spawn(self.root(), command, sandbox)
    }

    /// Background tasks may have changed files since the last look: a host that records changes
    /// (checkpoints) looks now; `running` says whether a task still runs (keep watching).
    fn background_seen(&self, _running: bool) {}
    /// The session's source of code intelligence (an editor answering `stepwise/query`, or the language
    /// servers stepwise starts), `None` where there is none: then no code-intelligence tool is offered and
    /// no `<diagnostics>` block is sent. Cheap: an `Arc` clone.
    fn intelligence(&self) -> Option<intelligence::Source> {
        None
    }
}

/// Byte range of the first occurrence of `old` in `text`.
pub fn find_first(text: &str, old: &str) -> Option<std::ops::Range<usize>> {
    if old.is_empty() {
        return None;
    }
    text.find(old).map(|start| start..start + old.len())
}

/// `text` with the bytes of `range` replaced by `new`.
pub fn splice(text: &str, range: std::ops::Range<usize>, new: &str) -> String {
    let mut out = String::with_capacity(text.len() - range.len() + new.len());
    out.push_str(&text[..range.start]);
    out.push_str(new);
    out.push_str(&text[range.end..]);
    out
}

/// The smallest single replacement turning `old` into `new`: (start, end) in `old`, and the new text.
pub fn minimal_change<'a>(old: &str, new: &'a str) -> (usize, usize, &'a str) {
    let mut start = old.bytes().zip(new.bytes()).take_while(|(a, b)| a == b).count();
    while !old.is_char_boundary(start) || !new.is_char_boundary(start) {
        start -= 1;
    }
    let max_suffix = old.len().min(new.len()) - start;
    let mut suffix = old.bytes().rev().zip(new.bytes().rev()).take(max_suffix).take_while(|(a, b)| a == b).count();
    while !old.is_char_boundary(old.len() - suffix) || !new.is_char_boundary(new.len() - suffix) {
        suffix -= 1;
    }
    (start, old.len() - suffix, &new[start..new.len() - suffix])
}

/// A workspace folder's name, as questions and messages to the user call it (the whole path for `/`).
pub fn folder_name(root: &Path) -> String {
    root.file_name().map_or_else(|| root.display().to_string(), |n| n.to_string_lossy().into_owned())
}

pub(crate) fn not_found(path: &ResolvedPath) -> String {
    format!("Text not found in {}", path.given)
}

#[cfg(test)]
mod tests {
    use super::{minimal_change, splice};

    #[test]
    fn minimal_change_keeps_common_ends() {
        assert_eq!(minimal_change("abcXYZdef", "abc123def"), (3, 6, "123"));
        assert_eq!(minimal_change("same", "same"), (4, 4, ""));
        assert_eq!(minimal_change("", "new"), (0, 0, "new"));
        assert_eq!(minimal_change("aaa", "aa"), (2, 3, ""));
        assert_eq!(minimal_change("héllo", "hèllo"), (1, 3, "è"));
    }

    #[test]
    fn splice_replaces_a_byte_range() {
        assert_eq!(splice("one two three", 4..7, "2"), "one 2 three");
        assert_eq!(splice("ab", 2..2, "c"), "abc");
        assert_eq!(splice("héllo", 1..3, ""), "hllo");
    }
}
