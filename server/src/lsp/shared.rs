//! The sidecar's shared state: the client, the folders, the editor's texts, and what the client can do.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use dashmap::DashMap;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{MessageType, Uri};
use tower_lsp_server::Client;

use super::caps::Caps;
use super::folder::Folder;
use super::notify::{Notifier, Outgoing};
use super::session::Session;
use super::texts::{normalize, Texts};
use crate::config::Overrides;
use crate::locks;
use crate::store as state;
use crate::workspace::{Unreadable, Workspace};

pub struct Shared {
    pub client: Client,
    pub notifier: Notifier,
    /// Every text not on disk yet: open documents, the agent's unsaved text (texts/).
    pub texts: Texts,
    pub folders: DashMap<String, Arc<Folder>>,
    /// Folder URIs in the order the client gave them ("the first folder").
    order: RwLock<Vec<String>>,
    /// Set once, by `initialize`.
    caps: OnceLock<Caps>,
    /// Whether the client handles `codeLens/refresh`; the notifier reads it.
    refresh_lenses: Arc<AtomicBool>,
    /// `initializationOptions` merged with pushed `didChangeConfiguration` settings.
    pub(super) init_settings: RwLock<Overrides>,
    /// Where sessions are saved: `initializationOptions.stateDir`, else the environment (state.rs). Set
    /// once, by `initialize`, before any folder is added.
    state_dir: OnceLock<Option<PathBuf>>,
    /// What the server had to say before `initialized`: tower-lsp drops notifications sent before the
    /// `initialize` answer, so they wait here. `None` once initialized.
    early: Mutex<Option<Vec<Outgoing>>>,
    /// Held (written) while a `workspace/configuration` request is out; a run reads it before taking its
    /// settings, so a run started right after `initialized` uses the folder's settings.
    pub(super) config_pending: Arc<tokio::sync::RwLock<()>>,
}

impl Shared {
    pub fn new(client: Client) -> Shared {
        let refresh_lenses = Arc::new(AtomicBool::new(false));
        let notifier = Notifier::spawn(client.clone(), refresh_lenses.clone(), Duration::from_secs(10));
        Shared {
            client,
            notifier,
            texts: Texts::default(),
            folders: DashMap::new(),
            order: RwLock::new(Vec::new()),
            caps: OnceLock::new(),
            refresh_lenses,
            init_settings: RwLock::new(Overrides::default()),
            state_dir: OnceLock::new(),
            early: Mutex::new(Some(Vec::new())),
            config_pending: Arc::new(tokio::sync::RwLock::new(())),
        }
    }

    /// Called once, by `initialize`: what the client can do, and where sessions are saved.
    pub fn initialize(&self, caps: Caps, state_dir: Option<PathBuf>) {
        self.refresh_lenses.store(caps.refresh_lenses, Ordering::Relaxed);
        if self.caps.set(caps).is_err() {
            tracing::warn!("initialize came twice; the first client capabilities stay");
        }
        let _ = self.state_dir.set(state_dir.or_else(state::state_dir));
    }

    pub fn caps(&self) -> Caps {
        self.caps.get().copied().unwrap_or_default()
    }

    pub fn state_dir(&self) -> Option<&Path> {
        self.state_dir.get_or_init(state::state_dir).as_deref()
    }

    /// Removes saved sessions unused for long (prune.rs), but for those of `folders`.
    pub fn prune_sessions(&self, folders: &[Arc<Folder>]) {
        // The folders' own sessions; the others live in `sessions/`, which pruning does not read.
        let dir = self.state_dir().map(Path::to_path_buf);
        let open: Vec<_> = folders.iter().filter_map(|f| dir.as_ref().map(|d| state::file_for(d, &f.root))).collect();
        tokio::task::spawn_blocking(move || crate::prune::sessions(dir.as_deref(), &open));
    }

    pub fn settings_for(&self, session: &Session) -> Overrides {
        let init = locks::read(&self.init_settings).clone();
        init.merged(&locks::read(&session.settings))
    }

    /// The session a command names: by id in the folder it names (or the first), the folder's own
    /// without one. A session id alone is looked for in every folder; a saved session that is closed
    /// (or not open after a restart) is opened again.
    pub fn session(&self, uri: Option<&str>, id: Option<&str>) -> Result<Arc<Session>> {
        let Some(id) = id.filter(|i| *i != crate::sessions::index::MAIN) else {
            return self.folder(uri)?.main().ok_or_else(|| Error::invalid_params("the folder has no session"));
        };
        let folders: Vec<Arc<Folder>> = match uri {
            Some(_) => vec![self.folder(uri)?],
            None => self.folders.iter().map(|f| f.clone()).collect(),
        };
        if let Some(s) = folders.iter().find_map(|f| f.session(id)) {
            return Ok(s);
        }
        for f in &folders {
            if let Some(entry) = f.index.as_ref().and_then(|i| i.get(id)) {
                return Ok(self.reopen(f, entry));
            }
        }
        Err(Error::invalid_params(format!("unknown session: {id}")))
    }

    /// Opens a saved session of `folder` again (and marks it open in the list).
    pub fn reopen(&self, folder: &Arc<Folder>, entry: crate::sessions::index::Entry) -> Arc<Session> {
        if let Some(s) = folder.session(&entry.id) {
            return s;
        }
        let root = entry.worktree.as_ref().map_or_else(|| folder.root.clone(), |w| w.path.clone());
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let file = self.state_dir().map(|d| crate::sessions::index::state_file(d, &entry.id));
        let (ws, unreadable) = Workspace::open_idle(root, file);
        if let Some(u) = unreadable {
            self.tell_unreadable(&ws, u);
        }
        if entry.closed {
            if let Some(index) = &folder.index {
                let id = entry.id.clone();
                if let Err(e) = index.update(|all| all.iter_mut().filter(|e| e.id == id).for_each(|e| e.closed = false))
                {
                    tracing::warn!("{e}");
                }
            }
        }
        if let Some(t) = &entry.worktree {
            ws.allow_writes(t.git_dirs.clone());
        }
        let session = Arc::new(Session::new(folder.place(), entry.id, entry.title, ws, entry.worktree));
        self.open_session(folder, session.clone());
        session
    }

