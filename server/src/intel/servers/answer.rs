//! A `Query` as an LSP request to a started server, and its answer read into LSP types.

use std::time::Duration;

use serde_json::{json, Value};
use tower_lsp_server::ls_types::{Location, LocationLink, Uri};

use super::server::Running;
use crate::intel::source::{Answer, Query};

pub async fn ask(r: &Running, q: &Query, timeout: Duration) -> Result<Answer, String> {
    let doc = |path: &std::path::Path| -> Result<Value, String> {
        let uri = Uri::from_file_path(path).ok_or("not a file path")?;
        Ok(json!({"uri": uri}))
    };
    let at = |path, position| -> Result<Value, String> { Ok(json!({"textDocument": doc(path)?, "position": position})) };
    let (method, params) = match q {
        Query::Definition { path, position } => ("textDocument/definition", at(path, position)?),
        Query::Implementation { path, position } => ("textDocument/implementation", at(path, position)?),
        Query::References { path, position } => {
            let mut p = at(path, position)?;
            p["context"] = json!({"includeDeclaration": true});
            ("textDocument/references", p)
        }
        Query::Hover { path, position } => ("textDocument/hover", at(path, position)?),
        Query::DocumentSymbols { path } => ("textDocument/documentSymbol", json!({"textDocument": doc(path)?})),
        Query::WorkspaceSymbols { query } => ("workspace/symbol", json!({"query": query})),
        Query::Rename { path, position, new_name } => {
            let mut p = at(path, position)?;
            p["newName"] = json!(new_name);
            ("textDocument/rename", p)
        }
    };
    let v = r.request(method, params, timeout).await?;
    let bad = |e: serde_json::Error| format!("an answer that cannot be read: {e}");
    Ok(match q {
        Query::Definition { .. } | Query::Implementation { .. } | Query::References { .. } => {
            Answer::Locations(locations(v).map_err(bad)?)
        }
        Query::Hover { .. } => Answer::Hover(serde_json::from_value(v).map_err(bad)?),
        Query::DocumentSymbols { .. } => Answer::DocumentSymbols(serde_json::from_value(v).map_err(bad)?),
        Query::WorkspaceSymbols { .. } => Answer::WorkspaceSymbols(serde_json::from_value(v).map_err(bad)?),
        Query::Rename { .. } => Answer::Edit(serde_json::from_value(v).map_err(bad)?),
    })
}

/// `Location | Location[] | LocationLink[] | null` as locations (a link as its target).
pub fn locations(v: Value) -> Result<Vec<Location>, serde_json::Error> {
    let items = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Array(a) => a,
        one => vec![one],
    };
    items
        .into_iter()
        .map(|item| {
            if item.get("targetUri").is_some() {
                let link: LocationLink = serde_json::from_value(item)?;
                Ok(Location { uri: link.target_uri, range: link.target_selection_range })
            } else {
                serde_json::from_value(item)
            }
        })
        .collect()
}
