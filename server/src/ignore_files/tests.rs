use super::*;

/// The rules `text` holds for a folder `/w`.
fn rules(text: &str) -> IgnoreFile {
    IgnoreFile::parse(text.as_bytes(), Path::new("/w")).expect("some rule")
}

/// What `text` says of the file (or, ending in `/`, the folder) `rel` beneath `/w`.
fn says(text: &str, rel: &str) -> Match {
    let (rel, is_dir) = rel.strip_suffix('/').map_or((rel, false), |r| (r, true));
    rules(text).matched(&Path::new("/w").join(rel), is_dir)
}

/// Which of `paths` `text` ignores.
fn ignores<'a>(text: &str, paths: &[&'a str]) -> Vec<&'a str> {
    paths.iter().copied().filter(|p| says(text, p) == Match::Ignore).collect()
}

#[test]
fn blank_lines_and_comments_are_no_rules_and_an_escaped_hash_is_a_name() {
    assert!(IgnoreFile::parse(b"\n# a comment\n   \n\r\n#*\n", Path::new("/w")).is_none());
    assert_eq!(ignores("#x\ny\n", &["#x", "x", "y"]), ["y"]);
    assert_eq!(ignores("\\#x\n", &["#x", "x", "\\#x"]), ["#x"]);
    // Only a `#` that starts the line: elsewhere it is a byte like any.
    assert_eq!(ignores(" #x\na#b\n", &[" #x", "#x", "a#b"]), [" #x", "a#b"]);
}

#[test]
fn trailing_spaces_are_trimmed_unless_escaped_and_other_blanks_are_kept() {
    assert_eq!(ignores("a  \n", &["a", "a ", "a  "]), ["a"]);
    assert_eq!(ignores("b\\ \n", &["b", "b ", "b\\ "]), ["b "]);
    assert_eq!(ignores("c\\  \n", &["c", "c ", "c  "]), ["c "]);
    assert_eq!(ignores("d\t\n", &["d", "d\t"]), ["d\t"]);
    assert_eq!(ignores(" e\n", &["e", " e"]), [" e"]);
}

#[test]
fn a_backslash_escapes_the_next_byte_and_a_trailing_one_matches_nothing() {
    assert_eq!(ignores("\\!keep\n", &["!keep", "keep"]), ["!keep"]);
    assert_eq!(says("\\!keep\n", "!keep"), Match::Ignore, "not a negation");
    assert_eq!(ignores("\\*\n", &["*", "x", "\\*"]), ["*"]);
    assert_eq!(ignores("\\?\\[a]\n", &["?[a]", "x[a]", "?a"]), ["?[a]"]);
    assert_eq!(ignores("\\\\\n", &["\\", "\\\\"]), ["\\"]);
    assert_eq!(ignores("e\\\nz\n", &["e", "e\\", "z"]), ["z"]);
}

#[test]
fn the_last_line_that_matches_decides_and_a_bang_re_includes() {
    let text = "*.log\n!keep.log\n";
    assert_eq!(says(text, "a.log"), Match::Ignore);
    assert_eq!(says(text, "deep/er/keep.log"), Match::Whitelist);
    assert_eq!(says(text, "a.txt"), Match::None);
    assert_eq!(says("!keep.log\n*.log\n", "keep.log"), Match::Ignore);
    // `!` alone, or before nothing but a slash, says nothing.
    assert!(IgnoreFile::parse(b"!\n!/\n/\n", Path::new("/w")).is_none());
}

#[test]
fn a_trailing_slash_matches_folders_only() {
    assert_eq!(
        ignores("build/\n", &["build/", "build", "src/build/", "src/build", "build.rs"]),
        ["build/", "src/build/"]
    );
    assert_eq!(ignores("a/b/\n", &["a/b/", "a/b", "x/a/b/"]), ["a/b/"]);
    assert_eq!(says("!build/\n", "build/"), Match::Whitelist);
    assert_eq!(says("!build/\n", "build"), Match::None);
}

#[test]
fn a_slash_at_the_start_or_in_the_middle_anchors_to_the_folder_and_none_matches_at_any_depth() {
    assert_eq!(ignores("/top\n", &["top", "a/top", "top/x"]), ["top"]);
    assert_eq!(ignores("a/b\n", &["a/b", "x/a/b", "a/b/c", "ab"]), ["a/b"]);
    assert_eq!(
        ignores("name\n", &["name", "x/name", "x/y/name/", "names", "x/name/y"]),
        ["name", "x/name", "x/y/name/"]
    );
    assert_eq!(ignores("/a/*.rs\n", &["a/x.rs", "b/a/x.rs"]), ["a/x.rs"]);
}

