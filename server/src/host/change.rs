//! A change the agent makes to one file: computed once by the engine from the text the host gave, and
//! applied by the host as suits it (the disk and ACP clients take the whole new text, an LSP editor the
//! replaced range only, so cursors and undo stay sensible). Events carry it to the adapters (diffs,
//! edit lenses).

use std::ops::Range;
use std::path::PathBuf;

use serde::Serialize;

use super::{minimal_change, splice, ResolvedPath};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Absolute, inside the workspace.
    pub path: PathBuf,
    /// The text the change was computed from; `None` for a new file.
    pub old_text: Option<String>,
    /// The whole text afterwards.
    pub new_text: String,
    /// The bytes of `old_text` replaced (empty for a new file).
    #[serde(skip)]
    pub range: Range<usize>,
    /// Where the change starts, 1-based.
    pub line: u32,
}

impl FileChange {
    /// `edit_file`: `range` of `old` replaced by `new`.
    pub fn splice(path: &ResolvedPath, old: String, range: Range<usize>, new: &str) -> FileChange {
        let new_text = splice(&old, range.clone(), new);
        let line = old[..range.start].matches('\n').count() as u32 + 1;
        FileChange { path: path.abs.clone(), old_text: Some(old), new_text, range, line }
    }

    /// `write_file`: the whole text replaced; only the part that differs counts as changed.
    pub fn whole(path: &ResolvedPath, old: Option<String>, content: &str) -> FileChange {
        match old {
            None => FileChange {
                path: path.abs.clone(),
                old_text: None,
                new_text: content.to_string(),
                range: 0..0,
                line: 1,
            },
            Some(old) => {
                let (start, end, _) = minimal_change(&old, content);
                let line = old[..start].matches('\n').count() as u32 + 1;
                FileChange {
                    path: path.abs.clone(),
                    old_text: Some(old),
                    new_text: content.to_string(),
                    range: start..end,
                    line,
                }
            }
        }
    }

    /// The text that replaces `range`.
    pub fn replacement(&self) -> &str {
        let old_len = self.old_text.as_deref().map_or(0, str::len);
        let tail = old_len - self.range.end;
        &self.new_text[self.range.start..self.new_text.len() - tail]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> ResolvedPath {
        ResolvedPath { given: "a.txt".into(), abs: "/w/a.txt".into(), root: "/w".into(), rel: "a.txt".into() }
    }

    #[test]
    fn changes_know_their_range_and_line() {
        let c = FileChange::splice(&path(), "one\ntwo\nthree".into(), 4..7, "2");
        assert_eq!((c.new_text.as_str(), c.line, c.replacement()), ("one\n2\nthree", 2, "2"));
        let w = FileChange::whole(&path(), Some("a\nb\nc".into()), "a\nB\nc");
        assert_eq!((w.range.clone(), w.line, w.replacement()), (2..3, 2, "B"));
        let n = FileChange::whole(&path(), None, "new");
        assert_eq!((n.replacement(), n.line), ("new", 1));
    }
}
