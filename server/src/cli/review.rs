//! Chat's `/review` (each file the latest run changed, as a coloured unified diff, one `@@` section per
//! hunk, numbered as `stepwise.review` numbers them) and `/undo PATH [HUNK...]` (on disk; a file someone
//! else changed since is left alone). Colour goes through anstream: none off a terminal or with `NO_COLOR`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;

use crate::checkpoint::{ChangeStatus, FileChanges, Scope};
use crate::workspace::Workspace;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";
/// Unchanged lines shown around a hunk.
const CONTEXT: usize = 3;

/// `/review`.
pub(super) fn show(ws: &Workspace) {
    let text = match ws.changes(&Scope::Latest, |_| None) {
        Ok((_, files)) if files.is_empty() => "No changes to review.".to_string(),
        Ok((_, files)) => {
            let mut out = String::new();
            for f in &files {
                unified(&mut out, f);
            }
            let n = files.len();
            let _ = write!(out, "{n} {} changed; /undo PATH [HUNK...] puts changes back", plural(n, "file", "files"));
            out
        }
        Err(e) => return eprintln!("stepwise: {e}"),
    };
    let mut stdout = anstream::stdout().lock();
    let _ = writeln!(stdout, "{text}");
}

/// `/undo PATH [HUNK...]`.
pub(super) fn undo(ws: &Arc<Workspace>, args: &str) {
    let mut words = args.split_whitespace();
    let Some(path) = words.next() else { return eprintln!("stepwise: /undo PATH [HUNK...]") };
    let hunks: Result<Vec<usize>, _> = words.map(str::parse::<usize>).collect();
    let Ok(hunks) = hunks else { return eprintln!("stepwise: hunks are numbers, as /review shows them") };
    let hunks = (!hunks.is_empty()).then_some(hunks);
    match ws.undo_on_disk(&Scope::Latest, path, hunks.as_deref()) {
        Ok(true) => println!("Undone: {path}"),
        Ok(false) => eprintln!("stepwise: {path} was changed since the agent changed it; left alone"),
        Err(e) => eprintln!("stepwise: {e}"),
    }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

fn paint(out: &mut String, colour: &str, line: &str) {
    let _ = writeln!(out, "{colour}{}{RESET}", line.trim_end_matches('\n'));
}

/// One file as a unified diff.
fn unified(out: &mut String, f: &FileChanges) {
    let (old, new) = match f.status {
        ChangeStatus::Created => ("/dev/null".to_string(), format!("b/{}", f.path)),
        ChangeStatus::Deleted => (format!("a/{}", f.path), "/dev/null".to_string()),
        ChangeStatus::Modified => (format!("a/{}", f.path), format!("b/{}", f.path)),
    };
    paint(out, BOLD, &format!("--- {old}"));
    paint(out, BOLD, &format!("+++ {new}"));
    if !f.shared_with.is_empty() {
        let who = f.shared_with.join(", ");
        paint(out, CYAN, &format!("(changed while a command of {who} also ran: whose change it is cannot be told)"));
    }
    // Not UTF-8 on a side that exists: no lines to show.
    let binary = (f.before.is_none() && f.status != ChangeStatus::Created)
        || (f.after.is_none() && f.status != ChangeStatus::Deleted);
    if binary {
        let _ = writeln!(out, "Binary file changed");
        return;
    }
    fn lines(t: &Option<String>) -> Vec<&str> {
        t.as_deref().unwrap_or("").split_inclusive('\n').collect()
    }
    let (before, after) = (lines(&f.before), lines(&f.after));
    for (i, h) in f.hunks.iter().enumerate() {
        // Context stays between the neighbouring hunks.
        let low = if i == 0 { 0 } else { f.hunks[i - 1].end };
        let high = f.hunks.get(i + 1).map_or(after.len(), |n| n.start);
        let lead = h.start.saturating_sub(low).min(CONTEXT);
        let trail = high.saturating_sub(h.end).min(CONTEXT);
        let removed = h.before_end - h.before_start;
        let added = h.end - h.start;
        let reviewed = if h.reviewed { " (kept)" } else { "" };
        paint(
            out,
            CYAN,
            &format!(
                "@@ -{},{} +{},{} @@ hunk {}{reviewed}",
                h.before_start - lead + usize::from(lead + removed > 0),
                lead + removed + trail,
                h.start - lead + usize::from(lead + added > 0),
                lead + added + trail,
                h.index
            ),
        );
        for l in &after[h.start - lead..h.start] {
            let _ = writeln!(out, " {}", l.trim_end_matches('\n'));
        }
        for l in &before[h.before_start..h.before_end] {
            paint(out, RED, &format!("-{l}"));
        }
        for l in &after[h.start..h.end] {
            paint(out, GREEN, &format!("+{l}"));
        }
        for l in &after[h.end..h.end + trail] {
            let _ = writeln!(out, " {}", l.trim_end_matches('\n'));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hunk_is_shown_with_its_context_and_numbers() {
        let base = crate::checkpoint::Base {
            path: "a.txt".into(),
            before: Some(b"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n".to_vec()),
            mode: 0o644,
            steps: vec![],
            shared_with: vec![],
        };
        let now = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n";
        let f = base.changes(Some(now.as_bytes()), &Default::default()).unwrap();
        let mut out = String::new();
        unified(&mut out, &f);
        let plain: String =
            out.replace(RED, "").replace(GREEN, "").replace(CYAN, "").replace(BOLD, "").replace(RESET, "");
        assert_eq!(plain, "--- a/a.txt\n+++ b/a.txt\n@@ -2,7 +2,7 @@ hunk 0\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
        assert!(out.contains(&format!("{RED}-5{RESET}")) && out.contains(&format!("{GREEN}+five{RESET}")));
    }
}
