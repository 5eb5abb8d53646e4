//! Checkpoints and rewind: undo any round of the agent, its shell commands included, without git.
//!
//! A checkpoint is taken before every round (`take`). It holds the conversation and plan as they were
//! (`conversation.rs`: each message stored once), and collects, for every path changed after it, what the
//! path held at the checkpoint (`Pre`). Changes come from two places:
//! - the file tools, which say so (`before_write` keeps the file's content before the first change after
//!   the checkpoint, `after_write` what the agent left);
//! - shell commands, found by scanning (`before_command` / `after_command` in `commands.rs`, `scan.rs`): a shadow copy of the
//!   workspace lives in the object store, made in the background from when the workspace opens (`copy.rs`);
//!   the file system's change notifications (`watch/`) name the paths to look at, and `lstat` tells which
//!   of them to read again. `.gitignore` is honoured (`ignore_files`: git's rules; `.ignore` too, as
//!   ripgrep), `.git` is never read nor written, a file over the size limit is followed by its size and
//!   mtime and reported as not restorable if a command changes it.
//!
//! Why this mechanism (numbers in docs/benchmarks.md, `cargo bench -p stepwise-tests --bench checkpoints`): a round without a
//! command costs only the conversation's new messages (no walk at all); a command costs what it changed: the paths
//! the notifications named, each `lstat`ed and read if it differs. Notifications alone cannot keep what a file held
//! before it changed, hence the copy; the copy alone needs a walk of the whole workspace per scan (what happens
//! whenever the notifications cannot be trusted: lost events, a folder not watched, a network file system). A
//! git-style commit of the tree per round (Cline) hashes or at least walks everything every round, and touching
//! `.git` is what corrupted users' repositories; hard-link snapshots lose the old content when a command writes a
//! file in place. The price is the copy, which stores every followed file once (the store is content-addressed:
//! the same content is never stored twice), and disk use about the size of the followed files.
//!
//! Everything lives in the state directory: `objects.pack` (the store) with `objects/` (its clones), and
//! `journal.jsonl` (one line per checkpoint and change, appended). A rewind drops the checkpoints from the one rewound to on (no redo: the
//! editor's own undo reverts a rewind of open documents); a rewind of the conversation only keeps them, as
//! the files they describe are still on disk. The limit (`STEPWISE_CHECKPOINT_MB`) drops the oldest
//! checkpoints, and the first scan stops storing (and reports) files once the store is full.
//!
//! `Checkpoints` does blocking file I/O; callers hold it behind a lock and call it off the async runtime
//! (or accept a few milliseconds).

mod clone;
mod commands;
mod conversation;
mod copy;
mod entry;
mod file_tools;
mod files;
mod handover;
mod hash;
mod info;
mod journal;
mod limits;
mod loose;
mod origins;
mod record;
mod review;
mod rewind;
mod scan;
mod state;
mod store;
pub mod text;
mod walk;
mod watch;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::locks;

pub use clone::{clone_into, refused as clone_refused};
pub use commands::{Held, UserSaves};
pub use hash::Hash;
pub use info::{Info, Meta};
pub use limits::{Limits, DEFAULT_MB};
pub use review::{Base, Bases, ChangeStatus, FileChanges, Hunk, Scope, Undo};
pub use rewind::{apply_on_disk, Action, Applied, FileRestore, Restore, RewindPlan, Rewound};
pub use scan::ScanKind;
pub use state::key_of;

use conversation::SessionRef;
use journal::Journal;
use scan::Scanner;
use state::{Mark, Pre};
use store::Pack;

/// A session stored, waiting to become a checkpoint.
#[derive(Debug, Clone)]
pub struct Prepared {
    rest: Hash,
    list: Vec<Hash>,
}

struct Cp {
    id: u64,
    run_id: String,
    round: u32,
    prompt: String,
    step: Option<String>,
    time: u64,
    session: SessionRef,
    pre: BTreeMap<String, Pre>,
    dirs: BTreeSet<String>,
    /// Paths whose change after this checkpoint may be another session's, with those sessions' names.
    shared: BTreeMap<String, BTreeSet<String>>,
}

