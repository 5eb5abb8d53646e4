//! One test (at least) per rule of `Texts`, numbered as in mod.rs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent, Uri};

use super::*;

const ROOT: &str = "/stepwise-texts-test/ws";

fn file(name: &str) -> (PathBuf, Uri) {
    let path = Path::new(ROOT).join(name);
    let uri = Uri::from_file_path(&path).expect("an absolute path");
    (path, uri)
}

fn change(sl: u32, sc: u32, el: u32, ec: u32, text: &str) -> TextDocumentContentChangeEvent {
    TextDocumentContentChangeEvent {
        range: Some(Range { start: Position::new(sl, sc), end: Position::new(el, ec) }),
        range_length: None,
        text: text.into(),
    }
}

/// The agent's edit of `old` (first found in `before`) to `new`, made for what `read` said.
fn edit(texts: &Texts, path: &Path, before: &str, old: &str, new: &str) -> AgentEdit {
    let at = before.find(old).expect("old text in before");
    let mut after = before.to_string();
    after.replace_range(at..at + old.len(), new);
    let made_for = texts.read(path).and_then(|t| t.open).map(|o| o.opened);
    AgentEdit { path: path.to_path_buf(), made_for, at, old: old.into(), new: new.into(), after }
}

fn text(texts: &Texts, path: &Path) -> Option<String> {
    texts.read(path).map(|t| t.text)
}

fn unsaved(texts: &Texts) -> Vec<PathBuf> {
    texts.unsaved_beneath(Path::new(ROOT)).into_iter().map(|u| u.path).collect()
}

#[test]
fn rule_1_the_buffer_else_the_overlay_else_the_disk() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    assert!(texts.read(&path).is_none(), "nothing in the editor: the disk");
    texts.applied(edit(&texts, &path, "one\n", "one", "ONE"));
    let overlay = texts.read(&path).expect("the overlay");
    assert_eq!((overlay.text.as_str(), overlay.open.is_none()), ("ONE\n", true));
    texts.open(uri, "buffer\n".into(), 1);
    let open = texts.read(&path).expect("the buffer");
    assert_eq!(open.text, "buffer\n");
    assert_eq!(open.open.map(|o| o.version), Some(Some(1)));
}

#[test]
fn rule_2_opening_drops_the_overlay_and_keeps_the_unsaved_mark() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    texts.applied(edit(&texts, &path, "x\n", "x", "y"));
    texts.open(uri.clone(), "y\n".into(), 1);
    texts.close(&uri);
    // Had the overlay outlived the opening, it would be read now that the buffer is gone.
    assert_eq!(text(&texts, &path), None);
    texts.open(uri, "y\n".into(), 2);
    assert_eq!(unsaved(&texts), vec![path]);
}

#[test]
fn rule_3_changes_apply_in_order_and_stale_versions_are_refused() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    texts.open(uri.clone(), "abc\n".into(), 1);
    assert!(texts.change(&uri, 2, vec![change(0, 0, 0, 1, "A")]).is_ok());
    let stale = texts.change(&uri, 2, vec![change(0, 1, 0, 2, "B")]);
    assert!(stale.is_err_and(|e| e.contains("stale")));
    assert_eq!(text(&texts, &path).as_deref(), Some("Abc\n"));
    let (closed, _) = file("closed.txt");
    let not_open = Uri::from_file_path(&closed).expect("an absolute path");
    assert!(texts.change(&not_open, 1, vec![change(0, 0, 0, 0, "x")]).is_err());
}

#[test]
fn rule_3_the_report_of_the_agents_edit_is_not_applied_twice() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    texts.open(uri.clone(), "one\ntwo\n".into(), 1);
    texts.applied(edit(&texts, &path, "one\ntwo\n", "two", "TWO"));
    // Applied, not reported yet: reads have it, and no version can be named until it is reported.
    let t = texts.read(&path).expect("open");
    assert_eq!((t.text.as_str(), t.open.map(|o| o.version)), ("one\nTWO\n", Some(None)));
    let (_, done) = texts.change(&uri, 2, vec![change(1, 0, 1, 3, "TWO")]).expect("in order");
    assert_eq!((done.confirmed, done.foreign), (1, Some(vec![])));
    let t = texts.read(&path).expect("open");
    assert_eq!((t.text.as_str(), t.open.map(|o| o.version)), ("one\nTWO\n", Some(Some(2))));
}

