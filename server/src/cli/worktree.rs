//! `stepwise run --worktree TASK`: the task in a worktree of its own (issue 47), made as an editor's
//! `stepwise.newSession` makes one (`sessions::worktree`) and listed among the folder's sessions, so an
//! editor shows it (closed) and can apply its changes; nothing reaches the folder before that. Its path
//! and branch are printed last.

use std::path::{Path, PathBuf};

use crate::sessions::index::{self, Entry, Index};
use crate::sessions::worktree::{self, Worktree};

/// A session's worktree of `folder` and where its conversation is saved.
pub(super) struct Made {
    pub tree: Worktree,
    pub state_file: Option<PathBuf>,
}

/// Makes the worktree (under the state directory; without one, the temporary folder) and lists it.
pub(super) async fn make(folder: &Path, task: &str) -> Result<Made, String> {
    let folder = std::fs::canonicalize(folder).map_err(|e| format!("workspace {}: {e}", folder.display()))?;
    let dir = crate::store::state_dir();
    let base = dir.clone().unwrap_or_else(|| std::env::temp_dir().join("stepwise-state"));
    let id = crate::sessions::new_id();
    let (at, manifest) = (worktree::location(&base, &folder, &id), index::manifest_file(&base, &id));
    let (f, sid) = (folder.clone(), id.clone());
    let tree = tokio::task::spawn_blocking(move || worktree::make(&f, &at, &sid, &manifest))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot make the worktree: {e}"))?;
    let title: String = task.chars().take(60).collect();
    if let Some(d) = &dir {
        // Closed: the run is over when this process ends; an editor opens it again to see or apply it.
        let entry =
            Entry { id: id.clone(), title, created: index::now_ms(), worktree: Some(tree.clone()), closed: true };
        Index::of(d, &folder).put(entry)?;
    }
    Ok(Made { state_file: dir.map(|d| index::state_file(&d, &id)), tree })
}

/// The lines printed last: where the work is.
pub(super) fn said(tree: &Worktree) -> String {
    let mut out = format!("worktree: {}", tree.path.display());
    if let Some(b) = &tree.branch {
        out.push_str(&format!("\nbranch: {b}"));
    }
    out
}
