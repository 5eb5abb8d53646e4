//! The keeper: the protected paths of the workspace keep what they held before each sandboxed command.
//! The sandbox lets a command write anywhere beneath the workspace (Landlock only grants, and cannot
//! deny a name that does not exist yet), so after each command the keeper puts back every protected
//! path (`rules.rs`) it created, changed or removed, from the copy it holds in memory (`held.rs`), and
//! the result names each one.
//!
//! The check costs what the command changed, not the workspace's size: the keeper walks the workspace
//! once, at the session's first sandboxed command (copying the protected paths it finds and watching
//! every folder, `watch.rs`), and from then on looks only at the paths the kernel named. Changes made
//! between commands (the user editing `.env`) are taken as the new state before the next command. Where
//! the events cannot be trusted (the queue overflowed, the watch limit, no inotify: macOS, where Seatbelt
//! denies these names itself) the check walks the workspace again.

mod held;
mod rules;
#[cfg(target_os = "linux")]
pub(crate) mod watch;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use held::Change;
use held::{capture, differs, restore, Held};
pub use rules::kept;

use crate::locks;

/// The copies held, all kept paths together, stay under this; past it a path is held as `Other` (its
/// change is reported as one that could not be put back).
const MAX_HELD: usize = 64 * 1024 * 1024;

/// A protected path a command created, changed or removed, and whether it was put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutBack {
    /// Relative to the workspace.
    pub path: PathBuf,
    pub change: Change,
    /// Why it could not be put back, when it could not.
    pub error: Option<String>,
}

pub struct Keeper {
    root: PathBuf,
    state: Mutex<State>,
}

impl std::fmt::Debug for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keeper").field("root", &self.root).finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    primed: bool,
    held: BTreeMap<PathBuf, Held>,
    bytes: usize,
    hook_dirs: Vec<PathBuf>,
    /// A git `config` was held since `hook_dirs` was last read from them: read them again.
    hook_dirs_stale: bool,
    #[cfg(target_os = "linux")]
    watch: Option<watch::Watch>,
    /// Sandboxed commands running now: changes seen while one runs are its own, never taken as the user's.
    active: usize,
}

impl Keeper {
    /// The keeper of the workspace `root` (canonical). Nothing is read until the first command.
    pub fn new(root: &Path) -> Keeper {
        Keeper { root: root.to_path_buf(), state: Mutex::new(State::default()) }
    }

    /// Before a sandboxed command: the first time, the walk; then what changed since the last command
    /// (by the user, while none ran) becomes what is kept.
    pub fn before(&self) {
        let mut s = locks::lock(&self.state);
        if !s.primed {
            s.prime(&self.root);
        } else if s.active == 0 {
            let changed = s.changed(&self.root);
            for path in changed {
                s.hold(&self.root, &path);
            }
            // The folders depend on the held configs alone: read again only when one was held anew.
            if s.hook_dirs_stale {
                s.refresh_hook_dirs(&self.root);
            }
        } else {
            // Another command is running: what changed is its doing, and is put back.
            drop(s.settle(&self.root));
        }
        s.active += 1;
    }

    /// After a sandboxed command (its processes all gone): puts back every protected path it created,
    /// changed or removed, and says which.
    pub fn after(&self) -> Vec<PutBack> {
        let mut s = locks::lock(&self.state);
        s.active = s.active.saturating_sub(1);
        s.settle(&self.root)
    }

    /// The kept paths held now (for tests and `doctor`).
    pub fn held(&self) -> usize {
        locks::lock(&self.state).held.len()
    }
}

impl State {
    fn prime(&mut self, root: &Path) {
        #[cfg(target_os = "linux")]
        {
            self.watch = watch::Watch::new().ok();
        }
        let mut found = Vec::new();
        self.walk(root, Path::new(""), &mut found);
        for p in found {
            self.hold(root, &p);
        }
        self.refresh_hook_dirs(root);
        self.primed = true;
    }