#[test]
fn rule_5_a_report_handled_before_the_answer_leaves_nothing_to_wait_for() {
    // The editor answers applyEdit, then reports the change; the report can be handled first. An
    // insertion (nothing replaced) would match again on the new text and wait for a second report.
    let texts = Texts::default();
    let (path, uri) = file("v.rs");
    texts.open(uri.clone(), "c = 3;\n".into(), 1);
    let e = edit(&texts, &path, "c = 3;\n", "", "0");
    let e = AgentEdit { at: 5, after: "c = 30;\n".into(), ..e };
    texts.change(&uri, 2, vec![change(0, 5, 0, 5, "0")]).expect("in order");
    texts.applied(e);
    let t = texts.read(&path).expect("open");
    assert_eq!((t.text.as_str(), t.open.map(|o| o.version)), ("c = 30;\n", Some(Some(2))));
}

#[test]
fn rule_3_the_users_edit_over_a_pending_agent_edit_wins() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    texts.open(uri.clone(), "x = 1\ny = 2\n".into(), 1);
    texts.applied(edit(&texts, &path, "x = 1\ny = 2\n", "y = 2", "y = 3"));
    // The user's typing, reported before the agent's edit, rewrote the line the edit changed.
    let (_, done) = texts.change(&uri, 2, vec![change(1, 0, 1, 5, "y = 9")]).expect("in order");
    assert_eq!(done.confirmed, 0);
    assert_eq!(text(&texts, &path).as_deref(), Some("x = 1\ny = 9\n"));
    assert!(texts.read(&path).and_then(|t| t.open).is_some_and(|o| o.version == Some(2)), "nothing pending");
}

#[test]
fn rule_4_a_file_closed_with_unsaved_agent_text_is_the_disk_again() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    texts.open(uri.clone(), "old\n".into(), 1);
    texts.applied(edit(&texts, &path, "old\n", "old", "new"));
    assert_eq!(unsaved(&texts), vec![path.clone()]);
    assert_eq!(texts.close(&uri), Some(path.clone()));
    assert_eq!(text(&texts, &path), None);
    // Before a command: asked about (the editor may still hold it), but nothing is written for it.
    assert_eq!(unsaved(&texts), vec![path.clone()]);
    assert_eq!(texts.to_write(&path), None);
    assert_eq!(unsaved(&texts), Vec::<PathBuf>::new());
}

#[test]
fn rule_4_a_document_closed_and_opened_again_is_still_saved_before_a_command() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    texts.open(uri.clone(), "old\n".into(), 1);
    texts.applied(edit(&texts, &path, "old\n", "old", "new"));
    texts.close(&uri);
    // A client reopens it at once (VS Code on a change of language), with the agent's text.
    texts.open(uri, "new\n".into(), 1);
    let (written, u) = texts.to_write(&path).expect("still unsaved");
    assert_eq!(written, "new\n");
    texts.saved(&u);
    assert_eq!(unsaved(&texts), Vec::<PathBuf>::new());
}

#[test]
fn rule_5_only_an_applied_edit_is_recorded_and_a_closed_file_gets_an_overlay() {
    let texts = Texts::default();
    let (path, _) = file("new.txt");
    let e = edit(&texts, &path, "", "", "hello\n");
    assert_eq!(e.made_for, None);
    // Sent but refused, failed or unanswered: `applied` is never called, nothing is kept.
    assert!(texts.read(&path).is_none() && unsaved(&texts).is_empty());
    texts.applied(e);
    assert_eq!(text(&texts, &path).as_deref(), Some("hello\n"));
    assert_eq!(unsaved(&texts), vec![path]);
}

#[test]
fn rule_5_a_late_answer_for_a_document_closed_meanwhile_keeps_no_text() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    texts.open(uri.clone(), "a\n".into(), 1);
    let e = edit(&texts, &path, "a\n", "a", "b");
    texts.close(&uri);
    texts.applied(e);
    // Neither as an overlay (the editor closed it: the disk is the truth) nor written before a command.
    assert_eq!(text(&texts, &path), None);
    assert_eq!(texts.to_write(&path), None);
}

#[test]
fn rule_5_a_late_answer_for_a_document_opened_meanwhile_is_applied_once() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    // Opened with the text the edit was made on: the edit goes on top, to be confirmed by the report.
    let e = edit(&texts, &path, "a\nb\n", "b", "B");
    texts.open(uri.clone(), "a\nb\n".into(), 1);
    texts.applied(e.clone());
    assert_eq!(text(&texts, &path).as_deref(), Some("a\nB\n"));
    let (_, done) = texts.change(&uri, 2, vec![change(1, 0, 1, 1, "B")]).expect("in order");
    assert_eq!(done.confirmed, 1);
    // Opened with the edit in it already: not applied again, not even where `old` would fit.
    let (path2, uri2) = file("b.txt");
    let e = edit(&texts, &path2, "x", "", "x");
    texts.open(uri2, "xx".into(), 1);
    texts.applied(e);
    assert_eq!(text(&texts, &path2).as_deref(), Some("xx"));
    // Opened and then opened again (a new opening): an answer for the first is late too.
    let (path3, uri3) = file("c.txt");
    texts.open(uri3.clone(), "c".into(), 1);
    let e = edit(&texts, &path3, "c", "c", "C");
    texts.close(&uri3);
    texts.open(uri3, "typed".into(), 1);
    texts.applied(e);
    assert_eq!(text(&texts, &path3).as_deref(), Some("typed"), "the user's text stands");
}

