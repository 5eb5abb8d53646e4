//! The first seam: where files and commands live.
//!
//! The agent reads, writes and runs through a `Host`. The command line uses `DiskHost`; the LSP sidecar
//! implements the same trait on top of the editor's buffers and `workspace/applyEdit`.

mod approval;
mod beneath;
pub mod disk;
pub mod output;
mod path;
pub mod preview;
pub(crate) mod shell;

use std::future::Future;
use std::path::Path;
use std::time::Duration;

pub use approval::{protected, Approval, Ask};
pub use disk::DiskHost;
pub use path::{resolve, ResolvedPath};
pub use shell::{is_dangerous, run_shell, ShellOutput};

/// Context of a change, so the editor can label it ("edit_file src/a.rs — Fix the parser").
#[derive(Debug, Clone, Default)]
pub struct EditContext {
    pub tool: &'static str,
    pub step: Option<String>,
}

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
    ) -> impl Future<Output = Result<String, String>> + Send {
        async move { self.read_file(path).await.map(|t| preview::read_with_limit(&t, limit)) }
    }

    /// Replace a file's whole content, creating it and its parent folders as needed.
    fn write_file(
        &self,
        path: &ResolvedPath,
        content: &str,
        ctx: &EditContext,
    ) -> impl Future<Output = Result<(), String>> + Send;

    /// Replace the first occurrence of `old` with `new`. A missing `old` is
    /// `Err("Text not found in <path as given>")`.
    fn edit_file(
        &self,
        path: &ResolvedPath,
        old: &str,
        new: &str,
        ctx: &EditContext,
    ) -> impl Future<Output = Result<(), String>> + Send;

    /// Ask the user whether a shell command may run, or a protected file may be written.
    fn approve(&self, ask: &Ask<'_>) -> impl Future<Output = Approval> + Send;

    /// Run an approved shell command in the workspace. Dropping the future kills it. `Err` is a failure
    /// to run it at all (or its timeout); a command that ran and failed is an `Ok` marked `is_error`.
    fn run_command(&self, command: &str, timeout: Duration)
        -> impl Future<Output = Result<ShellOutput, String>> + Send;
}

/// Byte range of the first occurrence of `old` in `text`.
pub fn find_first(text: &str, old: &str) -> Option<std::ops::Range<usize>> {
    if old.is_empty() {
        return None;
    }
    text.find(old).map(|start| start..start + old.len())
}

pub(crate) fn not_found(path: &ResolvedPath) -> String {
    format!("Text not found in {}", path.given)
}
