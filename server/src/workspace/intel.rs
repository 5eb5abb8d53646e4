//! A workspace's code intelligence: the language servers stepwise would start for it (found once, at the
//! first run's preparation; none start before they are needed), the rights they run with, and the
//! session the loop uses (the host's source, an editor's, wins over the servers).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{Asker, Trust, Workspace};
use crate::agent::AgentConfig;
use crate::host::Host;
use crate::intel::servers::{self, Confined, Rights, Servers, Serving};
use crate::intel::{DiagnosticsMode, Session, Source};
use crate::locks::lock;
use crate::sandbox::SandboxSettings;

/// The trust list (state directory) of workspaces whose language servers may run unconfined.
const TRUSTED: &str = "trusted-language-servers";

pub fn is_trusted(root: &Path) -> bool {
    crate::trust::is_recorded(TRUSTED, &root.display().to_string())
}

pub fn remember(root: &Path) -> std::io::Result<()> {
    crate::trust::record(TRUSTED, &root.display().to_string())
}

/// The rights a workspace's servers have without asking anyone (`stepwise doctor`), by a session's rules:
/// inside the sandbox where it can hold them, else plainly where the user trusted the workspace before;
/// otherwise none, and why (a session would ask).
pub fn unasked_rights(root: &Path, settings: SandboxSettings, sandbox: Arc<crate::sandbox::Sandbox>) -> Rights {
    if settings.confines() {
        return Rights::Sandbox(Confined { sandbox, root: root.to_path_buf(), settings });
    }
    if is_trusted(root) {
        return Rights::Trusted;
    }
    Rights::Refused(format!(
        "not started: no sandbox holds language servers here and {} is not trusted (a session asks whether to trust it)",
        crate::host::folder_name(root)
    ))
}

/// The rights of servers the user trusted (remembered, as a trusted `.mcp.json` is); `None`: not trusted.
fn trusted(root: &Path, yes: bool, report: &crate::mcp::Report) -> Option<Rights> {
    if !yes {
        return None;
    }
    if let Err(e) = remember(root) {
        report(&format!("could not remember the trust in {}: {e}", root.display()));
    }
    Some(Rights::Trusted)
}

/// The servers decided for a workspace: its source for the runs and the servers themselves (their rights
/// settled later).
pub(super) struct Decided {
    source: Source,
    servers: Servers,
}

/// Whether the sandbox confines the servers: `None` while its trial runs where the kernel offers it.
fn sandbox_answer(s: SandboxSettings) -> Option<bool> {
    if s.mode == crate::sandbox::SandboxMode::Off {
        return Some(false);
    }
    if let Some(answer) = crate::sandbox::known(s.network) {
        return Some(answer.is_ok());
    }
    if crate::sandbox::expected(s.network) {
        return None;
    }
    Some(s.confines())
}

/// What settles the servers' rights once the sandbox's trial answered.
struct Settling {
    confined: Confined,
    report: crate::mcp::Report,
}

impl Settling {
    /// Confined; where the trial failed, trusted if the user said so before, else none until the next
    /// run asks (the question cannot be asked mid-run on a terminal).
    fn settle(self) -> Rights {
        let network = self.confined.settings.network;
        let answer = crate::sandbox::availability(network);
        if answer.is_err() {
            crate::sandbox::failed_where_expected(network);
        }
        let root = self.confined.root.clone();
        match answer {
            Ok(_) => Rights::Sandbox(self.confined),
            Err(_) if is_trusted(&root) => Rights::Trusted,
            Err(why) => {
                let line = format!(
                    "language servers do not start in {}: the sandbox cannot start here ({why}); whether to trust the workspace is asked at the next run",
                    crate::host::folder_name(&root)
                );
                (self.report)(&line);
                Rights::Unsettled(line)
            }
        }
    }
}

/// The servers configured or on `PATH`, the problems with their settings, and those serving some file of
/// the workspace (its bounded walk).
type Found = (servers::spec::Specs, Vec<String>, Vec<String>);

/// The look for the servers a workspace would use. With worker threads (the sidecar, ACP) it is begun
/// on a blocking thread at the start of the first run's preparation, so the `PATH` look-ups and the walk
/// overlap the model client's making and the MCP servers' start; on the one-thread runtime of `stepwise
/// run` it is done where it is needed, on that thread: a thread of its own cost more there than the look.
pub(super) enum Look {
    Later(PathBuf),
    Running(tokio::task::JoinHandle<Found>),
}

impl Look {
    fn start(root: PathBuf) -> Look {
        use tokio::runtime::{Handle, RuntimeFlavor};
        match Handle::current().runtime_flavor() {
            RuntimeFlavor::CurrentThread => Look::Later(root),
            _ => Look::Running(tokio::task::spawn_blocking(move || servers::look(root, Serving::First))),
        }
    }

    async fn found(self) -> Found {
        match self {
            Look::Later(root) => servers::look(root, Serving::First),
            Look::Running(task) => task.await.unwrap_or_default(),
        }
    }
}

impl Workspace {
    /// The look `language_servers` will need, begun now; `None` once the servers are known.
    pub(super) fn look_for_servers(&self) -> Option<Look> {
        (!self.servers.initialized()).then(|| Look::start(self.root.clone()))
    }