#[test]
fn rule_6_what_is_saved_before_a_command_is_what_lies_beneath_the_folder() {
    let texts = Texts::default();
    let (inside, _) = file("a.txt");
    let outside = Path::new("/stepwise-texts-test/other/b.txt").to_path_buf();
    texts.applied(edit(&texts, &inside, "a", "a", "A"));
    texts.applied(edit(&texts, &outside, "b", "b", "B"));
    assert_eq!(unsaved(&texts), vec![inside.clone()]);
    // The editor saved it: not unsaved, and its overlay goes (the disk has the text).
    let u = texts.unsaved_beneath(Path::new(ROOT)).remove(0);
    texts.saved(&u);
    assert!(unsaved(&texts).is_empty());
    assert_eq!(text(&texts, &inside), None);
}

#[test]
fn rule_6_an_edit_after_the_save_was_asked_for_stays_unsaved() {
    let texts = Texts::default();
    let (path, _) = file("a.txt");
    texts.applied(edit(&texts, &path, "a", "a", "A"));
    let asked = texts.unsaved_beneath(Path::new(ROOT));
    texts.applied(edit(&texts, &path, "A", "A", "AA"));
    for u in &asked {
        texts.saved(u);
    }
    assert_eq!(unsaved(&texts), vec![path.clone()]);
    assert_eq!(texts.to_write(&path).map(|(t, _)| t).as_deref(), Some("AA"));
}

#[test]
fn rule_6_a_save_by_the_user_during_a_command_stands() {
    let texts = Texts::default();
    let (path, uri) = file("a.txt");
    texts.open(uri.clone(), "a\n".into(), 1);
    texts.applied(edit(&texts, &path, "a\n", "a", "A"));
    let asked = texts.unsaved_beneath(Path::new(ROOT));
    assert_eq!(asked.len(), 1);
    // While the editor is asked, the user saves (and types on): the server writes nothing over it.
    texts.change(&uri, 2, vec![change(0, 0, 0, 1, "A")]).expect("the report");
    texts.on_disk(&path);
    texts.change(&uri, 3, vec![change(0, 1, 0, 1, " typed")]).expect("typing");
    assert_eq!(texts.to_write(&path), None);
    assert!(unsaved(&texts).is_empty());
}

#[test]
fn rule_7_the_server_writing_the_disk_drops_the_overlay_and_the_mark() {
    let texts = Texts::default();
    let (path, _) = file("a.txt");
    texts.applied(edit(&texts, &path, "a", "a", "A"));
    texts.on_disk(&path);
    assert_eq!(text(&texts, &path), None);
    assert!(unsaved(&texts).is_empty());
}

#[test]
fn rule_8_a_folder_removed_takes_its_agent_text_and_leaves_the_buffers() {
    let texts = Texts::default();
    let (open, uri) = file("open.txt");
    let (closed, _) = file("closed.txt");
    let other = Path::new("/stepwise-texts-test/other/b.txt").to_path_buf();
    texts.open(uri, "a".into(), 1);
    texts.applied(edit(&texts, &open, "a", "a", "A"));
    texts.applied(edit(&texts, &closed, "c", "c", "C"));
    texts.applied(edit(&texts, &other, "b", "b", "B"));
    texts.keep_only(|p| p.starts_with("/stepwise-texts-test/other"));
    assert_eq!(text(&texts, &closed), None);
    assert!(unsaved(&texts).is_empty());
    assert_eq!(text(&texts, &open).as_deref(), Some("A"), "the editor's buffer stays");
    assert_eq!(texts.unsaved_beneath(Path::new("/stepwise-texts-test/other")).len(), 1);
}

#[tokio::test]
async fn an_edit_is_settled_once_the_editor_reports_it() {
    let texts = std::sync::Arc::new(Texts::default());
    let (path, uri) = file("a.txt");
    assert!(texts.wait_settled(&path, Duration::ZERO).await, "not open: nothing to wait for");
    texts.open(uri.clone(), "a".into(), 1);
    texts.applied(edit(&texts, &path, "a", "a", "b"));
    let waiter = tokio::spawn({
        let (texts, path) = (texts.clone(), path.clone());
        async move { texts.wait_settled(&path, Duration::from_secs(30)).await }
    });
    texts.change(&uri, 2, vec![change(0, 0, 0, 1, "b")]).expect("the report");
    assert!(waiter.await.expect("the waiter"));
}
