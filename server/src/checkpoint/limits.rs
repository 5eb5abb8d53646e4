//! The checkpoints' limits (a file's size, the store's, `STEPWISE_CHECKPOINT_MB`) and how a scan runs.

use super::loose;

/// The size limit per file (as the file tools'), and for the whole store; how a scan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_file: u64,
    pub max_total: u64,
    /// Threads a scan lists folders with; 0: one per core, up to 4.
    pub threads: usize,
    /// Whether scans use the file system's change notifications (false: every scan walks the whole
    /// workspace, as before them; the benchmark compares the two).
    pub watch: bool,
    /// Whether files are stored as copy-on-write clones where the file system can (false: always copied
    /// into the pack, as before clones; the benchmark compares the two).
    pub clones: bool,
    /// The smallest file cloned; smaller ones are packed (`loose::CLONE_MIN`, which says why).
    pub clone_min: u64,
}

pub const DEFAULT_MB: u64 = 1024;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_file: crate::host::disk::MAX_FILE,
            max_total: DEFAULT_MB << 20,
            threads: 0,
            watch: true,
            clones: true,
            clone_min: loose::CLONE_MIN,
        }
    }
}

impl Limits {
    /// `STEPWISE_CHECKPOINT_MB` (the store's limit in MiB), else the default.
    pub fn from_env(env: &crate::config::Env) -> Result<Limits, String> {
        match env.get("STEPWISE_CHECKPOINT_MB") {
            None => Ok(Limits::default()),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(mb) if mb > 0 => Ok(Limits { max_total: mb << 20, ..Limits::default() }),
                _ => Err(format!("STEPWISE_CHECKPOINT_MB must be a positive number of megabytes, not {v:?}")),
            },
        }
    }
}
