//! The command line's host: files on disk, commands approved on the terminal (or by `--yes`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{find_first, not_found, run_shell, Approval, EditContext, Host, ResolvedPath, ShellOutput};

/// Asks the user about a shell command; `None` means every command is approved.
pub type Approver = Arc<dyn Fn(&str) -> Approval + Send + Sync>;

pub struct DiskHost {
    root: PathBuf,
    approver: Option<Approver>,
}

impl DiskHost {
    /// `root` must exist; it is canonicalised so symlinked workspaces compare correctly.
    pub fn new(root: &Path, approver: Option<Approver>) -> std::io::Result<DiskHost> {
        Ok(DiskHost { root: std::fs::canonicalize(root)?, approver })
    }
}

pub(crate) async fn read_disk(path: &ResolvedPath) -> Result<String, String> {
    tokio::fs::read_to_string(&path.abs).await.map_err(|e| io_error(path, e))
}

pub(crate) async fn write_disk(path: &ResolvedPath, content: &str) -> Result<(), String> {
    if let Some(parent) = path.abs.parent() {
        tokio::fs::create_dir_all(parent).await.map_err(|e| io_error(path, e))?;
    }
    tokio::fs::write(&path.abs, content).await.map_err(|e| io_error(path, e))
}

pub(crate) fn io_error(path: &ResolvedPath, e: std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("No such file: {}", path.given),
        std::io::ErrorKind::InvalidData => format!("{} is not a UTF-8 text file", path.given),
        _ => format!("{}: {e}", path.given),
    }
}

impl Host for DiskHost {
    fn root(&self) -> &Path {
        &self.root
    }

    async fn read_file(&self, path: &ResolvedPath) -> Result<String, String> {
        read_disk(path).await
    }

    async fn write_file(&self, path: &ResolvedPath, content: &str, _ctx: &EditContext) -> Result<(), String> {
        write_disk(path, content).await
    }

    async fn edit_file(&self, path: &ResolvedPath, old: &str, new: &str, _ctx: &EditContext) -> Result<(), String> {
        let text = read_disk(path).await?;
        let range = find_first(&text, old).ok_or_else(|| not_found(path))?;
        let mut out = String::with_capacity(text.len() + new.len());
        out.push_str(&text[..range.start]);
        out.push_str(new);
        out.push_str(&text[range.end..]);
        write_disk(path, &out).await
    }

    async fn approve_command(&self, command: &str) -> Approval {
        match &self.approver {
            None => Approval::Allow,
            Some(ask) => {
                let ask = ask.clone();
                let command = command.to_string();
                // The terminal prompt blocks on stdin: keep it off the async workers.
                tokio::task::spawn_blocking(move || ask(&command)).await.unwrap_or(Approval::Deny)
            }
        }
    }

    async fn run_command(&self, command: &str, timeout: Duration) -> Result<ShellOutput, String> {
        run_shell(&self.root, command, timeout).await
    }
}
