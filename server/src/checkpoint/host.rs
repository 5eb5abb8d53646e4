//! `Tracked`: any host, with the checkpoint hooks around its file tools and shell commands, so a front end
//! wires checkpoints by wrapping its host (and taking a checkpoint before each round).

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use super::Checkpoints;
use crate::host::{find_first, splice, Approval, Ask, EditContext, Host, ResolvedPath, ShellOutput};
use crate::locks;

pub struct Tracked<'a, H> {
    inner: &'a H,
    checkpoints: &'a Mutex<Checkpoints>,
}

impl<'a, H: Host> Tracked<'a, H> {
    pub fn new(inner: &'a H, checkpoints: &'a Mutex<Checkpoints>) -> Tracked<'a, H> {
        Tracked { inner, checkpoints }
    }

    /// Keeps what `path` holds before its first change since the checkpoint; the host's view (an editor
    /// buffer) where it can read the file as text, the disk otherwise. Returns that text.
    async fn before(&self, path: &ResolvedPath) -> Option<String> {
        if !locks::lock(self.checkpoints).wants(&path.rel) {
            return None;
        }
        let current = self.inner.read_file(path).await.ok();
        locks::lock(self.checkpoints).before_write(&path.rel, current.as_deref());
        current
    }
}

impl<H: Host> Host for Tracked<'_, H> {
    fn root(&self) -> &Path {
        self.inner.root()
    }

    async fn read_file(&self, path: &ResolvedPath) -> Result<String, String> {
        self.inner.read_file(path).await
    }

    async fn read_preview(&self, path: &ResolvedPath, limit: Option<u64>) -> Result<String, String> {
        self.inner.read_preview(path, limit).await
    }

    async fn write_file(&self, path: &ResolvedPath, content: &str, ctx: &EditContext) -> Result<(), String> {
        self.before(path).await;
        self.inner.write_file(path, content, ctx).await?;
        locks::lock(self.checkpoints).after_write(&path.rel, content);
        Ok(())
    }

    async fn edit_file(&self, path: &ResolvedPath, old: &str, new: &str, ctx: &EditContext) -> Result<(), String> {
        let before = self.before(path).await;
        self.inner.edit_file(path, old, new, ctx).await?;
        let after = match self.inner.read_file(path).await {
            Ok(text) => Some(text),
            Err(_) => before.and_then(|t| find_first(&t, old).map(|r| splice(&t, r, new))),
        };
        if let Some(text) = after {
            locks::lock(self.checkpoints).after_write(&path.rel, &text);
        }
        Ok(())
    }

    async fn approve(&self, ask: &Ask<'_>) -> Approval {
        self.inner.approve(ask).await
    }

    /// The scans block for a few milliseconds each (see the benchmark); they run on the calling task.
    async fn run_command(&self, command: &str, timeout: Duration) -> Result<ShellOutput, String> {
        locks::lock(self.checkpoints).before_command();
        // A cancelled run drops this future mid-command: what the command did so far is still recorded.
        let _after = AfterCommand(self.checkpoints);
        self.inner.run_command(command, timeout).await
    }
}

struct AfterCommand<'a>(&'a Mutex<Checkpoints>);

impl Drop for AfterCommand<'_> {
    fn drop(&mut self) {
        locks::lock(self.0).after_command();
    }
}
