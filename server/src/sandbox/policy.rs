//! What one sandboxed command may do: the policy `session.rs` makes and the guard hands to `landlock.rs`
//! (Linux) or `seatbelt.rs` (macOS) to impose. Data only, so those two depend on it and not on
//! `session.rs`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::keep::Keeper;

/// What one command may do, made just before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The workspace (canonical).
    pub root: PathBuf,
    /// The session's private temporary folder (`TMPDIR`, and the tools' caches beneath it).
    pub tmp: PathBuf,
    /// `workspace-write` (else only `tmp` is writable).
    pub write: bool,
    pub network: bool,
    /// The folders the user listed in `sandboxWritable` (canonical, existing; writable in either mode).
    pub writable: Vec<PathBuf>,
    /// The session's keeper of the protected paths, which puts back what a command changed there
    /// (`keep/`); `None` in read-only, where nothing in the workspace can be written.
    pub keeper: Option<KeeperRef>,
    /// The session's private network namespace (network off, where one can be made): every command
    /// and background task run under this policy joins it (`guard::spawn`), so they share a loopback
    /// and reach nothing else. `None`: no namespace, and Landlock's TCP rules hold instead.
    pub netns: Option<NetRef>,
}

#[cfg(target_os = "linux")]
pub use super::netns::NetRef;

/// No network namespaces on this system.
#[cfg(not(target_os = "linux"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetRef;

/// The session's keeper, shared by its policies (equal when it is the same keeper).
#[derive(Clone)]
pub struct KeeperRef(pub Arc<Keeper>);

impl PartialEq for KeeperRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for KeeperRef {}

impl std::fmt::Debug for KeeperRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keeper")
    }
}

/// The tools' own variables for the caches they keep under the home folder (where the sandbox does not
/// let them write), pointed into the session's private folder: they work inside, and what a command
/// left in them is removed with the session, so it never reaches a command run later outside.
const CACHES: [(&str, &str); 7] = [
    ("XDG_CACHE_HOME", "cache"),
    ("npm_config_cache", "npm"),
    ("PIP_CACHE_DIR", "pip"),
    ("GOCACHE", "go-build"),
    ("YARN_CACHE_FOLDER", "yarn"),
    ("CCACHE_DIR", "ccache"),
    ("DENO_DIR", "deno"),
];

impl Policy {
    /// Variables the command gets: its temporary folder and the tools' caches beneath it.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let tmp = ["TMPDIR", "TMP", "TEMP"].iter().map(|k| (OsString::from(k), self.tmp.clone().into_os_string()));
        let caches = CACHES.iter().map(|(k, d)| (OsString::from(k), self.tmp.join(d).into_os_string()));
        // npm prints an update notice it fetched from the network: nothing to fetch, nothing to write.
        let quiet = [(OsString::from("npm_config_update_notifier"), OsString::from("false"))];
        tmp.chain(caches).chain(quiet).collect()
    }

    /// The folders a command may write: the workspace (workspace-write), `TMPDIR`, the user's.
    pub fn write_roots(&self) -> Vec<PathBuf> {
        self.write_roots_iter().map(Path::to_path_buf).collect()
    }

    /// `write_roots`, borrowed.
    pub fn write_roots_iter(&self) -> impl Iterator<Item = &Path> {
        let root = self.write.then_some(self.root.as_path());
        std::iter::once(self.tmp.as_path()).chain(root).chain(self.writable.iter().map(PathBuf::as_path))
    }
}

/// The unit tests' policy: workspace-write in `/w`, temporary folder `/t`, the user's `/cache` writable,
/// no network, no keeper.
#[cfg(test)]
pub(super) fn example() -> Policy {
    Policy {
        root: "/w".into(),
        tmp: "/t".into(),
        write: true,
        network: false,
        writable: vec!["/cache".into()],
        keeper: None,
        netns: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_go_to_the_private_folder_and_the_workspace_is_writable_only_in_workspace_write() {
        let p = example();
        let env = p.env();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("TMPDIR"), Some("/t".into()));
        assert_eq!(get("npm_config_cache"), Some("/t/npm".into()));
        assert_eq!(get("XDG_CACHE_HOME"), Some("/t/cache".into()));
        assert_eq!(p.write_roots(), [PathBuf::from("/t"), "/w".into(), "/cache".into()]);
        assert_eq!(Policy { write: false, ..p }.write_roots(), [PathBuf::from("/t"), "/cache".into()]);
    }
}
