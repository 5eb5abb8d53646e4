//! A workspace's ignore files (`.gitignore`, `.ignore`, `.git/info/exclude`), read for the walks that honour
//! them (the checkpoints' scan, code intelligence's look), and what they leave out.
//!
//! The files are read here (`text_file`) rather than by `ignore`'s `Gitignore::new`, because the workspace
//! is not trusted: a FIFO named `.gitignore` would block that open for ever (the scan, and with it every
//! shell command's checkpoint, would hang), and a huge file would be read whole. `ignore`'s matcher still
//! decides.

use std::path::Path;
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

/// The ignore rules in force inside a folder, outermost first; folders without rules of their own share
/// their parent's.
pub type Rules = Arc<Vec<Arc<Gitignore>>>;

/// The most of an ignore file read (a workspace's are a few KB; a larger one is cut there).
const MAX_BYTES: u64 = 1 << 20;

/// The rules of the ignore file `file`, for paths under `base` (its folder; the workspace's top for
/// `.git/info/exclude`). `None` when it is not a regular file (symlinks are not followed, as git does not
/// from 2.32 on), cannot be read, or holds no rule. A bad line is left out and the others kept, as git does.
pub fn read(file: &Path, base: &Path) -> Option<Gitignore> {
    let bytes = crate::text_file::read(file, MAX_BYTES, false).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut builder = GitignoreBuilder::new(base);
    for line in text.trim_start_matches('\u{feff}').lines() {
        let _ = builder.add_line(Some(file.to_path_buf()), line);
    }
    builder.build().ok().filter(|rules| !rules.is_empty())
}

/// `rules` with those of `folder`'s own ignore files, `has(name)` telling which names it holds: its
/// `.git/info/exclude` first where `exclude` (the workspace's top), then `.gitignore`, then `.ignore` (the
/// innermost rule decides, so `.ignore` wins, as in ripgrep). Folders without any share their parent's.
pub fn with_folder(folder: &Path, mut rules: Rules, exclude: bool, has: impl Fn(&str) -> bool) -> Rules {
    let exclude = (exclude && has(".git")).then(|| folder.join(".git/info/exclude"));
    let own = [".gitignore", ".ignore"].into_iter().filter(|n| has(n)).map(|n| folder.join(n));
    for file in exclude.into_iter().chain(own) {
        if let Some(here) = read(&file, folder) {
            Arc::make_mut(&mut rules).push(Arc::new(here));
        }
    }
    rules
}

/// Whether the innermost rule that speaks of `path` ignores it (a `!` line re-includes).
pub fn ignored(rules: &[Arc<Gitignore>], path: &Path, is_dir: bool) -> bool {
    for r in rules.iter().rev() {
        match r.matched(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