    /// Walks the folder `from` (relative), watching each followed folder and listing the kept paths.
    fn walk(&mut self, root: &Path, from: &Path, found: &mut Vec<PathBuf>) {
        let mut stack = vec![from.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if !rules::followed(&dir) {
                continue;
            }
            let abs = root.join(&dir);
            #[cfg(target_os = "linux")]
            if let Some(w) = self.watch.as_mut() {
                w.add(&dir, &abs);
            }
            let Ok(entries) = std::fs::read_dir(&abs) else { continue };
            for e in entries.flatten() {
                let rel = dir.join(e.file_name());
                if kept(&rel, &self.hook_dirs) {
                    found.push(rel.clone());
                }
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(rel);
                }
            }
        }
    }

    /// Whether the folder `rel` is watched already (so what is made in it is named by the events).
    fn watching(&self, rel: &Path) -> bool {
        #[cfg(target_os = "linux")]
        return self.watch.as_ref().is_some_and(|w| w.watching(rel));
        #[cfg(not(target_os = "linux"))]
        {
            let _ = rel;
            false
        }
    }

    /// Takes what `path` holds now as what it keeps.
    fn hold(&mut self, root: &Path, path: &Path) {
        if path.file_name().is_some_and(|n| n == "config") {
            self.hook_dirs_stale = true;
        }
        let now = capture(&root.join(path));
        if let Some(old) = self.held.remove(path) {
            self.bytes -= old.size();
        }
        if let Some(mut h) = now {
            if self.bytes + h.size() > MAX_HELD {
                h = Held::Other;
            }
            self.bytes += h.size();
            self.held.insert(path.to_path_buf(), h);
        }
    }

    /// The `core.hooksPath` folders the held git configs name; a new one is walked and held.
    fn refresh_hook_dirs(&mut self, root: &Path) {
        self.hook_dirs_stale = false;
        let mut dirs: Vec<PathBuf> = self
            .held
            .iter()
            .filter(|(p, _)| p.file_name().is_some_and(|n| n == "config"))
            .filter_map(|(p, h)| match h {
                Held::File { bytes, .. } => rules::hooks_path(root, p, bytes),
                _ => None,
            })
            .collect();
        dirs.sort();
        dirs.dedup();
        let new: Vec<PathBuf> = dirs.iter().filter(|d| !self.hook_dirs.contains(d)).cloned().collect();
        self.hook_dirs = dirs;
        for d in new {
            let mut found = vec![d.clone()];
            self.walk(root, &d, &mut found);
            for p in found {
                self.hold(root, &p);
            }
        }
    }

    /// The kept paths that may have changed since the last look: those the kernel named, those held
    /// beneath a named folder (moved or removed with it), and those in folders made since (walked).
    /// Without trusted events, all of them (a walk).
    fn changed(&mut self, root: &Path) -> BTreeSet<PathBuf> {
        #[cfg(target_os = "linux")]
        let named: Result<HashMap<PathBuf, bool>, String> = match self.watch.as_mut() {
            Some(w) => w.take(),
            None => Err("no inotify".into()),
        };
        #[cfg(not(target_os = "linux"))]
        let named: Result<HashMap<PathBuf, bool>, String> = Err("no inotify".into());
        let mut out: BTreeSet<PathBuf> = BTreeSet::new();
        let named = match named {
            Ok(named) => named,
            Err(why) => {
                tracing::debug!("protected paths: a full look ({why})");
                let mut found = Vec::new();
                self.walk(root, Path::new(""), &mut found);
                out.extend(found);
                out.extend(self.held.keys().cloned());
                return out;
            }
        };
        for (p, folder) in named {
            if kept(&p, &self.hook_dirs) {
                out.insert(p.clone());
            }
            out.extend(self.held.range(p.clone()..).take_while(|(k, _)| k.starts_with(&p)).map(|(k, _)| k.clone()));
            // A folder made or moved here is walked; only a name an event marked as a folder can be one.
            let new_folder =
                folder && !self.watching(&p) && std::fs::symlink_metadata(root.join(&p)).is_ok_and(|m| m.is_dir());
            if new_folder {
                let mut found = Vec::new();
                self.walk(root, &p, &mut found);
                out.extend(found);
            }
        }
        out
    }

    /// Puts back every kept path that changed, parents before what they hold.
    fn settle(&mut self, root: &Path) -> Vec<PutBack> {
        if !self.primed {
            return Vec::new();
        }
        let candidates = self.changed(root);
        // A repository the command made itself (`git init`) keeps the config and sample hooks git made;
        // any other hook added to it is removed like any other.
        let new_repos: Vec<PathBuf> = candidates
            .iter()
            .filter(|p| p.file_name().is_some_and(|n| n == ".git") && !self.held.contains_key(*p))
            .filter(|p| std::fs::symlink_metadata(root.join(p)).is_ok_and(|m| m.is_dir()))
            .cloned()
            .collect();
        let mut out = Vec::new();
        for path in candidates {
            let before = self.held.get(&path);
            let now = capture(&root.join(&path));
            let Some(change) = differs(before, now.as_ref()) else { continue };
            if change == Change::Created && new_repos.iter().any(|r| made_by_git_init(r, &path)) {
                self.hold(root, &path);
                continue;
            }
            let error = restore(root, &path, before).err();
            out.push(PutBack { path, change, error });
        }
        out
    }
}

