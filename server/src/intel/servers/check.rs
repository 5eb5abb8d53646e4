//! `stepwise doctor`'s check of the language servers (issue 51): each one a session would start in the
//! workspace (`look::used`), started as a session starts it, with the rights a session's servers would have
//! (`Rights`: inside the sandbox, or plainly only in a trusted workspace), all at once and within a few
//! seconds. A server starts when it answers `initialize`; otherwise why, in its own words (`said.rs`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::said::NotStarted;
use super::server::Running;
use super::spec::Spec;
use super::Rights;

/// How long a server has to answer `initialize`: one that starts answers in well under a second (its
/// indexing comes after), and the check should not keep its user waiting.
pub const WAIT: Duration = Duration::from_secs(5);

/// How a server's start went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// It answered `initialize` (and was stopped).
    Starts,
    Fails(NotStarted),
    /// It was not started: why (the rights a session's servers would have here are none).
    NotTried(String),
}

/// Starts each of `specs` in `root` with `rights`, all at once, each within `wait`, and stops them.
pub async fn starts(root: &Path, specs: &[Arc<Spec>], rights: &Rights, wait: Duration) -> Vec<Start> {
    let not_tried = |why: &str| specs.iter().map(|_| Start::NotTried(why.to_string())).collect();
    let policy = match rights {
        Rights::Sandbox(c) => match c.policy() {
            Ok(p) => Some(p),
            Err(why) => return not_tried(&format!("the sandbox cannot hold it: {why}")),
        },
        Rights::Trusted => None,
        Rights::Refused(why) | Rights::Asking(why) | Rights::Unsettled(why) => return not_tried(why),
    };
    let each = specs.iter().map(|spec| {
        let policy = policy.as_ref();
        async move {
            match Running::start(spec.clone(), root, policy, wait).await {
                // Dropped at once: its process group is killed.
                Ok(_) => Start::Starts,
                Err(not) => Start::Fails(not),
            }
        }
    });
    futures_util::future::join_all(each).await
}
