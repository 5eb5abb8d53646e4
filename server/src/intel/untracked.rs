//! Where no checkpoints say what a shell command changed (`stepwise run`): the files a server serves that
//! the command made. The shell reports no paths, and a command may write anywhere under the workspace
//! (its cwd is the root), so the look is a walk of the workspace kept cheap: ignore files honoured (no
//! `target/`, `node_modules/`), at most 4 levels and 2,000 entries, and only names a server serves whose
//! modification time is not older than the command's start. Deeper or later files are still read when
//! the model asks about them (the `diagnostics` tool reads from disk).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::walk::{self, Bounds};

const BOUNDS: Bounds = Bounds { depth: 4, entries: 2000 };
/// A file's modification time comes from the kernel's coarse clock, which may lag the start taken here
/// by a tick: a file made just after the start can look a little older.
const SLACK: std::time::Duration = std::time::Duration::from_millis(50);

/// Files under `root` that `covers` says a server serves, modified at or after `started`, each with whether
/// it was born then (its birth time says so; `false` where the file system does not keep one).
pub fn made_since(root: &Path, started: SystemTime, covers: impl Fn(&Path) -> bool) -> Vec<(PathBuf, bool)> {
    let started = started.checked_sub(SLACK).unwrap_or(started);
    walk::files(root, BOUNDS)
        .filter(|p| covers(p))
        .filter_map(|p| {
            let meta = std::fs::symlink_metadata(&p).ok().filter(|m| m.is_file())?;
            if meta.modified().ok()? < started {
                return None;
            }
            let born = meta.created().is_ok_and(|b| b >= started);
            Some((p, born))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_served_files_made_after_the_start_are_found() {
        let dir = std::env::temp_dir().join(format!("stepwise-untracked-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("old.py"), "x\n").unwrap();
        let an_hour_ago = SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options().write(true).open(dir.join("old.py")).unwrap().set_modified(an_hour_ago).unwrap();
        let started = SystemTime::now();
        std::fs::write(dir.join("a/b/new.py"), "y\n").unwrap();
        std::fs::write(dir.join("a/new.md"), "z\n").unwrap();
        let found = made_since(&dir, started, |p| p.extension().is_some_and(|e| e == "py"));
        std::fs::remove_dir_all(&dir).unwrap();
        let paths: Vec<_> = found.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(paths, vec![dir.join("a/b/new.py")]);
    }
}
