//! What the model reads: LSP's 0-based, UTF-16 positions and absolute URIs turned into workspace-relative
//! paths and 1-based lines and columns, one line each, and back (a symbol named by its text and a line).

use std::path::{Path, PathBuf};

use tower_lsp_server::ls_types::{Diagnostic, DiagnosticSeverity, Location, NumberOrString, Position, Uri};

/// The most lines one answer or block shows; the rest are counted.
pub const CAP: usize = 50;

/// A path as the model reads it: relative to the workspace, or `None` for a file outside it (never shown
/// as a workspace path, never read).
pub fn rel(root: &Path, path: &Path) -> Option<String> {
    let p = path.strip_prefix(root).ok()?;
    if p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return None;
    }
    Some(p.to_string_lossy().into_owned())
}

pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned())
}

pub fn severity(d: &Diagnostic) -> &'static str {
    match d.severity {
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "error",
    }
}

pub fn is_error(d: &Diagnostic) -> bool {
    d.severity.is_none() || d.severity == Some(DiagnosticSeverity::ERROR)
}

/// A 0-based LSP position in `text` as a 1-based line and column (in characters); `None` when it lies
/// past the end of the text.
pub fn one_based(text: &str, pos: Position) -> Option<(u32, u32)> {
    let line = text.split('\n').nth(pos.line as usize)?;
    let mut units = 0u32;
    let mut col = 0u32;
    for ch in line.chars() {
        if units >= pos.character {
            break;
        }
        units += ch.len_utf16() as u32;
        col += 1;
    }
    if units < pos.character && pos.character > line.encode_utf16().count() as u32 + 1 {
        return None;
    }
    Some((pos.line + 1, col + 1))
}

/// The text of a 0-based line, trimmed.
pub fn line_text(text: &str, line: u32) -> Option<&str> {
    text.split('\n').nth(line as usize).map(|l| l.trim())
}

/// `path:line:col: severity: message (source)`; a position past the end of the text is said.
pub fn diagnostic_line(rel: &str, text: Option<&str>, d: &Diagnostic) -> String {
    let message: String = d.message.lines().next().unwrap_or("").chars().take(300).collect();
    let source = d.source.as_deref().map(|s| format!(" ({s})")).unwrap_or_default();
    let at = match text.map(|t| one_based(t, d.range.start)) {
        Some(Some((l, c))) => format!("{l}:{c}"),
        Some(None) => {
            format!("{}:{} (a position past the end of the file)", d.range.start.line + 1, d.range.start.character + 1)
        }
        None => format!("{}:{}", d.range.start.line + 1, d.range.start.character + 1),
    };
    format!("{rel}:{at}: {}: {message}{source}", severity(d))
}

/// What identifies a diagnostic across edits that move lines: what it says and the text of its line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    message: String,
    source: Option<String>,
    code: Option<String>,
    line: String,
}

pub fn key(text: Option<&str>, d: &Diagnostic) -> Key {
    Key {
        message: d.message.clone(),
        source: d.source.clone(),
        code: d.code.as_ref().map(|c| match c {
            NumberOrString::Number(n) => n.to_string(),
            NumberOrString::String(s) => s.clone(),
        }),
        line: text.and_then(|t| line_text(t, d.range.start.line)).unwrap_or("").to_string(),
    }
}