/// Whether `path`, in the repository `repo` the command made, is what `git init` makes there.
fn made_by_git_init(repo: &Path, path: &Path) -> bool {
    let Ok(tail) = path.strip_prefix(repo) else { return false };
    let names: Vec<String> = tail.iter().map(|n| n.to_string_lossy().into_owned()).collect();
    match names.as_slice() {
        [] => true,
        [c] => c == "config" || c == "hooks",
        [h, f] => h == "hooks" && f.ends_with(".sample"),
        _ => false,
    }
}

/// The line the model reads after a command whose writes to protected paths were undone.
pub fn note(put_back: &[PutBack]) -> Option<String> {
    if put_back.is_empty() {
        return None;
    }
    let list: Vec<String> = put_back
        .iter()
        .map(|p| match &p.error {
            None => format!("{} ({}, put back)", p.path.display(), p.change.word()),
            Some(e) => format!("{} ({}, NOT put back: {e})", p.path.display(), p.change.word()),
        })
        .collect();
    Some(format!(
        "[sandbox: the command wrote to protected paths, which were put back as they were: {}; \
         running the command outside the sandbox needs the user's approval]",
        list.join(", ")
    ))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_hooks_folder_the_user_names_between_commands_is_kept_and_a_folder_a_command_makes_is_looked_into() {
        let root = std::env::temp_dir().join(format!("stepwise-keeper-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        write(&root, ".git/config", "[core]\n\tbare = false\n");
        write(&root, "src/a.rs", "fn main() {}\n");
        let root = root.canonicalize().unwrap();
        let keeper = Keeper::new(&root);
        keeper.before();
        write(&root, "src/a.rs", "fn main() { println!(); }\n");
        assert!(keeper.after().is_empty(), "an ordinary file is the command's to change");
        // Between commands the user points git at `.husky` and writes a hook there.
        write(&root, ".git/config", "[core]\n\tbare = false\n\thooksPath = .husky\n");
        write(&root, ".husky/pre-commit", "npm test\n");
        keeper.before();
        write(&root, ".husky/pre-commit", "curl evil\n");
        // A folder the command makes, a protected path inside it.
        write(&root, "new/deeper/.env", "KEY=theirs\n");
        let put_back: Vec<(String, Change)> =
            keeper.after().into_iter().map(|p| (p.path.display().to_string(), p.change)).collect();
        // In the order of the paths (parents before what they hold).
        assert_eq!(
            put_back,
            [(".husky/pre-commit".to_string(), Change::Changed), ("new/deeper/.env".to_string(), Change::Created)]
        );
        assert_eq!(std::fs::read_to_string(root.join(".husky/pre-commit")).unwrap(), "npm test\n");
        assert!(!root.join("new/deeper/.env").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
