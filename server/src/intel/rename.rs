//! `rename_symbol {path, symbol, line?, new_name}`: the language server's rename, applied as the agent's
//! own edits through the host (in an editor `workspace/applyEdit`): checkpointed, reviewable, undone by a
//! rewind. All or nothing: an edit that leaves the workspace, touches a protected file, creates, renames or
//! deletes files, or does not fit the text is refused before any file changes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use tower_lsp_server::ls_types::{DocumentChangeOperation, DocumentChanges, OneOf, Position, TextEdit, WorkspaceEdit};

use super::source::{Answer, Query};
use super::text;
use super::tools::{line_arg, str_arg};
use super::Session;
use crate::host::{protected, resolve, EditContext, FileChange, Host};

const T: &str = "rename_symbol";

/// Runs the rename; returns the result line and the first change (for the views).
pub async fn rename_symbol<H: Host + ?Sized>(
    s: &Session,
    host: &H,
    input: &Value,
    ctx: &EditContext,
) -> Result<(String, Option<FileChange>), String> {
    let path = resolve(host.root(), str_arg(input, T, "path")?)?;
    let symbol = str_arg(input, T, "symbol")?;
    let new_name = str_arg(input, T, "new_name")?;
    if !s.source.covers(&path.abs) {
        return Err(format!("{T}: no language server for {}", path.given));
    }
    let body = host.read_file(&path).await?;
    let position = text::find_symbol(&body, symbol, line_arg(input, T)?).map_err(|e| format!("{}: {e}", path.given))?;
    let q = Query::Rename { path: path.abs.clone(), position, new_name: new_name.to_string() };
    let edit = match s.source.query(q).await.map_err(|e| format!("{T}: {e}"))? {
        Answer::Edit(Some(e)) => e,
        Answer::Edit(None) => return Err(format!("{T}: the language server cannot rename '{symbol}' there")),
        _ => return Err(format!("{T}: the source did not answer with an edit")),
    };
    let per_file = edits_by_file(edit)?;
    if per_file.is_empty() {
        return Err(format!("{T}: the language server's rename changes nothing"));
    }
    // Every file checked and computed before the first one is written.
    let mut planned = Vec::new();
    for (abs, edits) in per_file {
        let rel = text::rel(host.root(), &abs)
            .ok_or_else(|| format!("{T}: the rename would change a file outside the workspace; nothing was changed"))?;
        let target = resolve(host.root(), &rel)?;
        if let Some(why) = protected(&target.rel) {
            return Err(format!("{T}: the rename would change {rel} ({why}); nothing was changed"));
        }
        let old = host.read_file(&target).await?;
        let new = apply(&old, &edits).ok_or_else(|| {
            format!("{T}: the language server's edit does not fit {rel} (a position past its end); nothing was changed")
        })?;
        if new != old {
            let change = FileChange::whole(&target, Some(old), &new);
            planned.push((target, change, edits.len()));
        }
    }
    let mut done = Vec::new();
    let mut first = None;
    for (target, change, n) in planned {
        host.apply_change(&target, &change, ctx)
            .await
            .map_err(|e| format!("{T}: {e} (already renamed in: {})", names(&done)))?;
        done.push(format!("{} ({n})", target.rel.display()));
        first.get_or_insert(change);
    }
    Ok((format!("Renamed '{symbol}' to '{new_name}' in {} files: {}", done.len(), names(&done)), first))
}

fn names(done: &[String]) -> String {
    if done.is_empty() {
        "none".into()
    } else {
        done.join(", ")
    }
}

/// The edit's text edits by file; file operations are refused.
fn edits_by_file(edit: WorkspaceEdit) -> Result<BTreeMap<PathBuf, Vec<TextEdit>>, String> {
    let mut out: BTreeMap<PathBuf, Vec<TextEdit>> = BTreeMap::new();
    let mut add = |uri: &tower_lsp_server::ls_types::Uri, edits: Vec<TextEdit>| -> Result<(), String> {
        let p = text::path_of(uri).ok_or_else(|| format!("{T}: the rename names something that is not a file"))?;
        out.entry(p).or_default().extend(edits);
        Ok(())
    };
    let plain = |e: OneOf<TextEdit, tower_lsp_server::ls_types::AnnotatedTextEdit>| match e {
        OneOf::Left(t) => t,
        OneOf::Right(a) => a.text_edit,
    };
    match edit.document_changes {
        Some(DocumentChanges::Edits(docs)) => {
            for d in docs {
                add(&d.text_document.uri, d.edits.into_iter().map(plain).collect())?;
            }
        }
        Some(DocumentChanges::Operations(ops)) => {
            for op in ops {
                match op {
                    DocumentChangeOperation::Edit(d) => {
                        add(&d.text_document.uri, d.edits.into_iter().map(plain).collect())?
                    }
                    DocumentChangeOperation::Op(_) => {
                        return Err(format!(
                            "{T}: the rename would create, rename or delete files; nothing was changed"
                        ))
                    }
                }
            }
        }
        None => {
            for (uri, edits) in edit.changes.into_iter().flatten() {
                add(&uri, edits)?;
            }
        }
    }
    Ok(out)
}

/// The byte offset of an LSP position (UTF-16 columns); `None` past the end.
fn offset(text: &str, pos: Position) -> Option<usize> {
    let mut start = 0;
    for _ in 0..pos.line {
        start += text[start..].find('\n')? + 1;
    }
    let line = &text[start..text[start..].find('\n').map_or(text.len(), |i| start + i)];
    let mut units = 0;
    for (i, ch) in line.char_indices() {
        if units >= pos.character {
            return Some(start + i);
        }
        units += ch.len_utf16() as u32;
    }
    (units >= pos.character)
        .then_some(start + line.len())
        .or((units + 1 == pos.character).then_some(start + line.len()))
}

/// `text` with the edits applied (from the last, so earlier offsets stay right); `None` if one does not
/// fit or two overlap.
fn apply(text: &str, edits: &[TextEdit]) -> Option<String> {
    let mut ranges: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| Some((offset(text, e.range.start)?, offset(text, e.range.end)?, e.new_text.as_str())))
        .collect::<Option<_>>()?;
    ranges.sort_by_key(|r| (r.0, r.1));
    if ranges.windows(2).any(|w| w[0].1 > w[1].0) || ranges.iter().any(|r| r.0 > r.1) {
        return None;
    }
    let mut out = text.to_string();
    for (a, b, new) in ranges.into_iter().rev() {
        out.replace_range(a..b, new);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::ls_types::Range;

    fn edit(l1: u32, c1: u32, l2: u32, c2: u32, t: &str) -> TextEdit {
        TextEdit {
            range: Range { start: Position { line: l1, character: c1 }, end: Position { line: l2, character: c2 } },
            new_text: t.into(),
        }
    }

    #[test]
    fn edits_apply_from_the_end_and_refuse_what_does_not_fit() {
        let text = "def foo():\n    return foo\n";
        let out = apply(text, &[edit(0, 4, 0, 7, "bar"), edit(1, 11, 1, 14, "bar")]);
        assert_eq!(out.as_deref(), Some("def bar():\n    return bar\n"));
        assert_eq!(apply(text, &[edit(9, 0, 9, 1, "x")]), None, "past the end");
        assert_eq!(apply(text, &[edit(0, 0, 0, 5, "a"), edit(0, 3, 0, 6, "b")]), None, "overlap");
        assert_eq!(apply("é = 1", &[edit(0, 0, 0, 1, "e")]).as_deref(), Some("e = 1"));
    }
}
