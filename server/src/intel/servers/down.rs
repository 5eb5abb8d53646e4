//! Servers given up on for the session (one that could not start, or stopped again after its restart): why,
//! told to the model once, one short line after (issue 51: the whole reason in every round was noise); and
//! whether they are every server the workspace uses, when the code-intelligence tools, which could only
//! fail, are no longer offered.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use crate::locks::lock;

/// A server given up on.
pub(super) struct Failure {
    /// Why: how it ended, what it said, what fixes it.
    full: String,
    /// The line once the model was told why.
    short: String,
    /// The question (`Servers::ask`) that first told it.
    told: Option<u64>,
}

impl Failure {
    pub fn new(full: String, short: String) -> Failure {
        Failure { full, short, told: None }
    }

    /// Why, for question `ask`: the whole reason for every file of the first question that meets it (a
    /// round's block, a tool's answer), the short line for those after.
    pub fn tell(&mut self, ask: u64) -> String {
        match self.told {
            Some(told) if told != ask => self.short.clone(),
            _ => {
                self.told = Some(ask);
                self.full.clone()
            }
        }
    }

    /// The whole reason, telling no one.
    pub fn full(&self) -> &str {
        &self.full
    }
}

/// The names of the servers given up on, and the servers the workspace uses (learned at the first).
#[derive(Default)]
pub(super) struct Down {
    names: Mutex<HashSet<String>>,
    used: OnceLock<Vec<String>>,
}

impl Down {
    /// `name` was given up on. At the first, the servers `root` uses are learned (the look's walk, on a
    /// blocking thread; once per session, and only where a server failed).
    pub async fn add(&self, name: &str, root: &Path) {
        lock(&self.names).insert(name.to_string());
        if self.used.get().is_some() {
            return;
        }
        let root = root.to_path_buf();
        let walk = tokio::task::spawn_blocking(move || super::look::used(&root).0);
        if let Ok(used) = walk.await {
            let _ = self.used.set(used.iter().map(|s| s.name.clone()).collect());
        }
    }

    /// Whether every server the workspace uses was given up on (`false` while that is not known).
    pub fn all(&self) -> bool {
        let Some(used) = self.used.get() else { return false };
        let names = lock(&self.names);
        !used.is_empty() && used.iter().all(|u| names.contains(u))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_told_in_full_to_the_first_question_only() {
        let mut f =
            Failure::new("x could not start: it exited with code 1: error: no".into(), "x could not start".into());
        // Every file of the first question that meets it, in full; then shortly; the full line stays.
        assert_eq!(f.tell(7), "x could not start: it exited with code 1: error: no");
        assert_eq!(f.tell(7), "x could not start: it exited with code 1: error: no");
        assert_eq!(f.tell(8), "x could not start");
        assert_eq!(f.full(), "x could not start: it exited with code 1: error: no");
    }
}
