//! The ACP host: files through the client when it offers `fs/read_text_file` / `fs/write_text_file`
//! (the agent sees unsaved buffers, its edits land in them), else the disk beneath the session folder;
//! shell commands and protected writes ask `session/request_permission`.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallUpdate, ToolCallUpdateFields, WriteTextFileRequest,
};

use super::events::RunState;
use super::sessions::AcpSession;
use super::tool_calls::FileChange;
use super::{ClientFs, Conn};
use crate::host::disk::{preview_disk, read_disk, write_disk};
use crate::host::{
    find_first, folder_name, minimal_change, not_found, preview, run_shell, splice, Approval, Ask, EditContext, Host,
    ResolvedPath, ShellOutput,
};

pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const REJECT_ONCE: &str = "reject_once";

pub(crate) struct AcpHost {
    pub session: Arc<AcpSession>,
    pub conn: Conn,
    pub fs: ClientFs,
    pub state: Arc<RunState>,
}

impl AcpHost {
    fn client_error(&self, path: &ResolvedPath, what: &str, e: agent_client_protocol::Error) -> String {
        format!("{}: the editor could not {what} it: {}", path.given, e.message)
    }

    /// The whole text of a file, from the client's buffers when it offers them.
    async fn text(&self, path: &ResolvedPath) -> Result<String, String> {
        if !self.fs.read {
            return read_disk(path).await;
        }
        let req = ReadTextFileRequest::new(self.session.id.clone(), path.abs.clone());
        match self.conn.send_request(req).block_task().await {
            Ok(r) => Ok(r.content),
            // Clients answer a missing file with an error of their own wording; say it as the disk would.
            Err(_) if !path.abs.exists() => Err(format!("No such file: {}", path.given)),
            Err(e) => Err(self.client_error(path, "read", e)),
        }
    }

    async fn put(&self, path: &ResolvedPath, content: &str) -> Result<(), String> {
        if !self.fs.write {
            return write_disk(path, content).await;
        }
        let req = WriteTextFileRequest::new(self.session.id.clone(), path.abs.clone(), content.to_string());
        self.conn.send_request(req).block_task().await.map(|_| ()).map_err(|e| self.client_error(path, "write", e))
    }

    fn record(&self, path: &ResolvedPath, old_text: Option<String>, new_text: String, at: usize) {
        let line = old_text.as_deref().map_or(1, |t| t[..at.min(t.len())].matches('\n').count() as u32 + 1);
        self.state.set_change(FileChange { path: path.abs.clone(), old_text, new_text, line });
    }
}

impl Host for AcpHost {
    fn root(&self) -> &Path {
        &self.session.root
    }

    async fn read_file(&self, path: &ResolvedPath) -> Result<String, String> {
        self.text(path).await
    }

    async fn read_preview(&self, path: &ResolvedPath, limit: Option<u64>) -> Result<String, String> {
        if self.fs.read {
            self.text(path).await.map(|t| preview::read_with_limit(&t, limit))
        } else {
            preview_disk(path, limit).await
        }
    }

    async fn write_file(&self, path: &ResolvedPath, content: &str, _ctx: &EditContext) -> Result<(), String> {
        self.state.running(&self.conn, &self.session.id, None);
        // The old text only feeds the diff; a file that cannot be read is shown as new.
        let old = if path.abs.exists() { self.text(path).await.ok() } else { None };
        self.put(path, content).await?;
        let at = old.as_deref().map_or(0, |o| minimal_change(o, content).0);
        self.record(path, old, content.to_string(), at);
        Ok(())
    }

    async fn edit_file(&self, path: &ResolvedPath, old: &str, new: &str, _ctx: &EditContext) -> Result<(), String> {
        self.state.running(&self.conn, &self.session.id, None);
        let text = self.text(path).await?;
        let range = find_first(&text, old).ok_or_else(|| not_found(path))?;
        let start = range.start;
        let out = splice(&text, range, new);
        self.put(path, &out).await?;
        self.record(path, Some(text), out, start);
        Ok(())
    }

    async fn approve(&self, ask: &Ask<'_>) -> Approval {
        if self.session.allow_always.load(Ordering::Relaxed) {
            return Approval::Allow;
        }
        let folder = folder_name(&self.session.root);
        // The question is about the call in flight (the client already shows it); without one, a call id
        // of its own.
        let id = self.state.current_call().unwrap_or_else(|| "stepwise-permission".to_string());
        let fields = ToolCallUpdateFields::new().title(ask.question(&folder));
        let options = vec![
            PermissionOption::new(ALLOW_ONCE, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(ALLOW_ALWAYS, "Allow for this session", PermissionOptionKind::AllowAlways),
            PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        ];
        let req = RequestPermissionRequest::new(self.session.id.clone(), ToolCallUpdate::new(id, fields), options);
        match self.conn.send_request(req).block_task().await {
            Ok(r) => match r.outcome {
                RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == ALLOW_ONCE => Approval::Allow,
                RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == ALLOW_ALWAYS => {
                    self.session.allow_always.store(true, Ordering::Relaxed);
                    Approval::Allow
                }
                _ => Approval::Deny,
            },
            Err(e) => {
                tracing::warn!("session/request_permission failed: {}", e.message);
                Approval::Deny
            }
        }
    }

    async fn run_command(&self, command: &str, timeout: Duration) -> Result<ShellOutput, String> {
        if self.fs.terminal {
            return super::terminal::run(&self.conn, &self.session, &self.state, command, timeout).await;
        }
        self.state.running(&self.conn, &self.session.id, None);
        run_shell(&self.session.root, command, timeout).await
    }
}
