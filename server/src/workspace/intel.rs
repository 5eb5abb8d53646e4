//! A workspace's code intelligence: the language servers stepwise would start for it (found once, at the
//! first run's preparation; none start before they are needed), the rights they run with, and the
//! session the loop uses (the host's source, an editor's, wins over the servers).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{Asker, Trust, Workspace};
use crate::agent::AgentConfig;
use crate::host::{Host, SandboxSettings};
use crate::intel::servers::{self, Confined, Rights, Servers};
use crate::intel::{DiagnosticsMode, Session, Source};
use crate::locks::lock;

/// The trust list (state directory) of workspaces whose language servers may run unconfined.
const TRUSTED: &str = "trusted-language-servers";

pub fn is_trusted(root: &Path) -> bool {
    crate::trust::is_recorded(TRUSTED, &root.display().to_string())
}

pub fn remember(root: &Path) -> std::io::Result<()> {
    crate::trust::record(TRUSTED, &root.display().to_string())
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

/// The servers configured or on `PATH`, the problems with their settings, and those serving some file of
/// the workspace (its bounded walk).
type Found = (Vec<servers::spec::Spec>, Vec<String>, Vec<String>);

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
            _ => Look::Running(tokio::task::spawn_blocking(move || servers::look(root))),
        }
    }

    async fn found(self) -> Found {
        match self {
            Look::Later(root) => servers::look(root),
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
    /// `look`, when one was begun).
    pub(super) async fn language_servers<A: Asker>(
        &self,
        look: Option<Look>,
        sandbox: SandboxSettings,
        max_wait: Option<Duration>,
        asker: &A,
    ) -> Option<Source> {
        self.servers
            .get_or_init(|| async {
                let look = look.unwrap_or_else(|| Look::start(self.root.clone()));
                let (specs, problems, serving) = look.found().await;
                for p in problems {
                    asker.reporter()(&p);
                }
                let root = self.root.clone();
                let wait = max_wait.unwrap_or(servers::FIRST_WAIT);
                // Which servers this workspace would use: nothing to start, nothing to ask about.
                if serving.is_empty() {
                    return None;
                }
                let no = format!(
                    "language servers do not start in {} without the sandbox unless the workspace is trusted",
                    crate::host::folder_name(&root)
                );
                let refused = move || Rights::Refused(no);
                let rights = match sandbox.confines() {
                    true => Rights::Sandbox(Confined {
                        sandbox: self.sandbox.clone(),
                        root: root.clone(),
                        settings: sandbox,
                    }),
                    _ if is_trusted(&root) => Rights::Trusted,
                    _ => match asker.trust_language_servers(&root, &serving).await {
                        Trust::Now(yes) => trusted(&root, yes, &asker.reporter()).unwrap_or_else(refused),
                        Trust::Later(answer) => {
                            // Asked in the editor or the client: the run goes on, the servers wait for the answer.
                            let asking = Rights::Asking(format!(
                                "language servers wait for your answer on whether to trust {}",
                                crate::host::folder_name(&root)
                            ));
                            let servers = Servers::new(root.clone(), specs, asking, wait);
                            let (later, report) = (servers.clone(), asker.reporter());
                            tokio::spawn(async move {
                                let yes = answer.await;
                                if !yes {
                                    report(&format!(
                                        "language servers will not start in {}: the folder is not trusted",
                                        crate::host::folder_name(&root)
                                    ));
                                }
                                later.set_rights(trusted(&root, yes, &report).unwrap_or_else(refused));
                            });
                            return Some(Arc::new(servers) as Source);
                        }
                    },
                };
                Some(Arc::new(Servers::new(root, specs, rights, wait)) as Source)
            })
            .await
            .clone()
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
