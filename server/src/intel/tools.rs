//! The code-intelligence tools as the model calls them: `diagnostics`, `code_nav` (`rename_symbol` is in
//! `rename.rs`). Arguments in the model's terms (workspace paths, 1-based lines, a symbol by its text),
//! answers as lines (`text.rs`); every problem is an error line, never a crash.

use std::path::Path;

use serde_json::Value;
use tower_lsp_server::ls_types::{DocumentSymbolResponse, HoverContents, MarkedString, OneOf, WorkspaceSymbolResponse};

use super::source::{Answer, DiagnosticsRequest, Query};
use super::text::{self, capped};
use super::Session;
use crate::host::{resolve, Host, ResolvedPath};

pub(crate) fn str_arg<'v>(input: &'v Value, tool: &str, key: &str) -> Result<&'v str, String> {
    match input.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        None | Some(Value::Null) => Err(format!("{tool}: missing required argument '{key}'")),
        Some(_) => Err(format!("{tool}: argument '{key}' must be a non-empty string")),
    }
}

pub(crate) fn line_arg(input: &Value, tool: &str) -> Result<Option<u32>, String> {
    match input.get("line") {
        None | Some(Value::Null) => Some(None),
        Some(Value::Number(n)) => n.as_u64().filter(|n| *n >= 1 && *n <= u32::MAX as u64).map(|n| Some(n as u32)),
        Some(Value::String(s)) => s.trim().parse::<u32>().ok().filter(|n| *n >= 1).map(Some),
        Some(_) => None,
    }
    .ok_or_else(|| format!("{tool}: line must be a whole number from 1"))
}

/// `diagnostics {paths?}`: the errors and warnings of those files (settled: what the agent wrote is
/// checked), or of every file that has any.
pub async fn diagnostics<H: Host + ?Sized>(s: &Session, host: &H, input: &Value) -> Result<String, String> {
    let mut paths = Vec::new();
    match input.get("paths") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            for p in a {
                let p = p.as_str().ok_or("diagnostics: paths must be strings")?;
                paths.push(resolve(host.root(), p)?.abs);
            }
        }
        Some(Value::String(p)) => paths.push(resolve(host.root(), p)?.abs),
        Some(_) => return Err("diagnostics: paths must be a list of strings".into()),
    }
    let settle = !paths.is_empty();
    let files = s.source.diagnostics(DiagnosticsRequest { paths, settle, max_wait: s.max_wait() }).await;
    let mut lines = Vec::new();
    let mut unchecked = text::Unchecked::default();
    let mut unread = Vec::new();
    let mut outside = 0;
    for f in files {
        let Some(rel) = text::rel(host.root(), &f.path) else {
            outside += f.diagnostics.len();
            continue;
        };
        unchecked.add(&rel, &f.checked);
        let body = read(host, &rel).await;
        let mut ds: Vec<_> = f.diagnostics.iter().collect();
        ds.sort_by_key(|d| (d.severity.map(|s| format!("{s:?}")), d.range.start.line, d.range.start.character));
        lines.extend(ds.into_iter().map(|d| text::diagnostic_line(&rel, body.as_deref(), d)));
        if f.dropped > 0 {
            unread.push(text::unread_line(&rel, &f));
        }
    }
    if outside > 0 {
        lines.push(format!("({outside} diagnostics in files outside the workspace not shown)"));
    }
    let mut lines = capped(lines, "diagnostics");
    lines.extend(unchecked.lines());
    lines.extend(unread);
    lines.extend(s.source.notices());
    Ok(if lines.is_empty() { "No diagnostics.".into() } else { lines.join("\n") })
}