    /// A session joins its folder: its background tasks are shown, and the folder's list announced.
    pub fn open_session(&self, folder: &Arc<Folder>, session: Arc<Session>) {
        super::background::watch(&self.notifier, &self.client, self.caps().work_done_progress, &session);
        folder.add(session);
    }

    fn tell_unreadable(&self, ws: &Workspace, u: Unreadable) {
        let Unreadable { error, moved_to } = u;
        let where_ = moved_to
            .map(|p| format!("it was moved to {}", p.display()))
            .unwrap_or_else(|| "it could not be moved aside".into());
        self.tell(Outgoing::Message(
            MessageType::WARNING,
            format!(
                "stepwise: the saved session for {} could not be read ({error}); {where_}. A new session was started.",
                ws.root().display()
            ),
        ));
    }

    /// Every open session of every folder.
    pub fn all_sessions(&self) -> Vec<Arc<Session>> {
        self.folders.iter().flat_map(|f| f.sessions()).collect()
    }

    /// The folder a command names, or the only / first one.
    pub fn folder(&self, uri: Option<&str>) -> Result<Arc<Folder>> {
        match uri {
            Some(u) => self
                .folders
                .get(u)
                .map(|f| f.clone())
                .or_else(|| {
                    // Clients differ in URI spelling (escaping, a trailing slash): compare paths too.
                    let path = u.parse::<Uri>().ok()?.to_file_path().map(|p| normalize(&p))?;
                    self.folders.iter().find(|f| f.root == path).map(|f| f.clone())
                })
                .ok_or_else(|| Error::invalid_params(format!("unknown workspace folder: {u}"))),
            None => {
                let first = locks::read(&self.order).first().cloned();
                first
                    .and_then(|u| self.folders.get(&u).map(|f| f.clone()))
                    .ok_or_else(|| Error::invalid_params("no workspace folder is open"))
            }
        }
    }

    /// The folder that holds a file: the deepest root containing it.
    pub fn folder_of(&self, path: &Path) -> Option<Arc<Folder>> {
        self.folders
            .iter()
            .filter(|f| path.starts_with(&f.root))
            .max_by_key(|f| f.root.as_os_str().len())
            .map(|f| f.clone())
    }

    pub fn add_folder(&self, uri: &Uri) -> Option<Arc<Folder>> {
        let key = uri.as_str().to_string();
        if let Some(f) = self.folders.get(&key) {
            return Some(f.clone());
        }
        let Some(path) = uri.to_file_path() else {
            tracing::warn!("ignoring workspace folder that is not a file URI: {key}");
            return None;
        };
        let root = match std::fs::canonicalize(&path) {
            Ok(r) => r,
            Err(e) => {
                self.tell(Outgoing::Message(
                    MessageType::WARNING,
                    format!("stepwise: cannot use workspace folder {}: {e}", path.display()),
                ));
                return None;
            }
        };
        let file = self.state_dir().map(|d| state::file_for(d, &root));
        let index = self.state_dir().map(|d| crate::sessions::index::Index::of(d, &root));
        let folder = Arc::new(Folder::new(key.clone(), root.clone(), index));
        let (ws, unreadable) = Workspace::open(root, file, true);
        if let Some(u) = unreadable {
            self.tell_unreadable(&ws, u);
        }
        let main = crate::sessions::index::MAIN.to_string();
        self.open_session(&folder, Arc::new(Session::new(folder.place(), main.clone(), "Main".into(), ws, None)));
        // The folder's other sessions, as they were left (closed ones wait to be reopened).
        for entry in folder.index.as_ref().map(|i| i.list()).unwrap_or_default() {
            if !entry.closed && crate::sessions::index::valid_id(&entry.id) {
                self.reopen(&folder, entry);
            }
        }
        self.folders.insert(key.clone(), folder.clone());
        let mut order = locks::write(&self.order);
        if !order.contains(&key) {
            order.push(key);
        }
        Some(folder)
    }

    pub fn remove_folder(&self, uri: &Uri) {
        if let Some((_, f)) = self.folders.remove(uri.as_str()) {
            for s in f.sessions() {
                s.ws.cancel();
                s.ws.background().kill_all_now();
                s.ws.flush();
            }
        }
        locks::write(&self.order).retain(|u| u != uri.as_str());
        self.texts.keep_only(|p| self.folder_of(p).is_some());
    }

    /// Cancels every run, gives them a bounded moment to reach their checkpoint, and writes every
    /// folder's state.
    pub async fn wrap_up(&self, grace: Duration) {
        let all = self.all_sessions();
        futures_util::future::join_all(all.iter().map(|s| s.ws.wrap_up(grace))).await;
    }

    /// Sends a notification now, or at `initialized` if that has not come yet.
    pub fn tell(&self, out: Outgoing) {
        match locks::lock(&self.early).as_mut() {
            Some(queue) => queue.push(out),
            None => self.notifier.send(out),
        }
    }

    /// At `initialized`: what waited for it goes out, and later messages go straight out.
    pub fn release_early(&self) {
        let early = locks::lock(&self.early).take().unwrap_or_default();
        for out in early {
            self.notifier.send(out);
        }
    }
}
