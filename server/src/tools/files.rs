//! `write_file` and `edit_file`, once for every host: the engine reads the current text through the
//! host, computes the change, asks for protected paths (`gate.rs`), and hands the change to the host to
//! apply.

use crate::host::{find_first, not_found, EditContext, FileChange, Host, ResolvedPath};

use super::catalog::{EDIT_FILE, WRITE_FILE};
use super::gate::{self, Gate};
use super::ToolContext;

/// The file's text, or `None` when there is no such file yet.
async fn existing<H: Host + ?Sized>(host: &H, path: &ResolvedPath) -> Result<Option<String>, String> {
    match host.read_file(path).await {
        Ok(t) => Ok(Some(t)),
        Err(_) if std::fs::symlink_metadata(&path.abs).is_err() => Ok(None),
        Err(e) => Err(e),
    }
}

pub(super) fn context<H: Host + ?Sized>(cx: &ToolContext<'_, H>, tool: &'static str) -> EditContext {
    let step = cx.plan.read(|s| s.plan.in_progress().map(|i| i.text.clone()));
    EditContext { tool, step, call_id: cx.call_id.to_string() }
}

pub(super) async fn write<H: Host + ?Sized>(
    cx: &ToolContext<'_, H>,
    gate: &Gate<'_>,
    path: &ResolvedPath,
    content: &str,
) -> Result<FileChange, String> {
    gate::clear(cx, gate).await?;
    let change = FileChange::whole(path, existing(cx.host, path).await?, content);
    cx.host.apply_change(path, &change, &context(cx, WRITE_FILE.name)).await?;
    Ok(change)
}

pub(super) async fn edit<H: Host + ?Sized>(
    cx: &ToolContext<'_, H>,
    gate: &Gate<'_>,
    path: &ResolvedPath,
    old: &str,
    new: &str,
) -> Result<FileChange, String> {
    gate::clear(cx, gate).await?;
    let text = cx.host.read_file(path).await?;
    let range = find_first(&text, old).ok_or_else(|| not_found(path))?;
    let change = FileChange::splice(path, text, range, new);
    cx.host.apply_change(path, &change, &context(cx, EDIT_FILE.name)).await?;
    Ok(change)
}
