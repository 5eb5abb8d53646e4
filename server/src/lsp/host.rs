//! The sidecar's host: files are the editor's buffers, changes go out as `workspace/applyEdit`,
//! shell commands are approved through the editor and see the agent's unsaved edits. What text is where
//! (buffer, the agent's unsaved text, disk) is decided once, in texts/.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tower_lsp_server::ls_types::{
    request::ApplyWorkspaceEdit, ApplyWorkspaceEditParams, CreateFile, CreateFileOptions, DocumentChangeOperation,
    DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier, ResourceOp, TextDocumentEdit, TextEdit, Uri,
    WorkspaceEdit,
};

use super::ask::Asking;
use super::ext::{self, SaveDocuments};
use super::notify::Outgoing;
use super::positions::range_of;
use super::session::{EditMark, Session};
use super::shared::Shared;
use super::texts::{AgentEdit, Text};
use crate::config::Overrides;
use crate::host::disk::{io_error, read_disk, write_disk};
use crate::host::{splice, Approval, ApprovalMode, Ask, EditContext, FileChange, Host, ResolvedPath, ShellOutput};
use crate::locks;

pub struct EditorHost {
    pub shared: Arc<Shared>,
    pub session: Arc<Session>,
    pub run_id: String,
    pub approval: ApprovalMode,
    pub request_timeout: Duration,
    pub approval_timeout: Duration,
}

impl EditorHost {
    /// The host of a run in `folder` with the folder's settings: its approval, how long the editor may
    /// take to answer a request and the user a question.
    pub fn for_run(shared: &Arc<Shared>, session: &Arc<Session>, run_id: String, settings: &Overrides) -> EditorHost {
        EditorHost {
            shared: shared.clone(),
            session: session.clone(),
            run_id,
            approval: settings.approval.unwrap_or(ApprovalMode::Ask),
            request_timeout: Duration::from_secs(settings.request_timeout_secs.unwrap_or(30).max(1)),
            approval_timeout: Duration::from_secs(settings.approval_timeout_secs.unwrap_or(300).max(1)),
        }
    }

    /// What the agent should see: the editor's text (texts/ rule 1), else the disk.
    async fn current_text(&self, path: &ResolvedPath) -> Result<Text, String> {
        match self.shared.texts.read(&path.abs) {
            Some(t) => Ok(t),
            None => read_disk(path).await.map(|text| Text { text, open: None }),
        }
    }

    fn status(&self, state: ext::RunState) {
        self.session.waiting.store(state == ext::RunState::Waiting, std::sync::atomic::Ordering::Relaxed);
        let running = self.session.ws.background().running();
        self.shared
            .notifier
            .send(Outgoing::Status(ext::Status::new(&self.session.at(), &self.run_id, state).tasks(running)));
    }

    fn label(&self, ctx: &EditContext, path: &ResolvedPath) -> String {
        match &ctx.step {
            Some(step) => format!("stepwise: {} {} — {step}", ctx.tool, path.given),
            None => format!("stepwise: {} {}", ctx.tool, path.given),
        }
    }

