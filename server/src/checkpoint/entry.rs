//! One followed file of the workspace's copy (`Entry`, kept small: the copy holds one per file) and how a file
//! is read into the store: cloned where the file system can, else packed; over a limit, kept by its `lstat`.

use std::fs::File;

use super::files::{self, Seen};
use super::state::{now_ns, Mark, Pre, Stat};
use super::store::{Hash, Pack};
use super::Limits;

/// Kernel timestamps come from a clock that ticks every few milliseconds: a file read less than this after
/// its mtime may change again without its mtime moving.
const RACY_NS: i64 = 100_000_000;

/// One followed file of the copy. Kept small (64 bytes): a workspace of 250,000 files holds as many
/// (docs/benchmarks.md).
pub(super) struct Entry {
    /// A fingerprint of the `lstat` it was read with: the same fingerprint, the same `lstat`.
    pub(super) stat: u64,
    pub(super) kept: Kept,
    /// Its permission bits.
    pub(super) mode: u32,
    /// The walk that last saw it.
    pub(super) seen: u32,
    /// Read so soon after its last change that a change since may have kept the same `lstat`.
    pub(super) racy: bool,
}

pub(super) enum Kept {
    /// Stored whole; its mode is the `lstat`'s.
    File(Hash),
    Link(Box<str>),
    /// Not kept whole (over a limit, unreadable): rare, so boxed.
    Other(Box<(Pre, Mark)>),
}

impl Entry {
    pub(super) fn pre(&self) -> Pre {
        match &self.kept {
            Kept::File(hash) => Pre::File { hash: *hash, mode: self.mode },
            Kept::Link(target) => Pre::Link { target: target.to_string() },
            Kept::Other(b) => b.0.clone(),
        }
    }

    pub(super) fn mark(&self) -> Mark {
        match &self.kept {
            Kept::File(hash) => Mark::Hash { hash: *hash },
            Kept::Link(target) => Mark::of_link(target.as_bytes()),
            Kept::Other(b) => b.1.clone(),
        }
    }
}

/// 64 bits for the 40 of an `lstat` (a collision between two states of one file: one in 2^64).
pub(super) fn fingerprint(stat: &Stat) -> u64 {
    use std::hash::{Hash as _, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    stat.hash(&mut h);
    h.finish()
}

/// Reads one file into the store.
pub(super) fn read(root: &File, key: &str, walked: Stat, pack: &Pack, limits: &Limits, walk: u32) -> Option<Entry> {
    let read_at = now_ns();
    let entry = |stat: Stat, kept| {
        let racy = stat.mtime >= read_at - RACY_NS;
        Some(Entry { stat: fingerprint(&stat), kept, mode: stat.mode & 0o777, seen: walk, racy })
    };
    let other = |pre, mark| Kept::Other(Box::new((pre, mark)));
    // A file of `clone_min` or more is stored as a copy-on-write clone where the file system makes them
    // (`loose.rs`: what was cloned is what is hashed); otherwise it is read and copied into the pack.
    let clone = walked.size >= limits.clone_min && walked.size <= limits.max_file;
    if limits.clones && !walked.link && clone && pack.wants_clone(walked.size) {
        if let Ok(Some((file, stat))) = files::open_file(root, key) {
            if let Some(hash) = pack.put_clone(&file, stat.size, limits.max_file, limits.max_total) {
                return entry(stat, Kept::File(hash));
            }
        }
    }
    match files::look(root, key, limits.max_file) {
        Ok(Seen::Absent) | Ok(Seen::Other) => None,
        Ok(seen @ Seen::File { stat, bytes: None }) => {
            let reason = format!(
                "{} MB, over the {} MB limit for a file",
                stat.size.div_ceil(1 << 20),
                limits.max_file.div_ceil(1 << 20)
            );
            entry(stat, other(Pre::Lost { reason }, seen.mark()))
        }
        Ok(Seen::File { stat, bytes: Some(bytes) }) => {
            let hash = Hash::of(&bytes);
            let kept = match pack.put_within(hash, &bytes, limits.max_total) {
                Ok(true) => Kept::File(hash),
                Ok(false) => other(
                    Pre::Lost { reason: "the checkpoint storage limit (STEPWISE_CHECKPOINT_MB) was reached".into() },
                    Mark::Hash { hash },
                ),
                Err(e) => other(Pre::Lost { reason: format!("could not be stored: {e}") }, Mark::Hash { hash }),
            };
            entry(stat, kept)
        }
        Ok(Seen::Link { stat, target }) => match String::from_utf8(target) {
            Ok(target) => entry(stat, Kept::Link(target.into())),
            Err(e) => {
                let mark = Mark::of_link(e.as_bytes());
                entry(stat, other(Pre::Lost { reason: "its symlink target is not UTF-8".into() }, mark))
            }
        },
        Err(e) => entry(walked, other(Pre::Lost { reason: format!("could not be read: {e}") }, Mark::Other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_small() {
        // 250,000 of them stay far under the 64 MB the index may take (with their keys and the map's nodes).
        assert!(std::mem::size_of::<Entry>() <= 64, "{}", std::mem::size_of::<Entry>());
    }
}
