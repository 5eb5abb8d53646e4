//! One way to open a session, for every adapter: `open` / `resume` give a workspace continuing what was
//! saved (its checkpoints beside it), and `prepare_run` what a run needs (its settings, its model, its
//! MCP servers, the sandbox said once). What only an adapter can do, ask the user whether to trust
//! something and tell the user what went wrong on the way, goes through one seam: `Asker`. (The
//! questions a run asks while it works go through the host, `Host::approve`.)

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::Workspace;
use crate::agent::AgentConfig;
use crate::config::{self, Env, ForeignEndpoint, Overrides};
use crate::host::ApprovalMode;
use crate::llm::{Llm, Replay};
use crate::mcp::config::{ConfigFile, Servers};
use crate::mcp::{sources, trust, McpSet, Report};
use crate::plan::Mode;
use crate::sandbox::SandboxMode;
use crate::session::Session;
use crate::store::{self, Loaded};

/// The questions only an adapter can ask (a terminal line, an editor's message, a client's permission
/// request), and where it tells the user what went wrong on the way.
pub trait Asker: Send + Sync {
    /// Where problems are told (a bad MCP entry, a server that failed, a sandbox that cannot start); the
    /// work goes on. The MCP servers keep it for failures that come later.
    fn reporter(&self) -> Report;

    /// Whether to start the servers of the workspace's `.mcp.json`, which the user has not trusted yet.
    fn trust_mcp(&self, file: &ConfigFile) -> impl Future<Output = Trust> + Send;

    /// Whether a `.env` file's base URL may receive an API key set elsewhere. An adapter that cannot ask
    /// says no, and the run then says why it cannot start (`ForeignEndpoint::message`).
    fn trust_endpoint(&self, _endpoint: &ForeignEndpoint) -> impl Future<Output = bool> + Send {
        async { false }
    }

    /// The session's servers started (the sidecar shows them beside the plan once they are ready).
    fn mcp_started(&self, _set: &Arc<McpSet>) {}

    /// Whether the language servers `names` may run in `root` with the user's rights (there is no
    /// sandbox to hold them: rust-analyzer runs build scripts, tsserver loads the workspace's plugins).
    /// An adapter that cannot ask says no; the servers then do not start and the model is told why. An
    /// answer given `Later` (an editor's question, a client's permission request) does not hold up the run:
    /// until it comes the servers do not start; a question unanswered, failed or timed out is a no.
    fn trust_language_servers(&self, _root: &Path, _names: &[String]) -> impl Future<Output = Trust> + Send {
        async { Trust::Now(false) }
    }
}

/// The answer about a workspace `.mcp.json`.
pub enum Trust {
    /// Given now: its servers start with the others, or are left out without a word.
    Now(bool),
    /// Given while the other servers start (an editor's question, a client's permission request); a no
    /// leaves its servers out, each reported as not trusted.
    Later(BoxFuture<'static, bool>),
}

/// A saved session that could not be read; it was moved aside (to `moved_to`) and a new one begun.
#[derive(Debug)]
pub struct Unreadable {
    pub error: String,
    pub moved_to: Option<PathBuf>,
}

/// Why a saved session could not be resumed.
#[derive(Debug)]
pub enum Unopened {
    /// Nothing is saved there.
    Missing,
    /// It was saved for another folder (named).
    OtherFolder(PathBuf),
    Unreadable(Unreadable),
}

/// What a run is prepared with, besides the workspace.
#[derive(Default)]
pub struct RunRequest<'a> {
    /// The editor's settings (the command line and the ACP agent have none).
    pub overrides: Overrides,
    /// The run's mode, when the adapter chose one (else the settings').
    pub mode: Option<Mode>,
    /// A compaction offers no tools: no MCP servers start for it and the sandbox is not checked.
    pub compaction: bool,
    /// MCP servers the client passed (ACP's `session/new`), started with the others the first time.
    pub client_mcp: Servers,
    /// The model's answers replayed from this file instead of asked for (`--replay`).
    pub replay: Option<&'a Path>,
    /// Every exchange with the model recorded to this file (`--record`).
    pub record: Option<&'a Path>,
    /// The adapter's host is the source of code intelligence (an editor answering `stepwise/query`): no
    /// language server of stepwise's own is looked for, asked about or started.
    pub host_intelligence: bool,
    /// The workspace's folders, read ahead by an adapter that could begin sooner (`stepwise run`, as it
    /// sets up); else begun here.
    pub ahead: Option<crate::agent::Ahead>,
}

/// What a run needs: its settings (MCP servers included) and its model.
pub struct Prepared {
    pub cfg: AgentConfig,
    pub llm: Llm,
}

