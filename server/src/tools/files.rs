//! `write_file` and `edit_file`, once for every host: the engine reads the current text through the
//! host, computes the change, asks for protected paths, and hands the change to the host to apply.

use crate::host::{find_first, not_found, protected, Ask, EditContext, FileChange, Host, ResolvedPath};

use super::ToolContext;

/// The file's text, or `None` when there is no such file yet.
async fn existing<H: Host>(host: &H, path: &ResolvedPath) -> Result<Option<String>, String> {
    match host.read_file(path).await {
        Ok(t) => Ok(Some(t)),
        Err(_) if std::fs::symlink_metadata(&path.abs).is_err() => Ok(None),
        Err(e) => Err(e),
    }
}

fn context<H: Host>(cx: &ToolContext<'_, H>, tool: &'static str) -> EditContext {
    let step = cx.plan.read(|s| s.plan.in_progress().map(|i| i.text.clone()));
    EditContext { tool, step, call_id: cx.call_id.to_string() }
}

pub(super) async fn write<H: Host>(
    cx: &ToolContext<'_, H>,
    path: &ResolvedPath,
    content: &str,
) -> Result<FileChange, String> {
    approve_write(cx, path).await?;
    let change = FileChange::whole(path, existing(cx.host, path).await?, content);
    cx.host.apply_change(path, &change, &context(cx, "write_file")).await?;
    Ok(change)
}

pub(super) async fn edit<H: Host>(
    cx: &ToolContext<'_, H>,
    path: &ResolvedPath,
    old: &str,
    new: &str,
) -> Result<FileChange, String> {
    approve_write(cx, path).await?;
    let text = cx.host.read_file(path).await?;
    let range = find_first(&text, old).ok_or_else(|| not_found(path))?;
    let change = FileChange::splice(path, text, range, new);
    cx.host.apply_change(path, &change, &context(cx, "edit_file")).await?;
    Ok(change)
}

/// Asks the user unless this session already allowed this kind of thing; remembers "for the session".
pub(super) async fn approve<H: Host>(cx: &ToolContext<'_, H>, ask: &Ask<'_>) -> bool {
    if cx.approvals.covers(ask) {
        return true;
    }
    let answer = cx.host.approve(ask, cx.call_id).await;
    cx.approvals.record(ask, answer);
    answer.allowed()
}

/// Writes to files that can run code or redirect credentials need the same approval as commands.
async fn approve_write<H: Host>(cx: &ToolContext<'_, H>, path: &ResolvedPath) -> Result<(), String> {
    let rel = path.abs.strip_prefix(cx.host.root()).unwrap_or(&path.abs);
    let Some(why) = protected(rel) else { return Ok(()) };
    match approve(cx, &Ask::Write { path: &path.given, why }).await {
        true => Ok(()),
        false => Err(format!("Write to {} denied by the user ({why})", path.given)),
    }
}
