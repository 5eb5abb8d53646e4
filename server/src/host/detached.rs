//! Commands started to outlive the call that started them (`background_run`), and the thread they are
//! forked from.
//!
//! The guard asks for a parent-death signal (`fork_guard.rs`), and Linux sends it when the *thread* that
//! forked the guard exits, not the process. A `bash` call lasts as long as its round, so a runtime
//! worker is fine for it; a background task must outlive the request that started it, and a tokio
//! blocking thread (or a worker of a runtime that shuts down) may go at any time. So background guards
//! are forked here, on one thread that lives as long as the process: the signal then means what it
//! should, stepwise is gone (`kill -9` included).

use std::path::Path;
use std::sync::mpsc;
use std::sync::OnceLock;

use super::guard;
use crate::sandbox::Policy;

/// A started command, as a host hands it to the session's tasks (`crate::background`).
pub struct Started {
    guarded: guard::Guarded,
    /// The sandbox it runs in (`None`: outside, approved or where there is none).
    policy: Option<Policy>,
}

impl Started {
    /// The guard, the child and how to wait for its end; the sandbox it runs in.
    pub(crate) fn into_parts(self) -> (guard::Guarded, Option<Policy>) {
        (self.guarded, self.policy)
    }
}

/// Starts `command` in `root` under a guard, confined by `sandbox` when given; the fork happens on the
/// long-lived spawner thread below.
pub async fn spawn(root: &Path, command: &str, sandbox: Option<&Policy>) -> Result<Started, String> {
    let (root, command, policy) = (root.to_path_buf(), command.to_string(), sandbox.cloned());
    let confined = policy.is_some();
    let kept = policy.clone();
    let spawned = on_spawner(move || guard::spawn(&root, &command, policy.as_ref())).await?;
    spawned.map(|guarded| Started { guarded, policy: kept }).map_err(|e| match confined {
        true => format!("cannot start the command in the sandbox: {e}"),
        false => format!("cannot start the command: {e}"),
    })
}

type Job = Box<dyn FnOnce() + Send>;

fn sender() -> Result<&'static mpsc::Sender<Job>, String> {
    static SENDER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    SENDER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let spawned = std::thread::Builder::new().name("stepwise-background".into()).spawn(move || {
                // Never returns while the process lives: the sender is in a static.
                for job in rx {
                    job();
                }
            });
            spawned.ok().map(|_| tx)
        })
        .as_ref()
        .ok_or_else(|| "cannot start the thread background commands are started from".to_string())
}

/// Runs `f` on the spawner thread, inside the calling task's runtime (tokio's child processes and pipes
/// register with it), and gives back its result.
pub async fn on_spawner<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let handle = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _in_runtime = handle.enter();
        let _ = tx.send(f());
    });
    sender()?.send(job).map_err(|_| "the background thread is gone".to_string())?;
    rx.await.map_err(|_| "the background thread did not answer".to_string())
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn jobs_run_on_one_long_lived_thread() {
        let a = super::on_spawner(|| std::thread::current().id()).await.unwrap();
        let b = super::on_spawner(|| std::thread::current().id()).await.unwrap();
        assert_eq!(a, b);
        assert_ne!(a, std::thread::current().id());
    }
}