pub struct Checkpoints {
    root: PathBuf,
    dir: PathBuf,
    /// A temporary directory (no state directory, or another process holds it): removed on drop.
    temporary: bool,
    /// The state directory another process held when this store opened (`handover.rs`).
    held_elsewhere: Option<PathBuf>,
    _lock: File,
    limits: Limits,
    pack: Arc<Pack>,
    journal: Journal,
    cps: Vec<Cp>,
    next_id: u64,
    /// What the agent's last change left at each path.
    marks: HashMap<String, Mark>,
    /// Fingerprints of the hunks the user kept (review.rs).
    kept: std::collections::HashSet<Hash>,
    /// The newest checkpoint's full message list, to store the next one as a difference.
    last_list: Option<(u64, Vec<Hash>)>,
    /// The conversation as last stored, so the next store encodes and hashes only what is new.
    stored: conversation::Stored,
    /// The workspace's copy, shared with the thread that makes it in the background.
    scan: Arc<Mutex<Scanner>>,
    copy: Option<copy::Background>,
    /// A command is running: `before_command` scanned.
    armed: bool,
    /// Shell commands of this session running now (child agents run theirs at the same time): the scan
    /// stays armed until the last one ends.
    commands: u32,
    /// The store's size after the last compaction.
    compacted_at: u64,
    /// Paths a file tool wrote whose text the disk may not hold yet (an editor's unsaved buffer).
    unflushed: std::collections::HashSet<String>,
    /// Paths the user saved in the editor while a command ran (the sidecar tells, without taking the
    /// store's lock): their change, not the command's.
    user_saved: UserSaves,
}

/// Takes the directory's lock, or says it is held.
fn lock(dir: &Path) -> std::io::Result<File> {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(dir)?;
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(dir.join("lock"))?;
    // A child forked elsewhere in this process holds a copy of a released lock's descriptor until it
    // execs (the descriptor is close-on-exec): give such a copy a moment to go.
    for _ in 0..50 {
        // SAFETY: a valid fd.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(file);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    Err(std::io::Error::new(std::io::ErrorKind::WouldBlock, "another stepwise process uses it"))
}

fn temp_dir() -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("stepwise-checkpoints-{}-{n}", std::process::id()))
}

impl Checkpoints {
    /// The checkpoints of the workspace `root`, kept in `state_dir` (created; reopened after a restart).
    /// Without one, or when another process holds it, they live in a temporary directory for this process.
    pub fn open(state_dir: Option<&Path>, root: &Path, limits: Limits) -> std::io::Result<Checkpoints> {
        let root = std::fs::canonicalize(root)?;
        match state_dir.map(|d| (d, lock(d))) {
            Some((d, Ok(l))) => Self::open_in(d.to_path_buf(), false, l, root, limits),
            other => {
                let mut held = None;
                if let Some((d, Err(e))) = other {
                    tracing::warn!("checkpoints kept for this process only: {} is not usable ({e})", d.display());
                    // Another process's: this one takes the store over when that one lets go (handover.rs).
                    held = (e.kind() == std::io::ErrorKind::WouldBlock).then(|| d.to_path_buf());
                }
                let d = temp_dir();
                let l = lock(&d)?;
                let mut cp = Self::open_in(d, true, l, root, limits)?;
                cp.held_elsewhere = held;
                Ok(cp)
            }
        }
    }

    /// The store in `dir` (of the canonical `root`), whose lock `lock` is; a `temporary` one is removed on drop.
    fn open_in(
        dir: PathBuf,
        temporary: bool,
        lock: File,
        root: PathBuf,
        limits: Limits,
    ) -> std::io::Result<Checkpoints> {
        let pack = Arc::new(Pack::open(&dir.join("objects.pack"))?);
        let (journal, records) = Journal::open(&dir.join("journal.jsonl"))?;
        let skip = std::fs::canonicalize(&dir).ok().filter(|d| d.starts_with(&root));
        let mut cp = Checkpoints {
            scan: Arc::new(Mutex::new(Scanner::new(root.clone(), dir.clone(), skip))),
            copy: None,
            root,
            dir,
            temporary,
            held_elsewhere: None,
            _lock: lock,
            limits,
            pack,
            journal,
            cps: Vec::new(),
            next_id: 1,
            marks: HashMap::new(),
            kept: Default::default(),
            last_list: None,
            stored: Default::default(),
            armed: false,
            commands: 0,
            compacted_at: 0,
            unflushed: Default::default(),
            user_saved: Default::default(),
        };
        cp.replay(records);
        Ok(cp)
    }

    /// Starts making the workspace's copy in the background (at open: the first command then finds it
    /// made). A command that comes before it is complete finishes it (`copy.rs`).
    pub fn copy_in_background(&mut self) {
        if self.copy.is_some() || locks::lock(&self.scan).started() {
            return;
        }
        match copy::spawn(self.scan.clone(), self.pack.clone(), self.limits) {
            Ok(c) => self.copy = Some(c),
            Err(e) => tracing::warn!("checkpoints: no background copy (the first command makes it): {e}"),
        }
    }