impl Workspace {
    /// A workspace on `root` (canonical), continuing what `state_file` holds (nothing there: a new
    /// session) and saving to it. With `checkpoints`, they are kept beside the file (they survive a
    /// restart) or, without one, for this process. A file that cannot be read is moved aside and said.
    pub fn open(root: PathBuf, state_file: Option<PathBuf>, checkpoints: bool) -> (Arc<Workspace>, Option<Unreadable>) {
        let (saved, unreadable) = Self::load(state_file.as_deref());
        (Self::with(root, saved, state_file, checkpoints), unreadable)
    }

    /// As `open` with checkpoints kept beside the file, but the copy of the folder they need is made at
    /// the session's first run, not now: a session that is only listed (one of a folder's several) costs
    /// no thread.
    pub fn open_idle(root: PathBuf, state_file: Option<PathBuf>) -> (Arc<Workspace>, Option<Unreadable>) {
        let (saved, unreadable) = Self::load(state_file.as_deref());
        let dir = state_file.as_ref().map(|f| f.with_extension("checkpoints"));
        let ws = Workspace::new(root, saved, state_file);
        ws.enable_checkpoints_with(dir.as_deref(), false);
        (ws, unreadable)
    }

    fn load(state_file: Option<&Path>) -> (Session, Option<Unreadable>) {
        match state_file.map(store::load_with_folder) {
            Some((Loaded::Restored(s), _)) => (s, None),
            Some((Loaded::Corrupt { moved_to, error }, _)) => {
                (Session::default(), Some(Unreadable { error, moved_to }))
            }
            Some((Loaded::None, _)) | None => (Session::default(), None),
        }
    }

    /// The session saved in `state_file`, which must be there and belong to `root` (ACP's `session/load`).
    pub fn resume(root: PathBuf, state_file: PathBuf) -> Result<Arc<Workspace>, Unopened> {
        let saved = match store::load_with_folder(&state_file) {
            (Loaded::Restored(_), Some(folder)) if folder != root => return Err(Unopened::OtherFolder(folder)),
            (Loaded::Restored(s), _) => s,
            (Loaded::None, _) => return Err(Unopened::Missing),
            (Loaded::Corrupt { moved_to, error }, _) => {
                return Err(Unopened::Unreadable(Unreadable { error, moved_to }))
            }
        };
        Ok(Self::with(root, saved, Some(state_file), true))
    }

    fn with(root: PathBuf, saved: Session, state_file: Option<PathBuf>, checkpoints: bool) -> Arc<Workspace> {
        let dir = state_file.as_ref().map(|f| f.with_extension("checkpoints"));
        let ws = Workspace::new(root, saved, state_file);
        if checkpoints {
            ws.enable_checkpoints(dir.as_deref());
        }
        ws
    }

    /// The mode a new session starts in: plan first when the settings say so.
    pub fn configured_mode(&self) -> Mode {
        config::agent(&Env::for_workspace(&self.root), &Overrides::default()).map(|c| c.mode).unwrap_or_default()
    }

    /// Reads the settings (the environment, `.env` files, the editor's), asks about an endpoint a `.env`
    /// file sets for a key from elsewhere, makes the model client, says once if the sandbox cannot start,
    /// and starts the session's MCP servers the first time (asking about a workspace `.mcp.json`).
    /// `Err` is the first reason the run cannot start, said before any request is made.
    pub async fn prepare_run<A: Asker>(&self, req: RunRequest<'_>, asker: &A) -> Result<Prepared, String> {
        // What the run reads of the workspace's folders is read beside the rest of the preparation.
        let ahead = match req.ahead {
            Some(ahead) => Some(ahead),
            None => (!req.compaction).then(|| crate::agent::Ahead::start(self.root.clone())),
        };
        let env = Env::for_workspace(&self.root);
        let o = &req.overrides;
        let mut cfg = config::agent(&env, o)?;
        cfg.ahead = ahead.unwrap_or_default();
        // Which language servers the workspace needs is looked for beside the rest of the preparation.
        let intel = cfg.intel.mode != crate::intel::DiagnosticsMode::Off && !req.host_intelligence && !req.compaction;
        let look = if intel { self.look_for_servers() } else { None };
        let llm = match req.replay {
            Some(path) => Llm::replay(Replay::load(path)?),
            None => {
                trust_endpoint(&env, o, asker).await;
                Llm::new(config::provider(&env, o)?)?.learn_window().await
            }
        };
        let llm = match req.record {
            Some(path) => {
                llm.record_to(path.to_path_buf()).map_err(|e| format!("cannot write {}: {e}", path.display()))?
            }
            None => llm,
        };
        // `approval: deny` promises that no shell command runs; a sandboxed one would run unasked.
        if o.approval == Some(ApprovalMode::Deny) {
            cfg.sandbox.mode = SandboxMode::Off;
        }
        if let Some(mode) = req.mode {
            cfg.mode = mode;
        }
        if let Some(extra) = self.also_writable.get().filter(|d| !d.is_empty()) {
            let all: Vec<PathBuf> = cfg.sandbox.writable.0.iter().chain(extra).cloned().collect();
            cfg.sandbox.writable = crate::sandbox::Writable::new(all);
        }
        if !req.compaction {
            let _trial = self.sandbox.unavailable_later(cfg.sandbox, asker.reporter());
            let editor = o.mcp_servers.as_ref().map(|s| &s.0);
            let set = self.mcp.get_or_init(|| self.start_mcp(editor, req.client_mcp, cfg.mcp.timeout, asker)).await;
            cfg.mcp.set = Some(set.clone());
            if intel {
                cfg.intel.servers = self.language_servers(look, cfg.sandbox, cfg.intel.max_wait, asker).await;
            }
        }
        Ok(Prepared { cfg, llm })
    }

