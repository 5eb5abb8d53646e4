//! What one sandboxed command may do: the policy `sandbox.rs` makes and the guard hands to `landlock.rs`
//! (Linux) or `seatbelt.rs` (macOS) to impose. Data only, so those two depend on it and not on the sandbox.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::approval::protected;

/// What one command may do, made just before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The workspace (canonical).
    pub root: PathBuf,
    /// The session's private temporary folder (`TMPDIR`).
    pub tmp: PathBuf,
    /// `workspace-write` (else only `tmp` is writable).
    pub write: bool,
    pub network: bool,
}

/// A writable top-level entry of the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: PathBuf,
    pub dir: bool,
}

impl Policy {
    /// The workspace's top-level entries a command may write: all but the protected names, and never a
    /// symlink (the rule would grant where it points). Read anew per command, so entries made since count.
    pub fn writable_entries(&self) -> Vec<Entry> {
        if !self.write {
            return Vec::new();
        }
        let Ok(dir) = std::fs::read_dir(&self.root) else { return Vec::new() };
        let mut out: Vec<Entry> = dir
            .flatten()
            .filter(|e| protected(Path::new(&e.file_name())).is_none())
            .filter_map(|e| {
                let t = e.file_type().ok()?;
                (!t.is_symlink()).then(|| Entry { path: e.path(), dir: t.is_dir() })
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// Variables the command gets: its temporary folder.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        ["TMPDIR", "TMP", "TEMP"].iter().map(|k| (OsString::from(k), self.tmp.clone().into_os_string())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_level_is_granted_per_entry_without_protected_names_or_symlinks() {
        let dir = std::env::temp_dir().join(format!("stepwise-entries-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["src", ".git", ".vscode", "target"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        for f in ["Cargo.toml", ".env", ".env.local", "AGENTS.md", ".mcp.json", ".gitignore"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        std::os::unix::fs::symlink("/", dir.join("out")).unwrap();
        let p = Policy { root: dir.clone(), tmp: dir.join("tmp"), write: true, network: false };
        let names: Vec<(String, bool)> = p
            .writable_entries()
            .into_iter()
            .map(|e| (e.path.file_name().unwrap().to_string_lossy().into_owned(), e.dir))
            .collect();
        let want = [(".gitignore", false), ("Cargo.toml", false), ("src", true), ("target", true)];
        assert_eq!(names, want.map(|(n, d)| (n.to_string(), d)));
        assert!(Policy { write: false, ..p }.writable_entries().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
