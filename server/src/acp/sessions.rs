//! The agent's sessions: each a folder, a conversation and plan, the run in flight, and what the user
//! allowed for the rest of the session. Saved through `store` (one file per session id) as they change.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::{Error, ErrorCode};

use crate::locks::lock;
use crate::plan::Mode;
use crate::store;
use crate::workspace::{Unopened, Unreadable, Workspace};

pub(crate) struct AcpSession {
    pub id: String,
    /// The engine's workspace: the conversation, plan, run and approvals of this session.
    pub ws: Arc<Workspace>,
    /// The MCP servers the client passed (acp/mcp.rs), for the workspace to start at the first prompt.
    pub mcp: super::mcp::SessionMcp,
    /// `default` or `plan` (acp/modes.rs); starts as `STEPWISE_PLAN_FIRST` says.
    mode: Mutex<Mode>,
    /// Its background tasks are shown to the client (acp/background.rs) by a watcher already.
    pub background_shown: std::sync::atomic::AtomicBool,
    /// What the client was last shown of each of its background tasks (by id).
    pub background_seen: Mutex<HashMap<String, Shown>>,
    /// The skills last sent in `available_commands_update` (name, description): acp/commands.rs.
    pub skills_shown: Mutex<Vec<(String, String)>>,
}

/// What the client was last shown of one background task (acp/background.rs).
pub(crate) struct Shown {
    pub call_id: String,
    /// Bytes the task had printed then.
    pub printed: u64,
    pub ended: bool,
}

impl AcpSession {
    fn new(id: String, ws: Arc<Workspace>) -> AcpSession {
        let mode = ws.configured_mode();
        // How the other sessions of its folder (their reviews) name it.
        ws.set_label(format!("session {id}"));
        AcpSession {
            id,
            ws,
            mcp: Default::default(),
            mode: Mutex::new(mode),
            background_shown: Default::default(),
            background_seen: Default::default(),
            skills_shown: Default::default(),
        }
    }

    pub fn mode(&self) -> Mode {
        *lock(&self.mode)
    }

    pub fn set_mode(&self, mode: Mode) {
        *lock(&self.mode) = mode;
    }

    /// Canonical: the agent's workspace.
    pub fn root(&self) -> &std::path::Path {
        self.ws.root()
    }
}

pub(crate) struct Sessions {
    dir: Option<PathBuf>,
    live: Mutex<HashMap<String, Arc<AcpSession>>>,
}

impl Sessions {
    pub fn new(dir: Option<PathBuf>) -> Sessions {
        if dir.is_none() {
            tracing::warn!("no state directory (set STEPWISE_STATE_DIR or HOME): sessions will not be saved");
        }
        Sessions { dir, live: Mutex::new(HashMap::new()) }
    }

    fn file(&self, id: &str) -> Option<PathBuf> {
        self.dir.as_deref().and_then(|d| store::file_for_id(d, id))
    }

    pub fn get(&self, id: &str) -> Option<Arc<AcpSession>> {
        lock(&self.live).get(id).cloned()
    }

    pub fn create(&self, root: PathBuf) -> Arc<AcpSession> {
        let id = new_id();
        // A new id: nothing is saved under it yet.
        let (ws, _) = Workspace::open(root, self.file(&id), true);
        let session = Arc::new(AcpSession::new(id.clone(), ws));
        lock(&self.live).insert(id, session.clone());
        session
    }

    /// A session of this connection, or one saved earlier, for `session/load` in `root`.
    pub fn load(&self, id: &str, root: &std::path::Path) -> Result<Arc<AcpSession>, Error> {
        if let Some(s) = self.get(id) {
            if s.ws.running().is_some() {
                return Err(Error::new(ErrorCode::INVALID_REQUEST, format!("session {id} is running a prompt")));
            }
            if s.root() != root {
                return Err(wrong_folder(id, s.root()));
            }
            return Ok(s);
        }
        let Some(file) = self.file(id) else {
            return Err(super::unknown_session(id));
        };
        let ws = match Workspace::resume(root.to_path_buf(), file) {
            Ok(ws) => ws,
            Err(Unopened::Missing) => return Err(super::unknown_session(id)),
            Err(Unopened::OtherFolder(folder)) => return Err(wrong_folder(id, &folder)),
            Err(Unopened::Unreadable(Unreadable { error, moved_to })) => {
                let moved = moved_to.map(|p| format!("; moved to {}", p.display())).unwrap_or_default();
                return Err(Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("session {id} could not be read ({error}){moved}"),
                ));
            }
        };
        let loaded = Arc::new(AcpSession::new(id.to_string(), ws));
        lock(&self.live).insert(id.to_string(), loaded.clone());
        Ok(loaded)
    }

    /// `session/close`: its run cancelled, its state written, and the session forgotten by this connection
    /// (it stays saved, for `session/load` or `session/resume`). False for a session not open here.
    pub fn close(&self, id: &str) -> bool {
        let Some(s) = lock(&self.live).remove(id) else { return false };
        s.ws.cancel();
        s.ws.flush();
        true
    }

    /// The state directory sessions are saved in, if any.
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.dir.as_deref()
    }

    /// The client is gone: cancel every run, give each a bounded moment to reach its checkpoint, and
    /// write every session's latest state.
    pub async fn wrap_up(&self) {
        let all: Vec<_> = lock(&self.live).values().cloned().collect();
        let grace = std::time::Duration::from_secs(2);
        futures_util::future::join_all(all.iter().map(|s| s.ws.wrap_up(grace))).await;
    }
}

fn wrong_folder(id: &str, folder: &std::path::Path) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, format!("session {id} belongs to the folder {}", folder.display()))
}

/// Unique per process and unlikely to repeat across processes: time, process id and a counter.
fn new_id() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("sw-{:x}{:08x}-{:x}-{seq}", now.as_secs(), now.subsec_nanos(), std::process::id())
}
