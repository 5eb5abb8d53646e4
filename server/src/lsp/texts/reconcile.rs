//! Edits the editor has applied but not yet reported.
//!
//! Once the editor answers `applied: true`, the edit is in its buffer, but the matching `didChange` may
//! come late (eglot waits for 0.5 s of idle, longer while the user types) or never. Until it comes, the
//! server's copy of the document is the last reported text plus these pending edits, so reads, later
//! edits and the text written before a shell command all have every applied edit. When the report
//! comes, it is recognised (the text it produces is one the server expected) and not applied twice.

use tower_lsp_server::ls_types::TextDocumentContentChangeEvent;

use crate::lsp::positions::{offset_of, Encoding};

/// One applied edit: where it replaced what, and the whole text after it.
#[derive(Debug, Clone)]
pub struct Pending {
    /// Byte offset of the replaced text in the text before this edit.
    pub at: usize,
    pub old: String,
    pub new: String,
    pub after: String,
}

/// A line range that changed for a reason other than the agent's own edit (the user typed): what edit
/// marks below it or inside it must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineChange {
    pub start: u32,
    /// The last line of the replaced range.
    pub end: u32,
    /// Lines the replacement has (newlines in its text).
    pub new_lines: u32,
}

/// What a `didChange` did to the server's copy.
#[derive(Debug, Default, PartialEq)]
pub struct Reconciled {
    /// Pending edits this report confirmed (those the user's typing overwrote are dropped, not counted).
    pub confirmed: usize,
    /// Changes that were not the agent's edits, in order; `None` when the whole text was replaced.
    pub foreign: Option<Vec<LineChange>>,
}

/// Applies a `didChange`'s changes to `reported` (the editor's text as last reported) and reconciles
/// `pending` with the result: edits the report includes are dropped, the others stay on top of it.
pub fn apply(
    reported: &mut String,
    pending: &mut Vec<Pending>,
    changes: Vec<TextDocumentContentChangeEvent>,
    enc: Encoding,
) -> Reconciled {
    let mut foreign = Some(Vec::new());
    let mut confirmed = 0;
    for c in changes {
        match c.range {
            None => {
                *reported = c.text;
                foreign = None;
            }
            Some(r) => {
                let start = offset_of(reported, r.start, enc);
                let end = offset_of(reported, r.end, enc).max(start);
                // The report of our own next edit, as sent: not the user's doing.
                let ours =
                    pending.first().is_some_and(|p| p.at == start && p.old == reported[start..end] && p.new == c.text);
                if !ours {
                    if let Some(f) = foreign.as_mut() {
                        f.push(LineChange { start: r.start.line, end: r.end.line, new_lines: newlines(&c.text) });
                    }
                    shift(pending, start, end, c.text.len());
                }
                reported.replace_range(start..end, &c.text);
                if ours {
                    // Confirmed, in order. Should it have landed on a text the server did not expect,
                    // the edits after it are rebased below.
                    pending.remove(0);
                    confirmed += 1;
                }
            }
        }
    }
    // The text is one the server expected after some pending edit: those up to it are confirmed.
    if let Some(i) = pending.iter().rposition(|p| p.after == *reported) {
        pending.drain(..=i);
        confirmed += i + 1;
    } else {
        rebase(reported, pending);
    }
    Reconciled { confirmed, foreign }
}

/// Moves pending edits past a change by someone else of bytes `start..end` into `len` bytes; an edit
/// whose replaced text the change touched can no longer be placed (it is dropped in `rebase`).
fn shift(pending: &mut [Pending], start: usize, end: usize, len: usize) {
    for p in pending.iter_mut() {
        // usize::MAX marks an edit already displaced: it is tested first, so no sum can overflow.
        if p.at == usize::MAX {
            continue;
        }
        if p.at >= end {
            p.at = p.at - (end - start) + len;
        } else if p.at + p.old.len() > start {
            p.at = usize::MAX;
        }
    }
}

/// Puts the remaining pending edits on top of a text that differs from the one they were made on:
/// each goes where its replaced text still is; one whose text the user changed is dropped (the
/// editor's buffer is the truth, and it has that edit already).
fn rebase(reported: &str, pending: &mut Vec<Pending>) {
    let mut text = reported.to_string();
    pending.retain_mut(|p| {
        let fits = p.at != usize::MAX && text.get(p.at..p.at + p.old.len()).is_some_and(|s| s == p.old);
        if fits {
            text.replace_range(p.at..p.at + p.old.len(), &p.new);
            p.after = text.clone();
        } else {
            tracing::debug!("a pending edit no longer fits the reported text; the editor's text stands");
        }
        fits
    });
}

fn newlines(s: &str) -> u32 {
    s.matches('\n').count() as u32
}