    /// Replace `bytes` of the file's current text with `new` (`current` is `None` for a new file): as a
    /// versioned edit of the open document, an edit of a file the editor will open, or on disk for
    /// clients without applyEdit.
    async fn replace(
        &self,
        path: &ResolvedPath,
        current: Option<&Text>,
        bytes: std::ops::Range<usize>,
        new: &str,
        ctx: &EditContext,
    ) -> Result<(), String> {
        let create = current.is_none();
        let open = current.and_then(|c| c.open.as_ref());
        let text = current.map_or("", |c| c.text.as_str());
        let version = open.and_then(|o| o.version);
        let updated = splice(text, bytes.clone(), new);
        let caps = self.shared.caps();
        if !caps.apply_edit || (create && !(caps.create_files && caps.document_changes)) {
            write_disk(path, &updated).await?;
            self.shared.texts.on_disk(&path.abs);
            return Ok(());
        }
        let enc = self.shared.texts.encoding();
        let uri = self.uri_for(&path.abs).ok_or_else(|| format!("cannot name {} as a URI", path.given))?;
        let range = range_of(text, bytes.clone(), enc);
        let edit = TextEdit { range, new_text: new.to_string() };
        let doc_edit = TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri: uri.clone(), version },
            edits: vec![OneOf::Left(edit.clone())],
        };
        let ws_edit = if !caps.document_changes {
            WorkspaceEdit { changes: Some([(uri, vec![edit])].into_iter().collect()), ..Default::default() }
        } else if create {
            let op = ResourceOp::Create(CreateFile {
                uri,
                options: Some(CreateFileOptions { overwrite: Some(false), ignore_if_exists: Some(true) }),
                annotation_id: None,
            });
            WorkspaceEdit {
                document_changes: Some(DocumentChanges::Operations(vec![
                    DocumentChangeOperation::Op(op),
                    DocumentChangeOperation::Edit(doc_edit),
                ])),
                ..Default::default()
            }
        } else {
            WorkspaceEdit { document_changes: Some(DocumentChanges::Edits(vec![doc_edit])), ..Default::default() }
        };
        // Sent and recorded on a task of its own: once the edit is out, its answer is recorded (document,
        // marks, unsaved set) even if the run is cancelled while waiting for it.
        let applied = Applied {
            shared: self.shared.clone(),
            session: self.session.clone(),
            edit: AgentEdit {
                path: path.abs.clone(),
                made_for: open.map(|o| o.opened),
                at: bytes.start,
                old: text[bytes].to_string(),
                new: new.to_string(),
                after: updated,
            },
            lines: (range.start.line, range.start.line + new.matches('\n').count() as u32),
            step: ctx.step.clone().unwrap_or_else(|| ctx.tool.to_string()),
        };
        let (label, timeout) = (self.label(ctx, path), self.request_timeout);
        tokio::spawn(applied.send(ws_edit, label, timeout))
            .await
            .map_err(|e| format!("internal error: the edit task failed: {e}"))??;
        if open.is_some() {
            // The editor reports its new text with didChange; the next edit waits (bounded) for that, so
            // it can name the version it applies to. Reads do not need it: the server's copy has the edit.
            self.shared.texts.wait_settled(&path.abs, Duration::from_secs(2)).await;
        }
        Ok(())
    }

    /// The URI the editor knows a file by: an open document's own, else one made from the path.
    fn uri_for(&self, path: &Path) -> Option<Uri> {
        self.shared.texts.uri_of(path).or_else(|| Uri::from_file_path(path))
    }

    /// Before a command runs on disk, the agent's unsaved edits are saved (by the editor if it can).
    async fn flush_unsaved(&self) -> Result<(), String> {
        // Marked, not taken: a path stops being unsaved only once it is saved (texts/ rule 6), so a
        // cancel or a failure while saving loses nothing.
        let unsaved = self.shared.texts.unsaved_beneath(&self.session.root);
        if unsaved.is_empty() {
            return Ok(());
        }
        let mut remaining = unsaved.clone();
        if self.shared.caps().save_documents {
            let named: Vec<(PathBuf, String)> = unsaved
                .iter()
                .filter_map(|u| Some((u.path.clone(), self.uri_for(&u.path)?.as_str().to_string())))
                .collect();
            let uris: Vec<String> = named.iter().map(|(_, u)| u.clone()).collect();
            self.shared.notifier.flush().await;
            let answer = tokio::time::timeout(
                self.request_timeout,
                self.shared.client.send_request::<SaveDocuments>(ext::SaveDocumentsParams { uris }),
            )
            .await;
            match answer {
                Ok(Ok(None)) => remaining.clear(),
                Ok(Ok(Some(ext::SavedDocuments { saved }))) => {
                    remaining.retain(|r| !named.iter().any(|(np, u)| *np == r.path && saved.contains(u)));
                }
                Ok(Err(e)) => tracing::warn!("stepwise/saveDocuments failed: {}", e.message),
                Err(_) => tracing::warn!("stepwise/saveDocuments not answered in time"),
            }
        }
        for u in unsaved.iter().filter(|u| !remaining.contains(u)) {
            self.shared.texts.saved(u);
        }
        // Whatever the editor did not save, the server writes itself: the command must see the agent's work.
        // The text written has every edit the editor applied, reported or not.
        for r in &remaining {
            if let Some((text, now)) = self.shared.texts.to_write(&r.path) {
                let rp = crate::host::resolve(&self.session.root, &r.path.to_string_lossy())?;
                write_disk(&rp, &text).await?;
                self.shared.texts.saved(&now);
            }
        }
        Ok(())
    }
}

/// An edit on its way to the editor, and what to record once it is applied.
struct Applied {
    shared: Arc<Shared>,
    session: Arc<Session>,
    edit: AgentEdit,
    /// Lines the new text occupies, for the edit's lens.
    lines: (u32, u32),
    step: String,
}

