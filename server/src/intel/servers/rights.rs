//! The rights a workspace's language servers run with: the session's sandbox, the user's trust, or none
//! (and the question asked where no sandbox holds them), and how the servers wait for them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::Servers;
use crate::locks::lock;

/// The question whether `names` may run in `root` with the user's rights (no sandbox holds them), the
/// same in every adapter.
pub fn trust_question(root: &Path, names: &[String]) -> String {
    format!(
        "No sandbox can hold language servers here. Run {} in {} with your rights (they may run the workspace's build scripts)?",
        names.join(", "),
        root.display()
    )
}

/// How the servers may run: inside the session's sandbox, or plainly in a workspace the user trusted;
/// otherwise not at all (the line says why).
#[derive(Debug, Clone)]
pub enum Rights {
    Sandbox(Confined),
    Trusted,
    Refused(String),
    /// The user is being asked (in an editor or a client), or the sandbox's trial still runs; a start
    /// waits for the answer until its deadline.
    Asking(String),
    /// The sandbox's trial failed after the servers counted on it: not started (the line says why) until
    /// the next run asks the user (`take_unsettled`).
    Unsettled(String),
}

/// Rights decided when a server is first needed: the sandbox's trial, which the start does not wait
/// for, has then answered (or is waited for on a blocking thread). A thread of their own, made at the
/// start to wait for the trial, was a tenth of what code intelligence added before the first model
/// request (issue 39).
pub type Deferred = Box<dyn FnOnce() -> Rights + Send>;

/// The servers' confinement: the session's sandbox (which can start here) and its settings. The policy is
/// made at the first server's start, not when the servers are decided before the first model request: its
/// temporary folder and network namespace were most of what a workspace with a served file added to the
/// start (issue 39).
#[derive(Debug, Clone)]
pub struct Confined {
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    pub root: PathBuf,
    pub settings: crate::sandbox::SandboxSettings,
}

impl Confined {
    pub(super) fn policy(&self) -> Result<crate::sandbox::Policy, String> {
        self.sandbox.policy(&self.root, self.settings)?.ok_or_else(|| "the sandbox is off".to_string())
    }
}

impl Servers {
    /// The rights from now on (the user answered the question about trusting the workspace).
    pub fn set_rights(&self, rights: Rights) {
        self.0.rights.send_replace(rights);
    }

    /// The rights, settled by `settle` when a server is first needed (they stay as they are until then).
    pub fn settle_later(&self, settle: Deferred) {
        *lock(&self.0.deferred) = Some(settle);
    }

    /// Whether the rights wait for the user's question after a failed trial: they are then `Asking`
    /// (taken once, so the question is asked once).
    pub fn take_unsettled(&self) -> bool {
        self.0.rights.send_if_modified(|r| match r {
            Rights::Unsettled(why) => {
                *r = Rights::Asking(why.clone());
                true
            }
            _ => false,
        })
    }

    /// The rights, once the user answered (a question still open is waited for until `deadline`).
    pub(super) async fn rights(&self, deadline: Instant) -> Rights {
        let mut rx = self.0.rights.subscribe();
        let deferred = lock(&self.0.deferred).take();
        if let Some(settle) = deferred {
            // On a blocking thread: the sandbox's trial may still run. Settled even if this wait ends first.
            let servers = self.clone();
            let settling = tokio::task::spawn_blocking(settle);
            tokio::spawn(async move {
                if let Ok(rights) = settling.await {
                    servers.set_rights(rights);
                }
            });
        }
        loop {
            let now = rx.borrow_and_update().clone();
            if !matches!(now, Rights::Asking(_)) {
                return now;
            }
            match tokio::time::timeout_at(deadline.into(), rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => return now,
            }
        }
    }
}
