//! Sessions side by side (issue 47): a folder holds any number of sessions at once, each with its own
//! conversation, plan, checkpoints, review and background tasks (each a `Workspace`), their runs going on
//! at the same time. This room holds what makes that safe and what a session beyond the folder's own needs:
//! - `siblings.rs`: the sessions of one folder in this process tell each other what they wrote and when
//!   their commands ran, so no session's work silently becomes another's;
//! - `seen.rs`: what a session's file tools last saw, so `write_file` refuses a file changed since;
//! - `worktree.rs`, `apply.rs`: a session in a git worktree (or a copy) of its own, and its changes
//!   brought into the folder;
//! - `index.rs`: a folder's saved sessions, so they survive a restart and can be reopened.

pub mod apply;
pub mod index;
pub mod seen;
pub mod siblings;
pub mod worktree;

pub use seen::Seen;
pub use siblings::{Membership, Sibling};

/// What a run's host tells the session (`workspace::Tracked` holds it): its memory of what its file
/// tools saw, and its siblings in the folder.
#[derive(Clone, Copy)]
pub struct Hooks<'a> {
    pub seen: &'a Seen,
    pub siblings: Option<&'a Membership>,
}

/// A new session's id: short, unique in a folder across restarts (time and a counter), and safe in a
/// branch name (`stepwise/<id>`) and a file name.
pub fn new_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("s{:x}{:x}{seq:x}", now.as_secs(), now.subsec_micros() ^ std::process::id())
}
