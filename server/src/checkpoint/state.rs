//! What a path held: `Pre`, enough to put it back; `Mark`, enough to tell whether it changed since.

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use super::store::Hash;

/// A path's state at a checkpoint, as restorable as it was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pre {
    Absent,
    File {
        hash: Hash,
        mode: u32,
    },
    Link {
        target: String,
    },
    /// Not kept (over the size limit, the storage limit, unreadable, ...): reported at a rewind.
    Lost {
        reason: String,
    },
}

/// A fingerprint of what a path holds: the agent's last change to it, compared with what it holds at a
/// rewind (a difference is the user's change, a conflict).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mark {
    Absent,
    Hash {
        hash: Hash,
    },
    /// A file over the size limit is not read: its size and modification time stand for its content.
    Stat {
        size: u64,
        mtime: i64,
    },
    /// A directory or a special file where a file was.
    Other,
}

impl Mark {
    pub fn of_bytes(bytes: &[u8]) -> Mark {
        Mark::Hash { hash: Hash::of(bytes) }
    }

    pub fn of_link(target: &[u8]) -> Mark {
        let mut b = b"symlink\0".to_vec();
        b.extend_from_slice(target);
        Mark::of_bytes(&b)
    }
}

/// What `lstat` says of a file, to tell without reading it that it did not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stat {
    pub link: bool,
    pub size: u64,
    /// Nanoseconds since the epoch.
    pub mtime: i64,
    pub ctime: i64,
    pub ino: u64,
    pub mode: u32,
}

impl Stat {
    pub fn of_meta(m: &std::fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        Stat {
            link: m.file_type().is_symlink(),
            size: m.size(),
            mtime: m.mtime().saturating_mul(1_000_000_000).saturating_add(m.mtime_nsec()),
            ctime: m.ctime().saturating_mul(1_000_000_000).saturating_add(m.ctime_nsec()),
            ino: m.ino(),
            mode: m.mode(),
        }
    }
}

/// `.git` (the user's repository, or a submodule's) is never read nor written by checkpoints.
pub fn in_git(key: &str) -> bool {
    key.split('/').any(|c| c == ".git")
}

/// The key of a relative path: `/`-separated plain components. `None` for anything else (`..`, absolute,
/// not UTF-8), which no checkpoint records or restores.
pub fn key_of(rel: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => parts.push(n.to_str()?),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Nanoseconds since the epoch, now.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_plain_relative_paths() {
        assert_eq!(key_of(Path::new("a/./b.txt")).as_deref(), Some("a/b.txt"));
        for bad in ["../x", "/etc/passwd", "a/../b", ""] {
            assert_eq!(key_of(Path::new(bad)), None, "{bad}");
        }
        assert!(in_git(".git/config") && in_git("sub/.git/HEAD") && !in_git("a.git/x"));
    }
}