impl Applied {
    async fn send(self, edit: WorkspaceEdit, label: String, timeout: Duration) -> Result<(), String> {
        let params = ApplyWorkspaceEditParams { label: Some(label), edit };
        self.shared.notifier.flush().await;
        let request = self.shared.client.send_request::<ApplyWorkspaceEdit>(params);
        match tokio::time::timeout(timeout, request).await {
            Err(_) => {
                return Err(format!(
                    "the editor did not answer the edit request within {}s; the change may not have been applied",
                    timeout.as_secs()
                ))
            }
            Ok(Err(e)) => return Err(format!("the editor failed to apply the edit: {}", e.message)),
            Ok(Ok(r)) if !r.applied => {
                return Err(format!(
                    "the editor rejected the edit: {}",
                    r.failure_reason.unwrap_or_else(|| "no reason given".into())
                ))
            }
            Ok(Ok(_)) => {}
        }
        let path = self.edit.path.clone();
        self.shared.texts.applied(self.edit);
        let mut view = locks::write(&self.session.view);
        view.marks.retain(|m| !(m.path == path && m.start == self.lines.0));
        view.marks.push(EditMark { path, start: self.lines.0, end: self.lines.1, step: self.step });
        drop(view);
        self.shared.notifier.send(Outgoing::RefreshLenses);
        Ok(())
    }
}

impl Host for EditorHost {
    fn root(&self) -> &Path {
        &self.session.root
    }

    async fn read_file(&self, path: &ResolvedPath) -> Result<String, String> {
        self.current_text(path).await.map(|c| c.text)
    }

    async fn read_preview(
        &self,
        path: &ResolvedPath,
        limit: Option<u64>,
    ) -> Result<crate::host::preview::Preview, String> {
        // The editor's text when it has one (texts/ rule 1), else streamed from disk.
        match self.shared.texts.read(&path.abs) {
            Some(t) => Ok(crate::host::preview::Preview::of(&t.text, limit)),
            None => crate::host::disk::preview_disk(path, limit).await,
        }
    }

    async fn apply_change(&self, path: &ResolvedPath, change: &FileChange, ctx: &EditContext) -> Result<(), String> {
        let Some(old) = change.old_text.as_deref() else {
            if let Some(parent) = path.abs.parent() {
                tokio::fs::create_dir_all(parent).await.map_err(|e| io_error(path, e))?;
            }
            return self.replace(path, None, 0..0, change.replacement(), ctx).await;
        };
        // The text now, with the version an edit can name; it must still be the text the change was
        // made from (the user may have typed since it was read).
        let current = self.current_text(path).await?;
        if current.text != old {
            return Err(format!("{} changed while the edit was being made; read it again", path.given));
        }
        self.replace(path, Some(&current), change.range.clone(), change.replacement(), ctx).await
    }

    async fn approve(&self, ask: &Ask<'_>, call_id: &str) -> Approval {
        match self.approval {
            ApprovalMode::Auto => return Approval::Allow,
            ApprovalMode::Deny => return Approval::Deny,
            ApprovalMode::Ask => {}
        }
        self.status(ext::RunState::Waiting);
        // The call's own notifications first, so the question finds its card.
        self.shared.notifier.flush().await;
        let subagent = self.session.ws.subagents().owner_of(call_id);
        let at =
            Asking { at: self.session.at(), folder_name: self.session.name(), run_id: &self.run_id, call_id, subagent };
        let answer = super::ask::ask(&self.shared, ask, &at, self.approval_timeout).await;
        self.status(ext::RunState::Running);
        answer
    }

    fn intelligence(&self) -> Option<crate::intel::Source> {
        // An editor that answers `stepwise/query` is the source; no language server of stepwise's own then.
        // Not for a worktree session: the editor has the folder open, not the worktree.
        if !self.shared.caps().query || self.session.worktree.is_some() {
            return None;
        }
        let make = || Arc::new(super::query::EditorIntel::new(self.shared.clone())) as crate::intel::Source;
        Some(self.session.intel.get_or_init(make).clone())
    }

    async fn run_command(
        &self,
        command: &str,
        timeout: Duration,
        sandbox: Option<&crate::sandbox::Policy>,
    ) -> Result<ShellOutput, String> {
        self.flush_unsaved().await?;
        crate::host::run_shell_in(&self.session.root, command, timeout, sandbox).await
    }

    /// As a command: the buffers saved first, then stepwise's own guard (the sidecar lives as long as
    /// the editor, and so may the task, no longer).
    async fn start_background(
        &self,
        command: &str,
        sandbox: Option<&crate::sandbox::Policy>,
    ) -> Result<crate::background::Started, String> {
        self.flush_unsaved().await?;
        crate::background::spawn(&self.session.root, command, sandbox).await
    }
}
