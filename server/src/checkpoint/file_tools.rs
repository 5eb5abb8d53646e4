//! The file tools' side of checkpoints: what a file held before `write_file` / `edit_file` first changed
//! it after a checkpoint, and what the agent left.

use std::fs::File;
use std::path::Path;

use super::journal::Record;
use super::state::{self, Mark, Pre};
use super::store::Pack;
use super::{files, Checkpoints};

impl Checkpoints {
    /// Whether a write to `rel` now needs `before_write` (its first change since the newest checkpoint).
    pub fn wants(&self, rel: &Path) -> bool {
        state::key_of(rel).is_some_and(|k| self.cps.last().is_some_and(|c| !c.pre.contains_key(&k)))
    }

    /// Before `write_file` / `edit_file` changes `rel`: keeps what it holds, once per checkpoint. `current`
    /// is its text where the host sees something other than the disk (an open editor buffer).
    pub fn before_write(&mut self, rel: &Path, current: Option<&str>) {
        let Some(key) = state::key_of(rel) else { return };
        if self.cps.last().is_none_or(|c| c.pre.contains_key(&key)) {
            return;
        }
        let pre = self.pre_of(&key, current);
        let mut records = vec![];
        let id = self.cps.last().map_or(0, |c| c.id);
        // Folders the write will create.
        let parts: Vec<&str> = key.split('/').collect();
        if let Ok(root) = File::open(&self.root) {
            for n in 1..parts.len() {
                let dir = parts[..n].join("/");
                if matches!(files::look(&root, &dir, 0), Ok(files::Seen::Absent)) {
                    records.push(Record::Dir { cp: id, path: dir });
                }
            }
        }
        records.push(Record::Pre { cp: id, path: key, pre });
        self.record(records);
    }

    /// After a file tool changed `rel` to `content`.
    pub fn after_write(&mut self, rel: &Path, content: &str) {
        let Some(key) = state::key_of(rel) else { return };
        if self.cps.is_empty() {
            return;
        }
        // Kept: an editor holds the agent's text in a buffer until it saves it, which may happen inside
        // the next command (see `after_command`).
        let mark = match self.pack.put(content.as_bytes()) {
            Ok(hash) => Mark::Hash { hash },
            Err(_) => Mark::of_bytes(content.as_bytes()),
        };
        self.unflushed.insert(key.clone());
        self.record(vec![Record::Agent { path: key, mark }]);
    }

    /// What `key` holds now, as a checkpoint keeps it.
    fn pre_of(&mut self, key: &str, current: Option<&str>) -> Pre {
        if state::in_git(key) {
            return Pre::Lost { reason: "it is inside .git, which checkpoints never write".into() };
        }
        let root = match File::open(&self.root) {
            Ok(r) => r,
            Err(e) => return Pre::Lost { reason: format!("the workspace cannot be opened: {e}") },
        };
        let seen = files::look(&root, key, if current.is_some() { 0 } else { self.limits.max_file });
        let stored = |pack: &Pack, bytes: &[u8], mode: u32| match pack.put(bytes) {
            Ok(hash) => Pre::File { hash, mode },
            Err(e) => Pre::Lost { reason: format!("could not be stored: {e}") },
        };
        match (current, seen) {
            (Some(text), Ok(files::Seen::File { stat, .. })) => stored(&self.pack, text.as_bytes(), stat.mode & 0o777),
            (Some(text), _) => stored(&self.pack, text.as_bytes(), 0o644),
            (None, Ok(files::Seen::Absent)) => Pre::Absent,
            (None, Ok(files::Seen::File { stat, bytes: Some(b) })) => stored(&self.pack, &b, stat.mode & 0o777),
            (None, Ok(files::Seen::File { stat, bytes: None })) => Pre::Lost {
                reason: format!(
                    "{} MB, over the {} MB limit for a file",
                    stat.size.div_ceil(1 << 20),
                    self.limits.max_file >> 20
                ),
            },
            (None, Ok(files::Seen::Link { target, .. })) => match String::from_utf8(target) {
                Ok(target) => Pre::Link { target },
                Err(_) => Pre::Lost { reason: "its symlink target is not UTF-8".into() },
            },
            (None, Ok(files::Seen::Other)) => Pre::Lost { reason: "it is not a regular file".into() },
            (None, Err(e)) => Pre::Lost { reason: format!("could not be read: {e}") },
        }
    }
}