#[test]
fn star_and_question_mark_do_not_cross_a_slash() {
    assert_eq!(ignores("a/*.rs\n", &["a/x.rs", "a/.rs", "a/b/x.rs", "x.rs"]), ["a/x.rs", "a/.rs"]);
    assert_eq!(ignores("x/a?b\n", &["x/acb", "x/a/b", "x/ab"]), ["x/acb"]);
    assert_eq!(ignores("/*\n", &["x", "x/"]), ["x", "x/"]);
    assert_eq!(ignores("/*\n", &["x/y"]), Vec::<&str>::new());
    assert_eq!(ignores("*/x\n", &["a/x", "a/b/x", "x"]), ["a/x"]);
    assert_eq!(ignores("a*b*c\n", &["abc", "aXbYc", "d/aXbYc", "acb"]), ["abc", "aXbYc", "d/aXbYc"]);
    // In a name, `**` is a `*`; inside a component of a path, too.
    assert_eq!(ignores("a**b\n", &["ab", "d/aXXb"]), ["ab", "d/aXXb"]);
    assert_eq!(ignores("x/a**b\n", &["x/ab", "x/aXb", "x/a/b", "x/aX/Yb"]), ["x/ab", "x/aXb"]);
    assert_eq!(ignores("*.rs\n", &["a.rs", ".rs", "d/e.rs", "a.rsx", "a.RS"]), ["a.rs", ".rs", "d/e.rs"]);
    assert_eq!(ignores("log*\n", &["log", "logs", "d/log.txt", "alog"]), ["log", "logs", "d/log.txt"]);
    assert_eq!(ignores("a/*\n", &["a/x", "a/", "a/x/", "a/x/y", "b/a/x"]), ["a/x", "a/x/"]);
}

#[test]
fn classes_take_ranges_negations_named_sets_and_a_leading_bracket() {
    assert_eq!(ignores("[abc].txt\n", &["a.txt", "c.txt", "d.txt", "ab.txt"]), ["a.txt", "c.txt"]);
    assert_eq!(ignores("[a-c]x\n", &["ax", "bx", "cx", "dx", "-x"]), ["ax", "bx", "cx"]);
    assert_eq!(ignores("[!a-c]x\n", &["ax", "dx", "-x"]), ["dx", "-x"]);
    assert_eq!(ignores("[^a-c]x\n", &["ax", "dx", "^x"]), ["dx", "^x"]);
    assert_eq!(ignores("[]]x\n", &["]x", "x", "[x"]), ["]x"]);
    assert_eq!(ignores("[!]]x\n", &["]x", "ax"]), ["ax"]);
    assert_eq!(ignores("[a-]x\n", &["ax", "-x", "bx"]), ["ax", "-x"]);
    assert_eq!(ignores("[\\]a]x\n", &["]x", "ax", "\\x"]), ["]x", "ax"]);
    assert_eq!(ignores("[[:digit:]]x\n", &["1x", "ax", "9x"]), ["1x", "9x"]);
    assert_eq!(ignores("[[:alpha:][:digit:]_]\n", &["a", "Z", "5", "_", "-"]), ["a", "Z", "5", "_"]);
    assert_eq!(ignores("[[:upper:]]\n[[:space:]]\n", &["A", "a", " ", "\t", "\x0b"]), ["A", " ", "\t"]);
    // `[:` without its `:]` is a `[` and `:` among the members.
    assert_eq!(ignores("[[:ab]\n", &["[", ":", "a", "c"]), ["[", ":", "a"]);
    // Unclosed, or an unknown name: the line matches nothing, the others still do.
    assert_eq!(ignores("[abc\nx\n", &["[abc", "a", "x"]), ["x"]);
    assert_eq!(ignores("[[:nope:]]\nz\n", &["n", "[[:nope:]]", "z"]), ["z"]);
    // A class never takes a `/` of a path.
    assert_eq!(ignores("x[/]y\n", &["x/y"]), Vec::<&str>::new());
}

#[test]
fn double_stars_lead_trail_and_stand_between_folders() {
    let paths = ["foo", "a/foo", "a/b/foo", "foo/x", "foo/x/y", "afoo"];
    assert_eq!(ignores("**/foo\n", &paths), ["foo", "a/foo", "a/b/foo"]);
    assert_eq!(ignores("foo/**\n", &paths), ["foo/x", "foo/x/y"]);
    let paths = ["a/b", "a/x/b", "a/x/y/b", "ab", "a/xb", "x/a/b"];
    assert_eq!(ignores("a/**/b\n", &paths), ["a/b", "a/x/b", "a/x/y/b"]);
    assert_eq!(ignores("/**\n", &["x", "x/y/z"]), ["x", "x/y/z"]);
    assert_eq!(ignores("**/d/\n", &["d/", "a/b/d/", "d", "a/d"]), ["d/", "a/b/d/"]);
    assert_eq!(ignores("**/*.o\n", &["x.o", "a/b/x.o", "a/b/x.oo"]), ["x.o", "a/b/x.o"]);
    // An escaped slash after `**` still bounds it, without the "no folder at all" form.
    assert_eq!(ignores("a/**\\/b\n", &["a/b", "a/x/b"]), ["a/x/b"]);
}

#[test]
fn matching_is_case_sensitive_as_git_is_by_default() {
    assert_eq!(ignores("Foo\n*.TXT\n", &["Foo", "foo", "FOO", "a.TXT", "a.txt"]), ["Foo", "a.TXT"]);
}