    /// Waits until the background copy ends (complete, unless a command took it over).
    pub fn wait_for_copy(&mut self) {
        if let Some(c) = self.copy.as_mut() {
            c.join();
        }
    }

    /// Whether the workspace's copy is complete.
    pub fn copy_ready(&self) -> bool {
        locks::lock(&self.scan).ready()
    }

    /// How the last scan found what changed (`None` before the first).
    pub fn last_scan(&self) -> Option<ScanKind> {
        locks::lock(&self.scan).last()
    }

    /// Whether the store keeps files as copy-on-write clones (`Some(false)`: the file system refused, they
    /// are copied), or `None` before a file big enough to try.
    pub fn clones(&self) -> Option<bool> {
        self.pack.cloning()
    }

    /// Folders the change notifications watch now.
    pub fn watched_dirs(&self) -> usize {
        locks::lock(&self.scan).watched()
    }

    /// The handle the sidecar notes the user's saves in.
    pub fn user_saves(&self) -> UserSaves {
        self.user_saved.clone()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Bytes the checkpoints take on disk.
    pub fn disk_usage(&self) -> u64 {
        let journal = std::fs::metadata(self.dir.join("journal.jsonl")).map_or(0, |m| m.len());
        self.pack.size() + journal
    }

    /// A checkpoint before a round, holding `session` (for a run's first round: as it was before the run's
    /// prompt). Its id, or why it could not be kept.
    pub fn take(&mut self, meta: Meta, session: &crate::session::Session) -> Result<String, String> {
        let prepared = self.prepare(session)?;
        self.take_prepared(meta, prepared)
    }

    /// Stores `session`'s new messages ahead of `take_prepared` (the loop has the conversation in a
    /// consistent state before it knows whether another round follows).
    pub fn prepare(&mut self, session: &crate::session::Session) -> Result<Prepared, String> {
        let (rest, list) = conversation::store(&self.pack, &mut self.stored, session)?;
        Ok(Prepared { rest, list })
    }

    /// The same from the session's parts, which are not copied.
    pub fn prepare_parts(
        &mut self,
        messages: &[crate::llm::Message],
        plan: &crate::plan::Plan,
        revision: u64,
    ) -> Result<Prepared, String> {
        let (rest, list) = conversation::store_parts(&self.pack, &mut self.stored, messages, plan, revision)?;
        Ok(Prepared { rest, list })
    }

    /// The checkpoint of a prepared session.
    pub fn take_prepared(&mut self, meta: Meta, prepared: Prepared) -> Result<String, String> {
        let Prepared { rest, list } = prepared;
        let id = self.next_id;
        let newest = self.cps.last().map(|c| c.id);
        let prev = self.last_list.as_ref().filter(|(pid, _)| Some(*pid) == newest).map(|(i, l)| (*i, l.as_slice()));
        let session = conversation::delta(rest, &list, prev);
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let cp = Cp {
            id,
            run_id: meta.run_id,
            round: meta.round,
            prompt: meta.prompt,
            step: meta.step,
            time,
            session,
            pre: BTreeMap::new(),
            dirs: BTreeSet::new(),
            shared: BTreeMap::new(),
        };
        self.journal.append(&[record::checkpoint(&cp)]).map_err(|e| format!("cannot save a checkpoint: {e}"))?;
        self.next_id += 1;
        self.cps.push(cp);
        self.last_list = Some((id, list));
        self.enforce_limit();
        Ok(id.to_string())
    }

    /// Drops every checkpoint (a new conversation); the workspace's copy stays.
    pub fn clear(&mut self) {
        self.cps.clear();
        self.marks.clear();
        self.kept.clear();
        self.last_list = None;
        self.compact();
    }
}

/// The files checkpoints follow beneath `root` (every `.git` left out, the ignore files honoured, symlinks
/// not followed), as `/`-separated keys: what a copy of the folder holds (a session's worktree copy).
pub fn followed(root: &Path) -> Vec<(String, bool)> {
    let start = walk::Job { dir: root.to_path_buf(), key: String::new(), rules: walk::parent_rules(root) };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    walk::walk(start, None, threads, &|_, _| {}).files.into_iter().map(|(k, stat)| (k, stat.link)).collect()
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        // The copy's thread ends first (it writes in the directory).
        self.copy.take();
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
