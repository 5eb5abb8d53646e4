//! A glance at a workspace before the look (`look`): whether any name in it has an extension a server could
//! serve. Plain directory reads, bounded like the look's walk; where it finds none, the look (the `ignore`
//! crate's walk, which reads the ignore files of every folder up to `/` and sizes a regex pool from the
//! cgroup's CPU quota, and the `PATH` look-ups) is not needed: no server would serve a file (issue 39: in a
//! workspace without one, that was most of what code intelligence added before the first model request).
//!
//! It may only err towards looking: it sees more than the look (ignored files too; hidden names neither
//! sees), and a workspace too big to read whole within the bound gets the look.

use std::path::Path;

/// The walk's bounds: the glance sees no deeper, and no more, than the walk would.
use super::walk::{MAX_DEPTH, MAX_ENTRIES};

/// True when no name under `root` (read whole within the bounds) passes `may_serve`: then nothing would be
/// served. False when one does, or when the glance could not read everything.
pub fn none_served(root: &Path, may_serve: impl Fn(&Path) -> bool) -> bool {
    if may_serve(root) {
        return false;
    }
    let mut dirs = vec![(root.to_path_buf(), 0)];
    let mut seen = 0;
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { return false };
        for e in entries {
            let Ok(e) = e else { return false };
            seen += 1;
            if seen > MAX_ENTRIES {
                return false;
            }
            // Hidden names are not walked either (`.git` alone can hold thousands of entries).
            if e.file_name().as_encoded_bytes().starts_with(b".") {
                continue;
            }
            let path = e.path();
            if may_serve(&path) {
                return false;
            }
            // Not followed: the look's walk does not follow symlinks either.
            if depth + 1 < MAX_DEPTH && e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push((path, depth + 1));
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(p: &Path) -> bool {
        p.extension().is_some_and(|e| e == "py")
    }

    #[test]
    fn a_served_name_anywhere_within_the_bounds_calls_for_the_look_and_none_spares_it() {
        let dir = std::env::temp_dir().join(format!("stepwise-glance-{}", std::process::id()));
        let root = dir.as_path();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/b/notes.txt"), "").unwrap();
        assert!(none_served(root, py), "nothing served");
        // Deep (depth 4, within the look's 6) still counts; hidden names do not, as in the walk.
        std::fs::write(root.join("a/b/c/x.py"), "").unwrap();
        assert!(!none_served(root, py));
        std::fs::remove_file(root.join("a/b/c/x.py")).unwrap();
        std::fs::create_dir_all(root.join(".venv")).unwrap();
        std::fs::write(root.join(".venv/x.py"), "").unwrap();
        std::fs::write(root.join("a/.y.py"), "").unwrap();
        assert!(none_served(root, py));
        // Beyond the look's depth the look would not see it either.
        std::fs::create_dir_all(root.join("1/2/3/4/5/6")).unwrap();
        std::fs::write(root.join("1/2/3/4/5/6/deep.py"), "").unwrap();
        assert!(none_served(root, py));
        // Too many entries to read within the bound: the look decides.
        for i in 0..MAX_ENTRIES {
            std::fs::write(root.join(format!("f{i}")), "").unwrap();
        }
        assert!(!none_served(root, py));
        std::fs::remove_dir_all(root).unwrap();
    }
}