    /// The language servers for this workspace (`None`: none serves any of its files), found once (with
    /// `look`, when one was begun), and the rights they run with: confined by the sandbox, or, where it
    /// cannot hold them, trusted by the user (asked once, remembered).
    pub(super) async fn language_servers<A: Asker>(
        &self,
        look: Option<Look>,
        sandbox: SandboxSettings,
        max_wait: Option<Duration>,
        asker: &A,
    ) -> Option<Source> {
        let mut deciding = false;
        let decided = self
            .servers
            .get_or_init(|| async {
                deciding = true;
                let look = look.unwrap_or_else(|| Look::start(self.root.clone()));
                let (specs, problems, serving) = look.found().await;
                for p in problems {
                    asker.reporter()(&p);
                }
                // Which servers this workspace would use: nothing to start, nothing to ask about.
                if serving.is_empty() {
                    return None;
                }
                let wait = max_wait.unwrap_or(servers::FIRST_WAIT);
                let trial = Rights::Asking(format!(
                    "language servers wait for the sandbox's trial in {}",
                    crate::host::folder_name(&self.root)
                ));
                let servers = Servers::new(self.root.clone(), specs, trial, wait);
                match sandbox_answer(sandbox) {
                    Some(true) => servers.set_rights(Rights::Sandbox(self.confinement(sandbox))),
                    // The trial runs beside the first model request; waiting for it here was most of what
                    // a workspace with a served file added to the start (issue 39).
                    None => self.settle_on_trial(&servers, sandbox, asker.reporter()),
                    Some(false) => self.ask_trust(&servers, asker).await,
                }
                Some(Decided { source: Arc::new(servers.clone()) as Source, servers })
            })
            .await
            .as_ref()?;
        // The sandbox's trial failed after the servers counted on it: the user is asked at the next run
        // (not in the run that decided, whose start did not wait for the trial and is said to go without).
        if !deciding && decided.servers.take_unsettled() {
            self.ask_trust(&decided.servers, asker).await;
        }
        Some(decided.source.clone())
    }

    fn confinement(&self, settings: SandboxSettings) -> Confined {
        Confined { sandbox: self.sandbox.clone(), root: self.root.clone(), settings }
    }

    /// The servers' rights once the sandbox's trial answers, settled when a server is first needed.
    fn settle_on_trial(&self, servers: &Servers, settings: SandboxSettings, report: crate::mcp::Report) {
        let settling = Settling { confined: self.confinement(settings), report };
        servers.settle_later(Box::new(move || settling.settle()));
    }

    /// Asks whether the servers may run unconfined (unless the workspace is trusted already) and gives
    /// them the answer's rights; an answer that comes later (an editor's or a client's question) is
    /// waited for on a task, the servers waiting for it within a round's wait.
    async fn ask_trust<A: Asker>(&self, servers: &Servers, asker: &A) {
        let root = self.root.clone();
        if is_trusted(&root) {
            return servers.set_rights(Rights::Trusted);
        }
        // The question names every server serving the workspace: the look before the first request
        // stopped at the first.
        let all = root.clone();
        let serving = tokio::task::spawn_blocking(move || servers::look(all, Serving::All).2).await.unwrap_or_default();
        let folder = crate::host::folder_name(&root);
        let no =
            format!("language servers do not start in {folder} without the sandbox unless the workspace is trusted");
        let refused = move || Rights::Refused(no);
        match asker.trust_language_servers(&root, &serving).await {
            Trust::Now(yes) => servers.set_rights(trusted(&root, yes, &asker.reporter()).unwrap_or_else(refused)),
            Trust::Later(answer) => {
                servers.set_rights(Rights::Asking(format!(
                    "language servers wait for your answer on whether to trust {folder}"
                )));
                let (later, report) = (servers.clone(), asker.reporter());
                tokio::spawn(async move {
                    let yes = answer.await;
                    if !yes {
                        report(&format!("language servers will not start in {folder}: the folder is not trusted"));
                    }
                    later.set_rights(trusted(&root, yes, &report).unwrap_or_else(refused));
                });
            }
        }
    }

    /// The session a run uses: the host's source (an editor answering `stepwise/query`) or the language
    /// servers; kept across runs so the errors seen before stay known. `None`: the setting is `off`, or
    /// there is no source.
    pub(super) fn intel_session<H: Host + ?Sized>(&self, host: &H, cfg: &AgentConfig) -> Option<Arc<Session>> {
        let setup = &cfg.intel;
        if setup.mode == DiagnosticsMode::Off {
            return None;
        }
        let source = host.intelligence().or_else(|| setup.servers.clone())?;
        let mut slot = lock(&self.intel);
        if let Some(s) = slot.as_ref() {
            if Arc::ptr_eq(&s.source, &source) && s.mode == setup.mode {
                return Some(s.clone());
            }
        }
        let wait = setup.max_wait.unwrap_or(servers::FIRST_WAIT).min(servers::FIRST_WAIT);
        let s = Arc::new(Session::new(source, setup.mode, self.root.clone(), wait));
        *slot = Some(s.clone());
        Some(s)
    }
}
