//! One workspace folder as the editor sees it: its URI, its settings, and its sessions (issue 47): the
//! folder's own (`main`, what every command without `"session"` is about) and any number beside it,
//! each a `Session` with its own conversation, plan, checkpoints, review and background tasks.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use super::session::Session;
use crate::config::Overrides;
use crate::locks;
use crate::sessions::index::{Index, MAIN};

pub struct Folder {
    /// The folder's URI exactly as the client sent it; every notification names it so.
    pub uri: String,
    /// Canonical path.
    pub root: PathBuf,
    /// The `stepwise` section of `workspace/configuration` for this folder; its sessions share it.
    pub settings: Arc<RwLock<Overrides>>,
    /// Its open sessions, the folder's own first.
    sessions: RwLock<Vec<Arc<Session>>>,
    /// Its saved sessions beyond its own (none without a state directory).
    pub index: Option<Index>,
}

impl Folder {
    pub fn new(uri: String, root: PathBuf, index: Option<Index>) -> Folder {
        Folder { uri, root, settings: Arc::default(), sessions: RwLock::default(), index }
    }

    /// What a session of this folder keeps of it.
    pub fn place(&self) -> super::session::Place {
        super::session::Place { uri: self.uri.clone(), root: self.root.clone(), settings: self.settings.clone() }
    }

    /// The folder's own session.
    pub fn main(&self) -> Option<Arc<Session>> {
        locks::read(&self.sessions).first().cloned()
    }

    /// An open session by id (`main`: the folder's own).
    pub fn session(&self, id: &str) -> Option<Arc<Session>> {
        locks::read(&self.sessions).iter().find(|s| s.id == id).cloned()
    }

    /// Every open session, the folder's own first.
    pub fn sessions(&self) -> Vec<Arc<Session>> {
        locks::read(&self.sessions).clone()
    }

    /// Sessions whose workspace is the folder itself (not a worktree): the ones an editor's document in
    /// the folder concerns.
    pub fn in_place(&self) -> Vec<Arc<Session>> {
        locks::read(&self.sessions).iter().filter(|s| s.worktree.is_none()).cloned().collect()
    }

    pub fn add(&self, session: Arc<Session>) {
        let mut all = locks::write(&self.sessions);
        all.retain(|s| s.id != session.id);
        if session.id == MAIN {
            all.insert(0, session);
        } else {
            all.push(session);
        }
    }

    /// Takes an open session out (the folder's own stays).
    pub fn take(&self, id: &str) -> Option<Arc<Session>> {
        let mut all = locks::write(&self.sessions);
        let at = all.iter().position(|s| s.id == id && s.id != MAIN)?;
        Some(all.remove(at))
    }
}