/// Where an edit mark (lines `start..=end`) goes after a change by someone else; `None` when the change
/// replaced its whole range.
pub fn follow(start: u32, end: u32, c: LineChange) -> Option<(u32, u32)> {
    let removed = c.end - c.start;
    let shift = |l: u32| (l + c.new_lines).saturating_sub(removed);
    if c.end < start {
        Some((shift(start), shift(end)))
    } else if c.start > end {
        Some((start, end))
    } else if c.start <= start && c.end >= end && removed > 0 {
        None
    } else {
        Some((start.min(c.start), shift(end).max(start.min(c.start))))
    }
}

#[cfg(test)]
mod tests {
    use tower_lsp_server::ls_types::{Position, Range};

    use super::*;

    fn change(sl: u32, sc: u32, el: u32, ec: u32, text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range { start: Position::new(sl, sc), end: Position::new(el, ec) }),
            range_length: None,
            text: text.into(),
        }
    }

    fn edit(before: &str, old: &str, new: &str) -> Pending {
        let at = before.find(old).unwrap();
        let mut after = before.to_string();
        after.replace_range(at..at + old.len(), new);
        Pending { at, old: old.into(), new: new.into(), after }
    }

    #[test]
    fn a_late_report_of_two_edits_is_not_applied_twice() {
        let mut reported = "a\nb\nc\n".to_string();
        let one = edit(&reported, "b", "B");
        let two = edit(&one.after, "c", "C");
        let mut pending = vec![one, two];
        // The editor reports the first edit alone, then the second.
        let r = apply(&mut reported, &mut pending, vec![change(1, 0, 1, 1, "B")], Encoding::Utf16);
        assert_eq!((r.confirmed, pending.len(), reported.as_str()), (1, 1, "a\nB\nc\n"));
        assert_eq!(r.foreign, Some(vec![]));
        assert_eq!(pending[0].after, "a\nB\nC\n");
        let r = apply(&mut reported, &mut pending, vec![change(2, 0, 2, 1, "C")], Encoding::Utf16);
        assert_eq!((r.confirmed, pending.len(), reported.as_str()), (1, 0, "a\nB\nC\n"));
    }

    #[test]
    fn a_displaced_edit_survives_more_typing_without_overflow() {
        let mut reported = "a\nb\nc\n".to_string();
        let one = edit(&reported, "b", "B");
        let two = edit(&one.after, "c", "C");
        let mut pending = vec![one, two];
        // The user rewrites the first edit's line (it is displaced), then types again before the
        // report of anything of ours: the displaced edit must be skipped, not summed (it overflowed).
        let typed = vec![change(1, 0, 1, 1, "x"), change(0, 0, 0, 0, "top\n")];
        apply(&mut reported, &mut pending, typed, Encoding::Utf16);
        assert_eq!(reported, "top\na\nx\nc\n");
        assert!(pending.iter().all(|p| p.at == usize::MAX || reported.get(p.at..p.at + p.old.len()) == Some(&p.old)));
    }

    #[test]
    fn a_batched_report_with_the_users_typing_after_it() {
        let mut reported = "one\ntwo\n".to_string();
        let mut pending = vec![edit(&reported, "two", "TWO")];
        // eglot: our edit, then a line the user typed at the top.
        let r = apply(
            &mut reported,
            &mut pending,
            vec![change(1, 0, 1, 3, "TWO"), change(0, 0, 0, 0, "zero\n")],
            Encoding::Utf16,
        );
        assert_eq!(reported, "zero\none\nTWO\n");
        assert!(pending.is_empty());
        assert_eq!(r.foreign, Some(vec![LineChange { start: 0, end: 0, new_lines: 1 }]));
    }

    #[test]
    fn typing_reported_before_the_edit_rebases_it() {
        let mut reported = "x = 1\ny = 2\n".to_string();
        let mut pending = vec![edit(&reported, "y = 2", "y = 3")];
        // The user's earlier typing arrives first; the edit stays on top, moved.
        apply(&mut reported, &mut pending, vec![change(0, 0, 0, 0, "# top\n")], Encoding::Utf16);
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].after, "# top\nx = 1\ny = 3\n");
        // The user rewrote the edited line: the editor's text stands.
        apply(&mut reported, &mut pending, vec![change(2, 0, 2, 5, "y = 9")], Encoding::Utf16);
        assert!(pending.is_empty());
        assert_eq!(reported, "# top\nx = 1\ny = 9\n");
    }

    #[test]
    fn marks_follow_lines_and_vanish_with_their_range() {
        let typed_above = LineChange { start: 0, end: 0, new_lines: 2 };
        assert_eq!(follow(5, 6, typed_above), Some((7, 8)));
        let deleted_above = LineChange { start: 1, end: 3, new_lines: 0 };
        assert_eq!(follow(5, 6, deleted_above), Some((3, 4)));
        assert_eq!(follow(5, 6, LineChange { start: 9, end: 9, new_lines: 3 }), Some((5, 6)));
        assert_eq!(follow(5, 6, LineChange { start: 4, end: 7, new_lines: 0 }), None);
        assert_eq!(follow(5, 6, LineChange { start: 6, end: 6, new_lines: 1 }), Some((5, 7)));
    }
}