/// The errors of `now` that are not in `before`, counted as a multiset (two equal errors where there was
/// one: one is new).
pub fn new_errors<'a>(before: &[Key], now: &'a [(Key, &'a Diagnostic)]) -> Vec<&'a Diagnostic> {
    let mut left: std::collections::HashMap<&Key, usize> = std::collections::HashMap::new();
    for k in before {
        *left.entry(k).or_default() += 1;
    }
    let mut out = Vec::new();
    for (k, d) in now {
        match left.get_mut(k) {
            Some(n) if *n > 0 => *n -= 1,
            _ if is_error(d) => out.push(*d),
            _ => {}
        }
    }
    out
}

/// A symbol named by its text and, optionally, a 1-based line: its LSP position (the first occurrence
/// on that line, else in the whole text; a whole-word match preferred).
pub fn find_symbol(text: &str, symbol: &str, line: Option<u32>) -> Result<Position, String> {
    if symbol.is_empty() {
        return Err("symbol must not be empty".into());
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let at = |i: usize| -> Option<Position> {
        let l = lines.get(i)?;
        let byte = word_at(l, symbol)?;
        Some(Position { line: i as u32, character: l[..byte].encode_utf16().count() as u32 })
    };
    match line {
        Some(0) => Err("line is 1-based".into()),
        Some(n) if n as usize > lines.len() => {
            Err(format!("line {n} is past the end of the file ({} lines)", lines.len()))
        }
        Some(n) => at(n as usize - 1).ok_or_else(|| format!("'{symbol}' is not on line {n}")),
        None => (0..lines.len()).find_map(at).ok_or_else(|| format!("'{symbol}' is not in the file")),
    }
}

/// The byte offset of `word` in `line`, a whole-word occurrence first.
fn word_at(line: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let whole = line.match_indices(word).map(|(i, _)| i).find(|&i| {
        let before = line[..i].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = line[i + word.len()..].chars().next().is_none_or(|c| !is_ident(c));
        before && after
    });
    whole.or_else(|| line.find(word))
}

/// `path:line: text of that line` for a location (text given when it could be read).
pub fn location_line(root: &Path, loc: &Location, text: Option<&str>) -> String {
    let line = loc.range.start.line + 1;
    match path_of(&loc.uri).as_deref().and_then(|p| rel(root, p).map(|r| (p.to_path_buf(), r))) {
        Some((_, r)) => match text.and_then(|t| line_text(t, loc.range.start.line)) {
            Some(t) => format!("{r}:{line}: {t}"),
            None if text.is_some() => format!("{r}:{line}: (a position past the end of the file)"),
            None => format!("{r}:{line}:"),
        },
        None => format!("(outside the workspace) {}:{line}", loc.uri.as_str()),
    }
}

/// The line for a file whose source gave more diagnostics than it keeps (`KEEP_PER_FILE`).
pub fn unread_line(rel: &str, f: &crate::intel::source::FileDiagnostics) -> String {
    let total = f.diagnostics.len() + f.dropped;
    format!("({rel}: {total} diagnostics reported; only the first {} were read)", f.diagnostics.len())
}

/// The most files one `not checked` line names; the rest are counted.
const NAMED: usize = 10;

/// The files not checked, as lines: `path: not checked (<who> did not answer in <n> ms)` one a file, and the
/// files not checked for the same other reason (a server that could not start) in one line,
/// `a.rs, b.rs: not checked (<why>)` (issue 51: a line a file said the same each time).
#[derive(Default)]
pub struct Unchecked {
    /// The files of each line, its reason, and whether more files may join it.
    lines: Vec<(Vec<String>, String, bool)>,
}

impl Unchecked {
    /// `rel`, if `checked` says it was not checked.
    pub fn add(&mut self, rel: &str, checked: &crate::intel::source::Checked) {
        use crate::intel::source::Checked;
        let (why, joins) = match checked {
            Checked::Yes => return,
            Checked::No { who, waited } => (format!("{who} did not answer in {} ms", waited.as_millis()), false),
            Checked::Failed(why) => (why.clone(), true),
        };
        match self.lines.iter_mut().find(|(_, w, j)| *j && joins && *w == why) {
            Some((files, _, _)) => files.push(rel.to_string()),
            None => self.lines.push((vec![rel.to_string()], why, joins)),
        }
    }

    pub fn lines(self) -> Vec<String> {
        self.lines
            .into_iter()
            .map(|(files, why, _)| {
                let more = files.len().saturating_sub(NAMED);
                let mut named = files.into_iter().take(NAMED).collect::<Vec<_>>().join(", ");
                if more > 0 {
                    named.push_str(&format!(" and {more} more"));
                }
                format!("{named}: not checked ({why})")
            })
            .collect()
    }
}

/// Lines past `CAP` counted in one last line.
pub fn capped(mut lines: Vec<String>, what: &str) -> Vec<String> {
    if lines.len() > CAP {
        let more = lines.len() - CAP;
        lines.truncate(CAP);
        lines.push(format!("({more} more {what} not shown; at most {CAP} are shown)"));
    }
    lines
}

/// Sections of lines, each under its own first line when it has one (the errors not compared with before,
/// under the line that says so), at most `CAP` lines in all: the first sections first, a section's first
/// line only above lines of it that are shown, and the rest counted in one last line.
pub fn capped_sections<const N: usize>(sections: [(Option<&str>, Vec<String>); N], what: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut left, mut more) = (CAP, 0);
    for (head, lines) in sections {
        let shown = lines.len().min(left);
        more += lines.len() - shown;
        left -= shown;
        if shown > 0 {
            out.extend(head.map(str::to_string));
            out.extend(lines.into_iter().take(shown));
        }
    }
    if more > 0 {
        out.push(format!("({more} more {what} not shown; at most {CAP} are shown)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::ls_types::Range;

    fn diag(line: u32, message: &str) -> Diagnostic {
        Diagnostic {
            range: Range { start: Position { line, character: 4 }, end: Position { line, character: 5 } },
            severity: Some(DiagnosticSeverity::ERROR),
            message: message.into(),
            source: Some("pyflakes".into()),
            ..Default::default()
        }
    }

    #[test]
    fn an_error_that_moved_with_its_line_is_not_new() {
        let before_text = "import os\nx = undefined_a\n";
        let after_text = "import os\n\n\nx = undefined_a\ny = undefined_b\n";
        let before = vec![key(Some(before_text), &diag(1, "undefined name 'undefined_a'"))];
        let a = diag(3, "undefined name 'undefined_a'");
        let b = diag(4, "undefined name 'undefined_b'");
        let now = vec![(key(Some(after_text), &a), &a), (key(Some(after_text), &b), &b)];
        let new = new_errors(&before, &now);
        assert_eq!(new.len(), 1);
        assert_eq!(
            diagnostic_line("m.py", Some(after_text), new[0]),
            "m.py:5:5: error: undefined name 'undefined_b' (pyflakes)"
        );
    }

    #[test]
    fn positions_are_one_based_and_past_the_end_is_said() {
        assert_eq!(one_based("ab\ncd", Position { line: 1, character: 1 }), Some((2, 2)));
        assert_eq!(one_based("é😀x", Position { line: 0, character: 3 }), Some((1, 3)));
        assert_eq!(one_based("ab", Position { line: 7, character: 0 }), None);
        let line = diagnostic_line("a.py", Some("x\n"), &diag(40, "boom"));
        assert!(line.contains("past the end of the file"), "{line}");
    }

    #[test]
    fn a_symbol_is_found_by_text_and_line() {
        let text = "def foo():\n    return foobar + foo\n";
        assert_eq!(find_symbol(text, "foo", Some(2)), Ok(Position { line: 1, character: 20 }));
        assert_eq!(find_symbol(text, "foo", None), Ok(Position { line: 0, character: 4 }));
        assert!(find_symbol(text, "bar", Some(1)).is_err());
        assert!(find_symbol(text, "foo", Some(9)).unwrap_err().contains("past the end"));
    }

    #[test]
    fn sections_share_the_cap_and_a_first_line_stands_only_above_its_lines() {
        let many = |p: &str, n: usize| (0..n).map(|i| format!("{p}:{i}")).collect::<Vec<_>>();
        let out = capped_sections([(None, many("a", 3)), (Some("(head)"), many("b", 2))], "errors");
        assert_eq!(out, ["a:0", "a:1", "a:2", "(head)", "b:0", "b:1"]);
        let out = capped_sections([(None, many("a", CAP - 1)), (Some("(head)"), many("b", 3))], "errors");
        assert_eq!(out.len(), CAP + 2, "{out:?}");
        assert_eq!(out[CAP - 1..], ["(head)", "b:0", "(2 more errors not shown; at most 50 are shown)"]);
        let out = capped_sections([(None, many("a", CAP)), (Some("(head)"), many("b", 3))], "errors");
        assert!(!out.contains(&"(head)".to_string()), "no first line above nothing: {out:?}");
        assert_eq!(out.last().map(String::as_str), Some("(3 more errors not shown; at most 50 are shown)"));
    }

    #[test]
    fn files_not_checked_for_one_reason_share_a_line_and_waits_do_not() {
        use crate::intel::source::Checked;
        let down = Checked::Failed("rust-analyzer could not start".into());
        let late = Checked::No { who: "pylsp".into(), waited: std::time::Duration::from_millis(900) };
        let mut u = Unchecked::default();
        for (rel, checked) in
            [("a.rs", &down), ("m.py", &late), ("b.rs", &down), ("ok.rs", &Checked::Yes), ("n.py", &late)]
        {
            u.add(rel, checked);
        }
        assert_eq!(
            u.lines(),
            [
                "a.rs, b.rs: not checked (rust-analyzer could not start)",
                "m.py: not checked (pylsp did not answer in 900 ms)",
                "n.py: not checked (pylsp did not answer in 900 ms)",
            ]
        );
        let mut u = Unchecked::default();
        for i in 0..13 {
            u.add(&format!("f{i}.rs"), &down);
        }
        let line = u.lines().join("\n");
        assert!(line.starts_with("f0.rs, f1.rs, ") && line.contains("f9.rs and 3 more: not checked ("), "{line}");
    }

    #[test]
    fn outside_the_workspace_is_never_a_workspace_path() {
        let root = Path::new("/w");
        assert_eq!(rel(root, Path::new("/w/a/b.py")).as_deref(), Some("a/b.py"));
        assert_eq!(rel(root, Path::new("/usr/lib/os.py")), None);
        assert_eq!(rel(root, Path::new("/w/../etc/passwd")), None);
        let loc = Location { uri: Uri::from_file_path("/usr/lib/os.py").unwrap(), range: Range::default() };
        assert_eq!(location_line(root, &loc, None), "(outside the workspace) file:///usr/lib/os.py:1");
    }
}
