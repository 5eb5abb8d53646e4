//! The host behind a `dyn`: the engine's code for a run (the agent loop, the tools, the checkpoint hooks)
//! is built once for `dyn DynHost` rather than once per adapter's host type. Each host call then costs a
//! boxed future (a few a round); before, the loop and the tools were in the binary three times over, one
//! copy per host (issue 39: about 110 KB of the tools alone).

use std::path::Path;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::{detached, intelligence, Approval, Ask, EditContext, FileChange, Host, Policy, ResolvedPath, ShellOutput};

/// `Host`, object-safe: every future boxed. Any host is one (`impl<H: Host> DynHost for H`), and
/// `dyn DynHost` is a `Host` again, so the engine takes `&dyn DynHost` where it took `&H`.
pub trait DynHost: Send + Sync {
    fn dyn_root(&self) -> &Path;
    fn dyn_read_file<'a>(&'a self, path: &'a ResolvedPath) -> BoxFuture<'a, Result<String, String>>;
    fn dyn_read_preview<'a>(
        &'a self,
        path: &'a ResolvedPath,
        limit: Option<u64>,
    ) -> BoxFuture<'a, Result<super::preview::Preview, String>>;
    fn dyn_apply_change<'a>(
        &'a self,
        path: &'a ResolvedPath,
        change: &'a FileChange,
        ctx: &'a EditContext,
    ) -> BoxFuture<'a, Result<(), String>>;
    fn dyn_approve<'a>(&'a self, ask: &'a Ask<'_>, call_id: &'a str) -> BoxFuture<'a, Approval>;
    fn dyn_run_command<'a>(
        &'a self,
        command: &'a str,
        timeout: Duration,
        sandbox: Option<&'a Policy>,
    ) -> BoxFuture<'a, Result<ShellOutput, String>>;
    fn dyn_start_background<'a>(
        &'a self,
        command: &'a str,
        sandbox: Option<&'a Policy>,
    ) -> BoxFuture<'a, Result<detached::Started, String>>;
    fn dyn_background_seen(&self, running: bool);
    fn dyn_intelligence(&self) -> Option<intelligence::Source>;
}

impl<H: Host> DynHost for H {
    fn dyn_root(&self) -> &Path {
        self.root()
    }
    fn dyn_read_file<'a>(&'a self, path: &'a ResolvedPath) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(self.read_file(path))
    }
    fn dyn_read_preview<'a>(
        &'a self,
        path: &'a ResolvedPath,
        limit: Option<u64>,
    ) -> BoxFuture<'a, Result<super::preview::Preview, String>> {
        Box::pin(self.read_preview(path, limit))
    }
    fn dyn_apply_change<'a>(
        &'a self,
        path: &'a ResolvedPath,
        change: &'a FileChange,
        ctx: &'a EditContext,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(self.apply_change(path, change, ctx))
    }
    fn dyn_approve<'a>(&'a self, ask: &'a Ask<'_>, call_id: &'a str) -> BoxFuture<'a, Approval> {
        Box::pin(self.approve(ask, call_id))
    }
    fn dyn_run_command<'a>(
        &'a self,
        command: &'a str,
        timeout: Duration,
        sandbox: Option<&'a Policy>,
    ) -> BoxFuture<'a, Result<ShellOutput, String>> {
        Box::pin(self.run_command(command, timeout, sandbox))
    }
    fn dyn_start_background<'a>(
        &'a self,
        command: &'a str,
        sandbox: Option<&'a Policy>,
    ) -> BoxFuture<'a, Result<detached::Started, String>> {
        Box::pin(self.start_background(command, sandbox))
    }
    fn dyn_background_seen(&self, running: bool) {
        self.background_seen(running)
    }
    fn dyn_intelligence(&self) -> Option<intelligence::Source> {
        self.intelligence()
    }
}

impl Host for dyn DynHost + '_ {
    fn root(&self) -> &Path {
        self.dyn_root()
    }
    async fn read_file(&self, path: &ResolvedPath) -> Result<String, String> {
        self.dyn_read_file(path).await
    }
    async fn read_preview(&self, path: &ResolvedPath, limit: Option<u64>) -> Result<super::preview::Preview, String> {
        self.dyn_read_preview(path, limit).await
    }
    async fn apply_change(&self, path: &ResolvedPath, change: &FileChange, ctx: &EditContext) -> Result<(), String> {
        self.dyn_apply_change(path, change, ctx).await
    }
    async fn approve(&self, ask: &Ask<'_>, call_id: &str) -> Approval {
        self.dyn_approve(ask, call_id).await
    }
    async fn run_command(
        &self,
        command: &str,
        timeout: Duration,
        sandbox: Option<&Policy>,
    ) -> Result<ShellOutput, String> {
        self.dyn_run_command(command, timeout, sandbox).await
    }
    async fn start_background(&self, command: &str, sandbox: Option<&Policy>) -> Result<detached::Started, String> {
        self.dyn_start_background(command, sandbox).await
    }
    fn background_seen(&self, running: bool) {
        self.dyn_background_seen(running)
    }
    fn intelligence(&self) -> Option<intelligence::Source> {
        self.dyn_intelligence()
    }
}