/// `code_nav {action, path?, symbol?, line?, query?}`.
pub async fn code_nav<H: Host + ?Sized>(s: &Session, host: &H, input: &Value) -> Result<String, String> {
    const T: &str = "code_nav";
    let action = str_arg(input, T, "action")?;
    let root = host.root();
    let at = || async {
        let path = resolve(root, str_arg(input, T, "path")?)?;
        let symbol = str_arg(input, T, "symbol")?;
        let body = host.read_file(&path).await?;
        let position =
            text::find_symbol(&body, symbol, line_arg(input, T)?).map_err(|e| format!("{}: {e}", path.given))?;
        Ok::<_, String>((path.abs, position))
    };
    let q = match action {
        "definition" => at().await.map(|(path, position)| Query::Definition { path, position })?,
        "references" => at().await.map(|(path, position)| Query::References { path, position })?,
        "implementation" => at().await.map(|(path, position)| Query::Implementation { path, position })?,
        "hover" => at().await.map(|(path, position)| Query::Hover { path, position })?,
        "symbols" => Query::DocumentSymbols { path: resolve(root, str_arg(input, T, "path")?)?.abs },
        "workspace_symbols" => Query::WorkspaceSymbols { query: str_arg(input, T, "query")?.to_string() },
        other => {
            return Err(format!(
                "{T}: unknown action '{other}': use definition, references, implementation, hover, symbols or workspace_symbols"
            ))
        }
    };
    if let Some(p) = query_path(&q) {
        if !s.source.covers(p) {
            return Err(format!("{T}: no language server for {}", text::rel(root, p).unwrap_or_default()));
        }
    }
    let answer = s.source.query(q.clone()).await.map_err(|e| format!("{T}: {e}"))?;
    Ok(match answer {
        Answer::Locations(locs) if locs.is_empty() => "No locations found.".into(),
        Answer::Locations(locs) => {
            let mut lines = Vec::new();
            for loc in &locs {
                let inside = text::path_of(&loc.uri).and_then(|p| text::rel(root, &p));
                let body = match &inside {
                    Some(rel) => read(host, rel).await,
                    None => None,
                };
                lines.push(text::location_line(root, loc, body.as_deref()));
            }
            capped(lines, "locations").join("\n")
        }
        Answer::Hover(None) => "Nothing known there.".into(),
        Answer::Hover(Some(h)) => {
            let text = match h.contents {
                HoverContents::Markup(m) => m.value,
                HoverContents::Scalar(m) => marked(m),
                HoverContents::Array(a) => a.into_iter().map(marked).collect::<Vec<_>>().join("\n"),
            };
            crate::host::output::truncate_chars(text.trim(), 4000).to_string()
        }
        Answer::DocumentSymbols(None) => "No symbols.".into(),
        Answer::DocumentSymbols(Some(DocumentSymbolResponse::Nested(syms))) => {
            let mut lines = Vec::new();
            let mut stack: Vec<(usize, &tower_lsp_server::ls_types::DocumentSymbol)> =
                syms.iter().rev().map(|s| (0, s)).collect();
            while let Some((depth, sym)) = stack.pop() {
                lines.push(format!(
                    "{}{} ({}) line {}",
                    "  ".repeat(depth),
                    sym.name,
                    kind(sym.kind),
                    sym.selection_range.start.line + 1
                ));
                stack.extend(sym.children.iter().flatten().rev().map(|c| (depth + 1, c)));
            }
            capped(lines, "symbols").join("\n")
        }
        Answer::DocumentSymbols(Some(DocumentSymbolResponse::Flat(syms))) => {
            let lines =
                syms.iter().map(|s| format!("{} ({}) line {}", s.name, kind(s.kind), s.location.range.start.line + 1));
            capped(lines.collect(), "symbols").join("\n")
        }
        Answer::WorkspaceSymbols(None) => "No symbols found.".into(),
        Answer::WorkspaceSymbols(Some(r)) => {
            let items: Vec<(String, String, Option<tower_lsp_server::ls_types::Location>)> = match r {
                WorkspaceSymbolResponse::Flat(v) => {
                    v.into_iter().map(|s| (s.name, kind(s.kind), Some(s.location))).collect()
                }
                WorkspaceSymbolResponse::Nested(v) => v
                    .into_iter()
                    .map(|s| {
                        let loc = match s.location {
                            OneOf::Left(l) => Some(l),
                            OneOf::Right(_) => None,
                        };
                        (s.name, kind(s.kind), loc)
                    })
                    .collect(),
            };
            if items.is_empty() {
                return Ok("No symbols found.".into());
            }
            let lines = items.into_iter().map(|(name, k, loc)| match loc {
                Some(l) => format!("{name} ({k}) {}", text::location_line(root, &l, None).trim_end_matches(':')),
                None => format!("{name} ({k})"),
            });
            capped(lines.collect(), "symbols").join("\n")
        }
        Answer::Edit(_) => return Err(format!("{T}: the source answered with an edit")),
    })
}

fn query_path(q: &Query) -> Option<&Path> {
    match q {
        Query::WorkspaceSymbols { .. } => None,
        Query::Definition { path, .. }
        | Query::References { path, .. }
        | Query::Implementation { path, .. }
        | Query::Hover { path, .. }
        | Query::DocumentSymbols { path }
        | Query::Rename { path, .. } => Some(path),
    }
}

fn marked(m: MarkedString) -> String {
    match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => l.value,
    }
}

fn kind(k: tower_lsp_server::ls_types::SymbolKind) -> String {
    format!("{k:?}").to_ascii_lowercase()
}

/// A workspace file's text through the host (the editor's buffer where one is open).
pub(crate) async fn read<H: Host + ?Sized>(host: &H, rel: &str) -> Option<String> {
    let path: ResolvedPath = resolve(host.root(), rel).ok()?;
    host.read_file(&path).await.ok()
}