#[test]
fn a_byte_order_mark_crlf_line_ends_and_a_last_line_without_one_are_read_as_git_does() {
    let file = IgnoreFile::parse(b"\xEF\xBB\xBFa\r\nb\r\nc", Path::new("/w")).unwrap();
    for name in ["a", "b", "c"] {
        assert_eq!(file.matched(Path::new(&format!("/w/{name}")), false), Match::Ignore, "{name}");
    }
    assert_eq!(file.matched(Path::new("/w/a\r"), false), Match::None);
}

#[test]
fn paths_are_taken_from_the_files_folder_and_those_outside_it_are_not_spoken_of() {
    let file = IgnoreFile::parse(b"/x\n", Path::new("/w/sub/")).unwrap();
    assert_eq!(file.matched(Path::new("/w/sub/x"), false), Match::Ignore);
    assert_eq!(file.matched(Path::new("/w/x"), false), Match::None);
    assert_eq!(file.matched(Path::new("/w/subx"), false), Match::None);
    let top = IgnoreFile::parse(b"/x\n", Path::new("/")).unwrap();
    assert_eq!(top.matched(Path::new("/x"), false), Match::Ignore);
    let relative = IgnoreFile::parse(b"/x\n", Path::new("")).unwrap();
    assert_eq!(relative.matched(Path::new("x"), false), Match::Ignore);
}

#[test]
fn the_innermost_file_that_speaks_decides() {
    let outer = Arc::new(IgnoreFile::parse(b"*.log\n*.tmp\n", Path::new("/w")).unwrap());
    let inner = Arc::new(IgnoreFile::parse(b"!keep.log\nlocal\n", Path::new("/w/sub")).unwrap());
    let rules = [outer, inner];
    assert!(!ignored(&rules, Path::new("/w/sub/keep.log"), false), "re-included inside");
    assert!(ignored(&rules, Path::new("/w/keep.log"), false), "the inner file says nothing outside its folder");
    assert!(ignored(&rules, Path::new("/w/sub/a.tmp"), false), "the inner file says nothing of it");
    assert!(ignored(&rules, Path::new("/w/sub/local"), true));
    assert!(!ignored(&rules, Path::new("/w/local"), true));
}

#[test]
fn pathological_stars_end_soon_and_a_line_of_too_many_is_left_out() {
    // Exponential backtracking would take years on these; wildmatch's aborts, and the budget, end them.
    let text = format!("{}b\n/{}x\n", "*a".repeat(40), "**/".repeat(60));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let file = IgnoreFile::parse(text.as_bytes(), Path::new("/w")).unwrap();
        let long = format!("/w/{}", "a".repeat(250));
        let deep = format!("/w/{}y", "a/".repeat(500));
        let hit = format!("/w/{}", "a".repeat(100) + "b");
        tx.send([
            file.matched(Path::new(&long), false),
            file.matched(Path::new(&deep), false),
            file.matched(Path::new(&hit), false),
        ])
    });
    let said = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("a match backtracked for ever");
    assert_eq!(said, [Match::None, Match::None, Match::Ignore]);
    let many = format!("{}\nz\n", "a*".repeat(pattern::MAX_STARS + 1));
    let file = IgnoreFile::parse(many.as_bytes(), Path::new("/w")).unwrap();
    assert_eq!(file.patterns.len(), 1, "the line of too many stars is left out, the next kept");
}

#[test]
fn a_fifo_a_symlink_or_a_huge_file_named_as_an_ignore_file_is_not_read_whole() {
    let dir = std::env::temp_dir().join(format!("stepwise-ignore-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("rules"), "*.rs\n").unwrap();
    let fifo = std::ffi::CString::new(dir.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a plain syscall on a path of our own.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::os::unix::fs::symlink(dir.join("rules"), dir.join("link")).unwrap();
    // Past the cut, a rule that would ignore `b.py`; within it, one that ignores `a.rs`.
    let mut huge = "*.rs\n".to_string();
    huge.push_str(&"#".repeat(MAX_BYTES as usize));
    huge.push_str("\nb.py\n");
    std::fs::write(dir.join("huge"), huge).unwrap();
    // On a thread: an open that waited for the FIFO's writer would block for ever.
    let d = dir.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send((read(&d.join("fifo"), &d).is_none(), read(&d.join("link"), &d).is_none())));
    let (fifo_none, link_none) = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("blocked on the FIFO");
    assert!(fifo_none && link_none);
    let rules = vec![Arc::new(read(&dir.join("huge"), &dir).unwrap())];
    assert!(ignored(&rules, &dir.join("a.rs"), false));
    assert!(!ignored(&rules, &dir.join("b.py"), false), "read past the cut");
    // The real file, read plainly.
    let rules = vec![Arc::new(read(&dir.join("rules"), &dir).unwrap())];
    assert!(ignored(&rules, &dir.join("x/y.rs"), false));
    std::fs::remove_dir_all(&dir).unwrap();
}
