//! What the checkpoints follow against what git ignores: a repository with ignore files of every rule form
//! (nested, negated, `**`, classes, escapes, folders only) and many paths, files and folders, asked of
//! `git check-ignore` and of stepwise (the checkpoints' walk, `checkpoint::followed`, and the ignore files'
//! answer for each path, folders included); every answer must agree.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use stepwise::ignore_files::{self, ignored, Rules};
use stepwise_tests::TempDir;

const TOP: &str = r"# a comment, then a blank line

*.log
!keep.log
/only-top.txt
build/
**/gen/*.rs
docs/**/draft*
cache/**
!cache/keep
\#hash
\!bang
 lead
[abc].tmp
[!x-z]?.bak
[[:digit:]][[:upper:]].dat
*.o
!important.o
a/**/deep.txt
nested/inner/*.txt
nested/sub2/
[]]bracket
**/foo**bar
*.[ch]
out*/
Case.TXT
x\*y
back\\slash
ends\
/dironly/
q?.md
[unclosed
[[:nope:]]x
ignored-dir
[[:ab]x
*/t.txt
/sub/deeper/inner/x.*
.env.*
!.env.example
*~
";

/// The lines of `TOP` that end in spaces (kept apart: an editor could trim them from the text above).
const TRAILING: &str = "trail\\ \nspaces   \n";

const SUB: &str = "!*.log\n*.tmp\n/local\ndeep/**/x.txt\n!build/\nm.*\n!m.c\n";
const DEEPER: &str = "*\n!*.keep\n!*/\n";

/// The folders, each given every file of `FILES`.
const DIRS: &str = "sub sub/deeper sub/deeper/inner sub/deep sub/deep/e sub/deep/e/f build sub/build docs \
    docs/a docs/a/b gen x/gen src/gen cache a a/q a/q/r nested nested/inner nested/sub2 out1 dironly z/dironly \
    ignored-dir Case";

/// The files made in every folder (names hold spaces: `|` between them).
const FILES: &str = "a.log|keep.log|only-top.txt|x.rs|draft1.md|keep|#hash|hash|!bang|bang|trail |trail|\
    spaces| lead|lead|a.tmp|d.tmp|ab.bak|xa.bak|1A.dat|1a.dat|m.o|important.o|deep.txt|t.txt|]bracket|foozbar|\
    foo/bar|m.c|m.h|m.cc|Case.TXT|case.txt|x*y|xay|back\\slash|ends\\|ends|q1.md|q12.md|local|x.txt|build|\
    out2|a.keep|[unclosed|plain.txt|[x|:x|bx|cx|.env.local|.env.example|notes~";

/// Every path beneath `dir` (not `.git`), relative to `top`, with whether it is a folder.
fn paths(top: &Path, dir: &Path, out: &mut Vec<(String, bool)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_name() == ".git" {
            continue;
        }
        let rel = e.path().strip_prefix(top).unwrap().to_str().unwrap().to_string();
        let is_dir = e.file_type().unwrap().is_dir();
        out.push((rel, is_dir));
        if is_dir {
            paths(top, &e.path(), out);
        }
    }
}

/// Which of `paths` (relative to `top`) git ignores, its own configuration only (no user or system file).
fn git_ignores(top: &Path, paths: &[&str], verbose: bool) -> String {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(top)
        .args(["-c", "core.ignorecase=false", "check-ignore", "--no-index", "-z", "--stdin"])
        .args(verbose.then_some(["-v", "-n"]).into_iter().flatten())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", top)
        .env("XDG_CONFIG_HOME", top)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Each path after `./`: a leading `:` would start pathspec magic.
    let input: Vec<u8> = paths.iter().flat_map(|p| b"./".iter().copied().chain(p.bytes()).chain([0])).collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    // 0: some are ignored, 1: none.
    assert!(matches!(out.status.code(), Some(0 | 1)), "git check-ignore: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// What stepwise's ignore files say of `rel` beneath `top`, read as the walks read them: each folder's
/// rules added on the way down, an ignored folder hiding all beneath it.
fn stepwise_ignores(top: &Path, rel: &str, is_dir: bool) -> bool {
    let mut rules = Rules::default();
    let mut dir = top.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let here = dir.clone();
        rules = ignore_files::with_folder(&here, rules, false, |n| here.join(n).exists());
        dir = dir.join(part);
        let last = i + 1 == parts.len();
        if ignored(&rules, &dir, !last || is_dir) {
            return true;
        }
    }
    false
}

#[test]
fn every_path_is_ignored_by_stepwise_exactly_when_git_ignores_it() {
    let repo = TempDir::new("cp-ignore-git");
    let top = repo.path();
    let init = Command::new("git").arg("-C").arg(top).args(["init", "-q"]).env("GIT_CONFIG_NOSYSTEM", "1").output();
    assert!(init.unwrap().status.success());
    repo.write(".gitignore", &format!("{TOP}{TRAILING}"));
    repo.write("sub/.gitignore", SUB);
    repo.write("sub/deeper/.gitignore", DEEPER);
    repo.write("ignored-dir/.gitignore", "!x.txt\n");
    for dir in std::iter::once("").chain(DIRS.split_whitespace()) {
        for name in FILES.split('|') {
            let rel = if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") };
            if !DIRS.split_whitespace().any(|d| d == rel) {
                repo.write(&rel, "x\n");
            }
        }
    }
    // A symlink to a folder is no folder (a folders-only pattern leaves it), for git as for the walk.
    std::os::unix::fs::symlink(top.join("out1"), top.join("out3")).unwrap();
    std::os::unix::fs::symlink(top.join("build"), top.join("sub/build-link")).unwrap();

    let mut all = Vec::new();
    paths(top, top, &mut all);
    let names: Vec<&str> = all.iter().map(|(p, _)| p.as_str()).collect();
    let git: BTreeSet<String> =
        git_ignores(top, &names, false).split('\0').filter_map(|p| p.strip_prefix("./")).map(String::from).collect();
    // Git answered, and the repository holds both kinds in number: the comparison below means something.
    assert!(git.contains("a.log") && git.contains("sub/deeper/x.txt") && git.contains("build/keep"), "{git:?}");
    assert!(!git.contains("sub/a.log") && !git.contains("sub/build/x.rs") && !git.contains("cache/keep"));
    let (ig, kept) = (git.len(), all.len() - git.len());
    assert!(ig > 400 && kept > 400, "{ig} ignored, {kept} not");

    let wrong = |mut bad: Vec<&str>, what: &str| {
        bad.sort();
        if !bad.is_empty() {
            panic!("{what} for {} paths; git says:\n{}", bad.len(), git_ignores(top, &bad, true).replace('\0', " "));
        }
    };
    // The ignore files' answer for every path, folders included.
    let bad: Vec<&str> = all
        .iter()
        .filter(|(p, is_dir)| stepwise_ignores(top, p, *is_dir) != git.contains(p))
        .map(|(p, _)| p.as_str())
        .collect();
    wrong(bad, "stepwise's ignore files disagree with git");

    // The checkpoints' own walk: it follows exactly the files (and symlinks) git does not ignore, from the
    // repository's top and from a folder inside it (the rules of the folders above then count too).
    for ws in ["", "sub"] {
        let root = if ws.is_empty() { top.to_path_buf() } else { top.join(ws) };
        let followed: BTreeSet<String> = stepwise::checkpoint::followed(&root)
            .into_iter()
            .map(|(k, _)| if ws.is_empty() { k } else { format!("{ws}/{k}") })
            .collect();
        let under = |p: &str| ws.is_empty() || p.starts_with(&format!("{ws}/"));
        let bad: Vec<&str> = all
            .iter()
            .filter(|(p, is_dir)| !is_dir && under(p) && followed.contains(p) == git.contains(p))
            .map(|(p, _)| p.as_str())
            .collect();
        wrong(bad, &format!("the checkpoints' walk from {ws:?} disagrees with git"));
        assert!(followed.iter().all(|p| all.iter().any(|(q, d)| q == p && !d)), "only files are followed");
    }
}
