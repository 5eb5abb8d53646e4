//! The checkpoints' record on disk: one JSON line per event, appended as it happens (a round's checkpoint
//! is one short line, not a rewrite of everything), replayed on open, rewritten whole when it is compacted.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::conversation::SessionRef;
use super::state::{Mark, Pre};
use super::store::Hash;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Record {
    Checkpoint {
        id: u64,
        run_id: String,
        round: u32,
        prompt: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
        /// Milliseconds since the epoch.
        time: u64,
        session: SessionRef,
    },
    /// What `path` held at checkpoint `cp`, recorded when it first changed after it.
    Pre { cp: u64, path: String, pre: Pre },
    /// A folder created after checkpoint `cp`.
    Dir { cp: u64, path: String },
    /// What the agent's last change left at `path`.
    Agent { path: String, mark: Mark },
    /// Checkpoints from `from` on were dropped (a rewind).
    Drop { from: u64 },
    /// The user kept a hunk (review.rs: its fingerprint).
    Kept { hunk: Hash },
    /// A change of `path` after checkpoint `cp` may be the session `with`'s (their commands overlapped).
    Overlap { cp: u64, path: String, with: String },
}

pub struct Journal {
    path: PathBuf,
    file: File,
}

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

impl Journal {
    /// Opens the journal and reads what it holds; a line that cannot be read (a torn last line after a
    /// crash) is skipped with a warning.
    pub fn open(path: &Path) -> io::Result<(Journal, Vec<Record>)> {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut records = Vec::new();
        for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match serde_json::from_slice(line) {
                Ok(r) => records.push(r),
                Err(e) => tracing::warn!("checkpoint journal {}: skipped a line ({e})", path.display()),
            }
        }
        let mut file = open_append(path)?;
        if text.last().is_some_and(|&b| b != b'\n') {
            // A torn line: end it so the next record starts on a line of its own.
            file.write_all(b"\n")?;
        }
        Ok((Journal { path: path.to_path_buf(), file }, records))
    }

    pub fn append(&mut self, records: &[Record]) -> io::Result<()> {
        let mut buf = Vec::new();
        for r in records {
            serde_json::to_writer(&mut buf, r)?;
            buf.push(b'\n');
        }
        self.file.write_all(&buf)
    }

    /// Replaces the whole journal with `records` (write, then rename over).
    pub fn rewrite(&mut self, records: &[Record]) -> io::Result<()> {
        let tmp = self.path.with_extension("jsonl.tmp");
        let mut buf = Vec::new();
        for r in records {
            serde_json::to_writer(&mut buf, r)?;
            buf.push(b'\n');
        }
        std::fs::write(&tmp, &buf)?;
        std::fs::rename(&tmp, &self.path)?;
        self.file = open_append(&self.path)?;
        Ok(())
    }
}
