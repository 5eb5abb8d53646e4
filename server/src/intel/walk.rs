//! A walk of the workspace for code intelligence: its files, bounded in depth and entries, without hidden
//! names and what the workspace's ignore files leave out (`.gitignore`, `.ignore`, and `.git/info/exclude`
//! at the top; read by `ignore_files`, as the checkpoints' scan reads them). The look before the first
//! request walks it for the servers a workspace needs (`servers/look.rs`), and a command's new files are
//! found by it where no checkpoints say what changed (`untracked.rs`).
//!
//! Written here over `ignore`'s `WalkBuilder` (the crate is gone since; `ignore_files` matches the rules):
//! the builder's fixed costs were most of what a served workspace added to the start (issue 39; 0.2–0.4 ms
//! before the first model request, paired): it sized a regex pool from the cgroup's CPU quota (8 syscalls),
//! canonicalised the root and read the ignore files of every folder up to `/`, and asked the disk for five
//! names in every folder. This walk reads each folder once and builds a matcher only where a folder holds an
//! ignore file, so a workspace without a served file costs a plain read of its folders (a glance before the
//! look spared that workspace `WalkBuilder`'s costs; it is no longer needed, and an ignored `node_modules`
//! is now skipped, where the glance read it). The ignore files of the folders above the workspace are not
//! read: the walk says which languages the workspace has and which files a command made in it, and the user
//! opened that folder.

use crate::ignore_files::{self, ignored, Rules};
use std::path::{Path, PathBuf};

/// How far a walk goes: entries deeper than `depth` are not read (the workspace's top is 0), and no more
/// than `entries` (ignored ones counted).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub depth: usize,
    pub entries: usize,
}

/// The look's bounds.
pub const LOOK: Bounds = Bounds { depth: 6, entries: 5000 };

/// The files (and symlinks, not followed) under a workspace, folder by folder, depth first.
pub struct Files {
    /// Folders still to read: their path, depth and the rules above them.
    folders: Vec<(PathBuf, usize, Rules)>,
    /// Files of the folder read last, not yet given.
    ready: std::vec::IntoIter<PathBuf>,
    read: usize,
    bounds: Bounds,
}

/// The files of `root` within `bounds`.
pub fn files(root: &Path, bounds: Bounds) -> Files {
    let folders = vec![(root.to_path_buf(), 0, Rules::default())];
    Files { folders, ready: Vec::new().into_iter(), read: 0, bounds }
}

impl Iterator for Files {
    type Item = PathBuf;

    fn next(&mut self) -> Option<PathBuf> {
        loop {
            if let Some(file) = self.ready.next() {
                return Some(file);
            }
            let (folder, depth, rules) = self.folders.pop()?;
            self.read_folder(&folder, depth, rules);
        }
    }
}

impl Files {
    /// Reads `folder`: its files become `ready`, its folders join `folders`. Past the entry bound the
    /// walk ends.
    fn read_folder(&mut self, folder: &Path, depth: usize, rules: Rules) {
        let Ok(entries) = std::fs::read_dir(folder) else { return };
        let mut seen: Vec<(PathBuf, bool)> = Vec::new();
        let mut own = Vec::new();
        for e in entries.flatten() {
            self.read += 1;
            if self.read > self.bounds.entries {
                self.folders.clear();
                break;
            }
            let name = e.file_name();
            let name = name.as_encoded_bytes();
            if matches!(name, b".gitignore" | b".ignore" | b".git") {
                own.push(name.to_vec());
            }
            if name.starts_with(b".") {
                continue;
            }
            // `DirEntry::file_type` does not follow a symlink: one to a folder is given as a file.
            seen.push((e.path(), e.file_type().is_ok_and(|t| t.is_dir())));
        }
        let rules = ignore_files::with_folder(folder, rules, depth == 0, |n| own.iter().any(|o| o == n.as_bytes()));
        let mut files = Vec::new();
        for (path, is_dir) in seen {
            if ignored(&rules, &path, is_dir) {
                continue;
            }
            if !is_dir {
                files.push(path);
            } else if depth + 1 < self.bounds.depth {
                self.folders.push((path, depth + 1, rules.clone()));
            }
        }
        self.ready = files.into_iter();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(root: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            files(root, LOOK).map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    /// A fresh folder of its own for a test (removed when dropped).
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("stepwise-walk-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn ignore_files_at_every_level_hidden_names_and_the_bounds_are_honoured() {
        let dir = Scratch::new("rules");
        let root = dir.0.as_path();
        write(root, "src/main.rs", "");
        write(root, ".hidden/x.py", "");
        write(root, ".x.py", "");
        write(root, ".gitignore", "target/\n*.log\n!keep.log\n");
        write(root, "target/debug/build.rs", "");
        write(root, "a.log", "");
        write(root, "keep.log", "");
        // A nested file re-includes what the top one left out, and leaves out a file of its own.
        write(root, "web/.gitignore", "!*.log\ngen.ts\n");
        write(root, "web/b.log", "");
        write(root, "web/gen.ts", "");
        write(root, "web/app.ts", "");
        write(root, ".ignore", "vendor\n");
        write(root, "vendor/lib.go", "");
        write(root, ".git/info/exclude", "local.c\n");
        write(root, "local.c", "");
        write(root, "1/2/3/4/5/six.py", "");
        write(root, "1/2/3/4/5/6/seven.py", "");
        assert_eq!(names(root), ["1/2/3/4/5/six.py", "keep.log", "src/main.rs", "web/app.ts", "web/b.log"]);
    }

    #[test]
    fn a_symlink_is_given_not_followed_and_the_walk_ends_at_its_entry_bound() {
        let dir = Scratch::new("link");
        let root = dir.0.as_path();
        write(root, "real/a.rs", "");
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        assert_eq!(names(root), ["link", "real/a.rs"]);
        let many = Scratch::new("many");
        for i in 0..LOOK.entries + 10 {
            std::fs::write(many.0.join(format!("f{i}")), "").unwrap();
        }
        assert_eq!(files(&many.0, LOOK).count(), LOOK.entries);
    }
}
