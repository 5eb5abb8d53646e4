//! The ACP host: files through the client when it offers `fs/read_text_file` / `fs/write_text_file`
//! (the agent sees unsaved buffers, its edits land in them), else the disk beneath the session folder;
//! shell commands and protected writes ask `session/request_permission`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest,
    SessionUpdate, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, WriteTextFileRequest,
};

use super::events::RunState;
use super::sessions::AcpSession;
use super::{ClientFs, Conn};
use crate::host::disk::{preview_disk, read_disk, write_disk};
use crate::host::{folder_name, preview, Approval, Ask, EditContext, FileChange, Host, ResolvedPath, ShellOutput};

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
}

impl Host for AcpHost {
    fn root(&self) -> &Path {
        self.session.root()
    }

    async fn read_file(&self, path: &ResolvedPath) -> Result<String, String> {
        self.text(path).await
    }

    async fn read_preview(&self, path: &ResolvedPath, limit: Option<u64>) -> Result<preview::Preview, String> {
        if self.fs.read {
            self.text(path).await.map(|t| preview::Preview::of(&t, limit))
        } else {
            preview_disk(path, limit).await
        }
    }

    async fn apply_change(&self, path: &ResolvedPath, change: &FileChange, _ctx: &EditContext) -> Result<(), String> {
        self.put(path, &change.new_text).await
    }

    async fn approve(&self, ask: &Ask<'_>, call_id: &str) -> Approval {
        let folder = folder_name(self.session.root());
        // The question is about the call in flight (the client already shows it): a child's is asked on the
        // child's session where the client has them, and names the child either way.
        let id = call_id.to_string();
        let child = self.session.ws.subagents().owner_of(call_id);
        let on = match (&child, self.fs.subagents) {
            (Some((sa, _)), true) => super::subagents::child_session(&self.session.id, sa),
            _ => self.session.id.clone(),
        };
        let question = crate::subagents::question(ask.question(&folder), child.as_ref());
        let fields = ToolCallUpdateFields::new().title(question);
        let options = vec![
            PermissionOption::new(ALLOW_ONCE, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(ALLOW_ALWAYS, "Allow for this session", PermissionOptionKind::AllowAlways),
            PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        ];
        let req = RequestPermissionRequest::new(on.clone(), ToolCallUpdate::new(id.clone(), fields), options);
        let answer = match self.conn.send_request(req).block_task().await {
            Ok(r) => match r.outcome {
                RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == ALLOW_ONCE => Approval::Allow,
                RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == ALLOW_ALWAYS => Approval::AllowForSession,
                _ => Approval::Deny,
            },
            Err(e) => {
                tracing::warn!("session/request_permission failed: {}", e.message);
                Approval::Deny
            }
        };
        // Allowed, the call runs now (`in_progress`); refused, it stays `pending` until it ends `failed`.
        match (answer.allowed(), child.is_some()) {
            (true, false) => self.state.allowed(&self.conn, &self.session.id),
            (true, true) => {
                let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
                super::events::send(&self.conn, &on, SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id, fields)));
            }
            (false, _) => {}
        }
        answer
    }

    /// A sandboxed command runs here under the policy even when the client offers terminals: a client's
    /// terminal runs it with the user's full rights.
    async fn run_command(
        &self,
        command: &str,
        timeout: Duration,
        sandbox: Option<&crate::sandbox::Policy>,
    ) -> Result<ShellOutput, String> {
        if self.fs.terminal && sandbox.is_none() {
            return super::terminal::run(&self.conn, &self.session, &self.state, command, timeout).await;
        }
        crate::host::run_shell_in(self.session.root(), command, timeout, sandbox).await
    }

    /// Never in a client terminal (the client would run it with the user's full rights, and it would
    /// outlive a `kill -9` of stepwise): under stepwise's own guard and sandbox, shown through tool call
    /// updates.
    async fn start_background(
        &self,
        command: &str,
        sandbox: Option<&crate::sandbox::Policy>,
    ) -> Result<crate::background::Started, String> {
        crate::background::spawn(self.session.root(), command, sandbox).await
    }
}