    async fn start_mcp<A: Asker>(
        &self,
        editor: Option<&Servers>,
        client: Servers,
        timeout: crate::mcp::Timeouts,
        asker: &A,
    ) -> Arc<McpSet> {
        let report = asker.reporter();
        let found = sources::find(&self.root, editor, client);
        for p in &found.problems {
            report(p);
        }
        let (found, gate) = match found.untrusted.clone() {
            None => (found, None),
            Some(file) => match asker.trust_mcp(&file).await {
                Trust::Now(true) => {
                    remember_trust(&file, &report);
                    (found, None)
                }
                Trust::Now(false) => (found.without_workspace(), None),
                Trust::Later(answer) => {
                    let report = report.clone();
                    let gate = async move {
                        let yes = answer.await;
                        if yes {
                            remember_trust(&file, &report);
                        }
                        yes
                    };
                    (found, Some(gate.boxed()))
                }
            },
        };
        let any = !found.servers.is_empty();
        let set = McpSet::start(found.servers, self.root.clone(), timeout, gate, report);
        if any {
            asker.mcp_started(&set);
        }
        set
    }
}

/// A `.env` file's endpoint for a key from elsewhere, not approved yet: the adapter asks, and a yes is
/// remembered (`config::provider` refuses the endpoint otherwise).
async fn trust_endpoint<A: Asker>(env: &Env, o: &Overrides, asker: &A) {
    let Some(f) = config::foreign_endpoint(env, o) else { return };
    if crate::trust::is_trusted(&f.file, &f.url) || !asker.trust_endpoint(&f).await {
        return;
    }
    if let Err(e) = crate::trust::remember(&f.file, &f.url) {
        asker.reporter()(&format!("could not remember the approval: {e}"));
    }
}

fn remember_trust(file: &ConfigFile, report: &Report) {
    if let Err(e) = trust::remember(&file.path, &file.content) {
        report(&format!("could not remember the trust in {}: {e}", file.path.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn open_and_resume_continue_what_was_saved_for_this_folder_only() {
        let dir = std::env::temp_dir().join(format!("stepwise-open-{}", std::process::id()));
        let (root, other) = (dir.join("project"), dir.join("other"));
        for d in [&root, &other, &dir.join("state")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let root = root.canonicalize().unwrap();
        let file = dir.join("state/s.json");

        // Nothing saved: a new session; there is nothing to resume.
        let (ws, unreadable) = Workspace::open(root.clone(), Some(file.clone()), true);
        assert!(unreadable.is_none() && ws.messages().await.is_empty());
        assert!(matches!(Workspace::resume(root.clone(), file.clone()), Err(Unopened::Missing)));
        drop(ws);

        // Saved for this folder: continued, checkpoints on; another folder is refused, naming this one.
        let mut session = Session::default();
        session.push_prompt("hello");
        store::write_atomic(&file, &store::encode(&root, &session).unwrap()).unwrap();
        let ws = Workspace::resume(root.clone(), file.clone()).unwrap();
        assert_eq!(ws.messages().await, session.messages);
        assert!(ws.checkpoint_store().is_some());
        drop(ws);
        let (ws, _) = Workspace::open(root.clone(), Some(file.clone()), false);
        assert_eq!(ws.messages().await, session.messages);
        assert!(ws.checkpoint_store().is_none(), "asked for none");
        drop(ws);
        match Workspace::resume(other.canonicalize().unwrap(), file.clone()) {
            Err(Unopened::OtherFolder(folder)) => assert_eq!(folder, root),
            other => panic!("{:?}", other.map(|_| ())),
        }

        // Unreadable: set aside, said, and a new session begun (resume refuses it).
        std::fs::write(&file, "{not a session").unwrap();
        let (ws, unreadable) = Workspace::open(root.clone(), Some(file.clone()), true);
        let moved = unreadable.and_then(|u| u.moved_to).expect("set aside");
        assert!(moved.exists() && ws.messages().await.is_empty());
        std::fs::write(&file, "{not a session").unwrap();
        assert!(matches!(Workspace::resume(root, file), Err(Unopened::Unreadable(_))));
        drop(ws);
        // A checkpoint copy may still be writing beside the file; what is left is in the temp folder.
        let _ = std::fs::remove_dir_all(&dir);
    }
}
