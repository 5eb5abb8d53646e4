//! What a run reads of the workspace's folders before its first request: the instruction files, the
//! skills and the agents. Read once per run, so that what changed since the last run is seen and the
//! system prompt stays byte-stable within one.
//!
//! Read ahead where the run is prepared (`Workspace::prepare_run`), on a blocking thread, while the
//! settings are read, the model client is made and the language servers are looked for: fifty skills are
//! 150 system calls, about 0.4 ms on a virtual machine, which then no longer stand between the start and
//! the first request (issue 49's benchmark). Only the run that follows its preparation at once uses what
//! was read ahead; a later one (chat waiting for its first line) reads again, so nothing added meanwhile
//! is missed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::skills::Skills;
use crate::subagents::agents::Agents;

/// What was read ahead serves a run that starts within this of the read's start.
const FRESH: Duration = Duration::from_secs(1);

/// The workspace's folders as one run reads them.
pub struct Found {
    /// The instruction files' part of the system prompt (`AGENTS.md` and the rest).
    pub instructions: String,
    pub skills: Skills,
    pub agents: Agents,
}

/// Reads them now.
pub fn find(root: &Path) -> Found {
    Found {
        instructions: crate::instructions::load(root).prompt,
        skills: crate::skills::find(root),
        agents: crate::subagents::agents::find(root),
    }
}

/// When the read began, and where its folders (the workspace, canonical) and what was found come.
type Reading = (Instant, tokio::sync::oneshot::Receiver<(PathBuf, Found)>);

/// A read begun ahead of a run, taken by the run that follows (clones share it: taken once).
#[derive(Clone, Default)]
pub struct Ahead(Arc<Mutex<Option<Reading>>>);

impl std::fmt::Debug for Ahead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ahead")
    }
}

impl Ahead {
    /// Begins reading the folders of `workspace` (made canonical on the way) on a thread of its own: a
    /// blocking thread of the Tokio runtime when there is one (the sidecar keeps them), else one started
    /// for it (`stepwise run`, before its runtime is built).
    pub fn start(workspace: PathBuf) -> Ahead {
        let begun = Instant::now();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let read = move || {
            if let Ok(root) = std::fs::canonicalize(&workspace) {
                let found = find(&root);
                let _ = tx.send((root, found));
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(read)),
            // Not started (no thread to be had): the run reads its folders itself.
            Err(_) => drop(std::thread::Builder::new().name("stepwise-ahead".into()).spawn(read)),
        }
        Ahead(Arc::new(Mutex::new(Some((begun, rx)))))
    }

    /// What was read ahead for `root`, if that began within `FRESH` and has not been taken; otherwise
    /// `root`'s folders read now.
    pub async fn take(&self, root: &Path) -> Found {
        let reading = crate::locks::lock(&self.0).take();
        match reading {
            Some((begun, rx)) if begun.elapsed() < FRESH => match rx.await {
                Ok((read_root, found)) if read_root == root => found,
                // Another folder (a worktree made since), or the read failed.
                _ => find(root),
            },
            // Stale: dropping the receiver leaves the read to end on its own.
            _ => find(root),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder_with_skill(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("stepwise-ahead-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let skill = dir.join(".agents/skills").join(name);
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(skill.join("SKILL.md"), format!("---\nname: {name}\ndescription: Does {name}.\n---\nbody\n"))
            .unwrap();
        std::fs::write(dir.join("AGENTS.md"), format!("Rules of {name}.\n")).unwrap();
        dir
    }

    fn names(found: &Found) -> Vec<&str> {
        // The workspace's: the user's own skills folders are read too.
        found
            .skills
            .list
            .iter()
            .filter(|s| s.scope == crate::skills::Scope::Workspace)
            .map(|s| s.name.as_str())
            .collect()
    }

    /// A read that has ended, with `found` for `root`.
    fn ended(root: &Path, found: Found, begun: Instant) -> Ahead {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let _ = tx.send((root.to_path_buf(), found));
        Ahead(Arc::new(Mutex::new(Some((begun, rx)))))
    }

    fn marked() -> Found {
        Found { instructions: "read ahead".into(), skills: Skills::default(), agents: Agents::default() }
    }

    #[tokio::test]
    async fn a_fresh_read_ahead_serves_the_run_of_its_folder_once_and_is_read_again_otherwise() {
        let dir = folder_with_skill("ahead");
        let other = folder_with_skill("other");
        // Fresh, for this folder: what was read ahead, once (clones share it).
        let ahead = ended(&dir, marked(), Instant::now());
        let shared = ahead.clone();
        assert_eq!(ahead.take(&dir).await.instructions, "read ahead");
        assert_eq!(names(&shared.take(&dir).await), ["ahead"]);
        // For another folder (a worktree made since): read again.
        assert_eq!(names(&ended(&dir, marked(), Instant::now()).take(&other).await), ["other"]);
        // Begun too long ago (chat waiting for its first line): read again.
        let old = Instant::now().checked_sub(FRESH * 2).unwrap();
        assert_eq!(names(&ended(&dir, marked(), old).take(&dir).await), ["ahead"]);
        // Nothing begun: read at the take.
        assert_eq!(names(&Ahead::default().take(&other).await), ["other"]);
        // Begun for real, on a path that is not canonical, with and without a runtime to lend a thread.
        let found = Ahead::start(dir.join(".")).take(&dir).await;
        assert_eq!(names(&found), ["ahead"]);
        assert!(found.instructions.contains("Rules of ahead."), "{}", found.instructions);
        let outside = std::thread::spawn({
            let dir = dir.clone();
            move || Ahead::start(dir)
        });
        assert_eq!(names(&outside.join().unwrap().take(&dir).await), ["ahead"]);
        for dir in [dir, other] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
