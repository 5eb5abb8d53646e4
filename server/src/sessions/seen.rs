//! What a session's file tools last saw of each file, so `write_file` never silently replaces what
//! someone else (another session, the user, a command) made of a file since this session read or wrote
//! it. `edit_file` needs no such memory: it replaces text it finds, or fails.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::host::preview::text_hash;
use crate::locks;

/// The text a file held when this session last read or wrote it, by its fingerprint (relative paths),
/// for the session itself and apart for each of its child agents (`task`), which run at the same time
/// through the same host: a child's write over what another changed since it read is refused as well.
#[derive(Default)]
pub struct Seen {
    texts: Mutex<HashMap<(Option<String>, PathBuf), u64>>,
}

tokio::task_local! {
    /// The child agent whose calls the running future makes (its `sa-<n>`). A task-local rather than a
    /// parameter: the host between the tools and `Seen` is the session's, shared by its children.
    static AGENT: String;
}

/// Runs `fut` as the child agent `id`: what its file tools see is remembered as its own.
pub async fn as_agent<F: std::future::Future>(id: String, fut: F) -> F::Output {
    AGENT.scope(id, fut).await
}

fn key(rel: &Path) -> (Option<String>, PathBuf) {
    (AGENT.try_with(Clone::clone).ok(), rel.to_path_buf())
}

fn hash(text: &str) -> u64 {
    text_hash(text.as_bytes())
}

impl Seen {
    /// The session read or wrote `rel`, which then held `text`.
    pub fn saw(&self, rel: &Path, text: &str) {
        self.saw_hash(rel, hash(text));
    }

    /// The same, by the text's fingerprint (`preview::text_hash`).
    pub fn saw_hash(&self, rel: &Path, hash: u64) {
        locks::lock(&self.texts).insert(key(rel), hash);
    }

    /// What `rel` holds is not known any more (read only in part): a write over it is not checked.
    pub fn forget(&self, rel: &Path) {
        locks::lock(&self.texts).remove(&key(rel));
    }

    /// Whether `rel`, holding `now` (`None`: no such file), is not what this session last saw of it. A
    /// file it never saw is not stale.
    pub fn stale(&self, rel: &Path, now: Option<&str>) -> bool {
        let seen = locks::lock(&self.texts).get(&key(rel)).copied();
        match (seen, now) {
            (None, _) => false,
            (Some(h), Some(text)) => h != hash(text),
            // Gone since: writing it anew loses nothing of anyone's.
            (Some(_), None) => false,
        }
    }

    /// A new conversation remembers nothing.
    pub fn clear(&self) {
        locks::lock(&self.texts).clear();
    }
}

/// The refusal `write_file` answers with (the contract's text, the path as the model gave it).
pub fn stale_write(given: &str) -> String {
    format!("{given} changed since you last read it; read it again")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_stale_only_when_what_it_holds_is_not_what_was_seen() {
        let seen = Seen::default();
        let p = Path::new("a.txt");
        assert!(!seen.stale(p, Some("anything")), "never seen");
        seen.saw(p, "one");
        assert!(!seen.stale(p, Some("one")));
        assert!(seen.stale(p, Some("two")));
        assert!(!seen.stale(p, None), "removed since: nothing to lose");
        seen.clear();
        assert!(!seen.stale(p, Some("two")));
        assert_eq!(stale_write("./a.txt"), "./a.txt changed since you last read it; read it again");
    }
}
