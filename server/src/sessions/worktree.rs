//! A session's own copy of the folder: a git worktree on the branch `stepwise/<session>` under the state
//! directory, or, where the folder is no git repository (or one without a commit yet), a copy of its
//! followed files (copy-on-write clones where the file system has them). Nothing the session does there
//! reaches the folder until its changes are applied (`apply.rs`).
//!
//! The worktree starts as the folder is: checked out from HEAD, then the folder's uncommitted changes
//! (modified, added, deleted and untracked files that are not ignored; submodules' files) copied over and
//! committed on its branch as its first commit, so the session sees what the user sees. That commit (or,
//! for a copy and for the submodules' files, a manifest of what each file held) is the base: a file the session changed is applied only
//! where the folder still holds what the base holds, and is a conflict otherwise.
//!
//! git runs with `core.hooksPath` pointing nowhere: making a worktree runs none of the repository's hooks.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::checkpoint::Hash;

/// How a worktree's start is known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Base {
    /// A git worktree: `commit` on its branch holds the folder as it was; `sub` is the folder's path
    /// inside its repository (`""` at the top).
    Git { commit: String, sub: String },
    /// A copy: what each followed file held (the manifest beside the session's state).
    Copy,
}

/// A worktree made for a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// The worktree's (or copy's) top.
    pub top: PathBuf,
    /// The session's workspace: the top, or the folder's place inside it.
    pub path: PathBuf,
    pub branch: Option<String>,
    pub base: Base,
    /// What git writes outside the worktree for a commit in it (the repository's objects, refs and logs,
    /// and the worktree's own folder in `.git/worktrees/`): writable in its sandbox, as the folder's own
    /// `.git` is for a session in the folder (never its hooks or config).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git_dirs: Vec<PathBuf>,
}

/// A file the session changed in its worktree: what it held at the start (its hash; `None`: absent), and
/// what it holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Relative to the session's workspace (and the folder), `/`-separated.
    pub rel: String,
    pub base: Option<Hash>,
    pub now: Now,
}

/// What a path holds now, as an apply can carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Now {
    Absent,
    File(Vec<u8>),
    /// Not a regular file an apply carries (a link, a folder, a special file, over the size limit), why.
    Other(String),
}

impl Now {
    fn hash(&self) -> Option<Option<Hash>> {
        match self {
            Now::Absent => Some(None),
            Now::File(b) => Some(Some(Hash::of(b))),
            Now::Other(_) => None,
        }
    }

    /// Whether it holds what `base` says (a hash, or `None`: nothing).
    pub fn is(&self, base: Option<Hash>) -> bool {
        self.hash() == Some(base)
    }
}

/// What each file held at the start, for a copy (and the applied files of either kind).
pub type Manifest = BTreeMap<String, Option<Hash>>;

/// Runs git in `dir` with the repository's hooks off; its output, or an error naming what failed.
fn git(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, String> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(["-c", "core.hooksPath=/dev/null", "-c", "core.quotePath=false"]).args(args);
    // The user's environment must not point git at another repository.
    for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY"] {
        cmd.env_remove(v);
    }
    cmd.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run git: {e}"))?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(bytes).map_err(|e| format!("cannot talk to git: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    Err(format!("git {} failed: {first}", args.first().copied().unwrap_or_default()))
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// NUL-separated names (`-z` output).
fn names(bytes: &[u8]) -> impl Iterator<Item = &str> {
    bytes.split(|b| *b == 0).filter(|n| !n.is_empty()).filter_map(|n| std::str::from_utf8(n).ok())
}

/// Where a folder's worktrees live: `<state>/worktrees/<folder>-<session>`.
pub fn location(state: &Path, folder: &Path, id: &str) -> PathBuf {
    let name = crate::host::folder_name(folder);
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(40)
        .collect();
    state.join("worktrees").join(format!("{safe}-{id}"))
}

/// The repository `folder` (canonical) is in, with HEAD's commit: `None` when it is in none, or in one
/// without a commit yet (a copy is made then).
fn repository(folder: &Path) -> Option<(PathBuf, String)> {
    let top = git(folder, &["rev-parse", "--show-toplevel"], None).ok().map(text)?;
    let head = git(folder, &["rev-parse", "--verify", "-q", "HEAD"], None).ok().map(text)?;
    let top = std::fs::canonicalize(top).ok()?;
    Some((top, head))
}

/// Makes session `id`'s worktree of `folder` (canonical) at `at` (from `location`); nothing is left there
/// when it fails.
pub fn make(folder: &Path, at: &Path, id: &str, manifest: &Path) -> Result<Worktree, String> {
    if at.exists() {
        return Err(format!("{} already exists", at.display()));
    }
    let made = match repository(folder) {
        Some((top, head)) => make_git(folder, &top, &head, at, id, manifest),
        None => make_copy(folder, at, manifest),
    };
    if made.is_err() {
        let _ = std::fs::remove_dir_all(at);
    }
    made
}

fn make_git(folder: &Path, top: &Path, head: &str, at: &Path, id: &str, manifest: &Path) -> Result<Worktree, String> {
    let branch = format!("stepwise/{id}");
    if git(top, &["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")], None).is_ok() {
        return Err(format!(
            "the branch {branch} already exists in {}; delete it or start another session",
            top.display()
        ));
    }
    let at_s = at.to_str().ok_or("the state directory's path is not UTF-8")?;
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
    }
    git(top, &["worktree", "add", "-q", "-b", &branch, at_s, head], None)?;
    let undo = |e: String| {
        let _ = git(top, &["worktree", "remove", "--force", at_s], None);
        let _ = git(top, &["branch", "-D", &branch], None);
        e
    };
    let (overlaid, in_submodules) = overlay(top, at).map_err(undo)?;
    if !overlaid.is_empty() {
        let list: Vec<u8> = overlaid.iter().flat_map(|p| p.bytes().chain([0])).collect();
        git(at, &["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"], Some(&list)).map_err(undo)?;
        let message = "stepwise: the folder's uncommitted changes when the session began";
        let who = ["-c", "user.name=stepwise", "-c", "user.email=stepwise@localhost", "-c", "commit.gpgsign=false"];
        let args: Vec<&str> =
            who.iter().copied().chain(["commit", "-q", "--no-verify", "--allow-empty", "-m", message]).collect();
        git(at, &args, None).map_err(undo)?;
    }
    let commit = git(at, &["rev-parse", "HEAD"], None).map(text).map_err(undo)?;
    let sub = folder.strip_prefix(top).unwrap_or(Path::new("")).to_string_lossy().into_owned();
    // The submodules' files are in no commit of the worktree's: what each held at the start is the base.
    let prefix = if sub.is_empty() { String::new() } else { format!("{sub}/") };
    let start: Manifest = in_submodules
        .iter()
        .filter_map(|k| Some((k.strip_prefix(&prefix)?.to_string(), std::fs::read(at.join(k)).ok()?)))
        .map(|(k, bytes)| (k, Some(Hash::of(&bytes))))
        .collect();
    if !start.is_empty() {
        write_manifest(manifest, &start).map_err(undo)?;
    }
    let path = if sub.is_empty() { at.to_path_buf() } else { at.join(&sub) };
    let dirs =
        git(at, &["rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir"], None).map_err(undo)?;
    let dirs: Vec<PathBuf> = String::from_utf8_lossy(&dirs).lines().map(PathBuf::from).collect();
    let git_dirs = match dirs.as_slice() {
        [common, own] => ["objects", "refs", "logs"].iter().map(|d| common.join(d)).chain([own.clone()]).collect(),
        _ => Vec::new(),
    };
    Ok(Worktree { top: at.to_path_buf(), path, branch: Some(branch), base: Base::Git { commit, sub }, git_dirs })
}

/// Copies the repository's uncommitted changes and its submodules' files from `top` into the worktree
/// `at`: the paths copied or removed (relative to the top), for the first commit, and the submodules'
/// files copied (not links).
fn overlay(top: &Path, at: &Path) -> Result<(Vec<String>, Vec<String>), String> {
    let status = git(
        top,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"],
        None,
    )?;
    let mut paths = Vec::new();
    for entry in names(&status) {
        let Some(rel) = entry.get(3..) else { continue };
        copy_one(top, at, rel)?;
        paths.push(rel.to_string());
    }
    let mut files = Vec::new();
    for rel in submodules(top, ".")? {
        let from = top.join(&rel);
        if from.is_dir() {
            for (key, link) in crate::checkpoint::followed(&from) {
                copy_one(&from, &at.join(&rel), &key)?;
                if !link {
                    files.push(format!("{rel}/{key}"));
                }
            }
        }
    }
    Ok((paths, files))
}

/// The submodules' paths beneath `spec` (relative to the top `dir`), from its index.
fn submodules(dir: &Path, spec: &str) -> Result<Vec<String>, String> {
    let staged = git(dir, &["ls-files", "-s", "-z", "--", spec], None)?;
    let links = names(&staged).filter(|l| l.starts_with("160000 "));
    Ok(links.filter_map(|l| Some(l.split_once('\t')?.1.to_string())).collect())
}

/// Makes `to/rel` what `from/rel` is: the same bytes and mode (a clone where the file system has them),
/// the same link, or nothing.
fn copy_one(from: &Path, to: &Path, rel: &str) -> Result<(), String> {
    let (src, dst) = (from.join(rel), to.join(rel));
    let fail = |e: std::io::Error| format!("cannot copy {rel}: {e}");
    let meta = match std::fs::symlink_metadata(&src) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return match std::fs::remove_file(&dst) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(fail(e)),
                _ => Ok(()),
            };
        }
        Err(e) => return Err(fail(e)),
    };
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    let _ = std::fs::remove_file(&dst);
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&src).map_err(fail)?;
        return std::os::unix::fs::symlink(target, &dst).map_err(fail);
    }
    if !meta.is_file() {
        return Ok(());
    }
    clone_or_copy(&src, &dst).map_err(fail)
}

/// A copy-on-write clone where the file system makes one, else a copy (`std::fs::copy` keeps the mode).
fn clone_or_copy(src: &Path, dst: &Path) -> std::io::Result<()> {
    let file = std::fs::File::open(src)?;
    if let (Some(dir), Some(name)) = (dst.parent(), dst.file_name()) {
        let dir = std::fs::File::open(dir)?;
        let name = std::ffi::CString::new(name.as_encoded_bytes()).map_err(std::io::Error::other)?;
        match crate::checkpoint::clone_into(&file, &dir, &name) {
            Ok(_) => return std::fs::set_permissions(dst, file.metadata()?.permissions()),
            Err(e) if crate::checkpoint::clone_refused(&e) => {}
            Err(e) => return Err(e),
        }
    }
    std::fs::copy(src, dst).map(|_| ())
}

fn make_copy(folder: &Path, at: &Path, manifest_file: &Path) -> Result<Worktree, String> {
    std::fs::create_dir_all(at).map_err(|e| format!("cannot make {}: {e}", at.display()))?;
    let mut manifest = Manifest::new();
    for (key, link) in crate::checkpoint::followed(folder) {
        copy_one(folder, at, &key)?;
        if !link {
            let bytes = std::fs::read(folder.join(&key)).map_err(|e| format!("cannot read {key}: {e}"))?;
            manifest.insert(key, Some(Hash::of(&bytes)));
        }
    }
    write_manifest(manifest_file, &manifest)?;
    Ok(Worktree { top: at.to_path_buf(), path: at.to_path_buf(), branch: None, base: Base::Copy, git_dirs: Vec::new() })
}

pub fn read_manifest(file: &Path) -> Manifest {
    std::fs::read(file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

pub fn write_manifest(file: &Path, manifest: &Manifest) -> Result<(), String> {
    let bytes = serde_json::to_vec(manifest).map_err(|e| e.to_string())?;
    crate::store::write_atomic(file, &bytes).map_err(|e| format!("cannot write {}: {e}", file.display()))
}

impl Worktree {
    /// Why the session cannot work or apply, if its worktree's folder is gone (deleted by hand): its
    /// conversation is kept; its changes went with the folder.
    pub fn gone(&self) -> Option<String> {
        (!self.top.is_dir()).then(|| format!("the worktree {} is gone (removed by hand?)", self.top.display()))
    }

    /// What the session changed since its start, less what was applied already (`applied`: what each
    /// applied file held then, which is its start from then on).
    pub fn changes(&self, manifest: &Manifest) -> Result<Vec<Change>, String> {
        if let Some(why) = self.gone() {
            return Err(why);
        }
        let mut out = Vec::new();
        let mut consider = |rel: String, base: Option<Hash>| {
            let now = read_now(&self.path, &rel);
            if !now.is(base) {
                out.push(Change { rel, base, now });
            }
        };
        match &self.base {
            Base::Copy => {
                let mut seen = std::collections::HashSet::new();
                for (key, link) in crate::checkpoint::followed(&self.path) {
                    if link {
                        continue;
                    }
                    seen.insert(key.clone());
                    let base = manifest.get(&key).copied().flatten();
                    consider(key, base);
                }
                for (key, base) in manifest.iter().filter(|(k, _)| !seen.contains(*k)) {
                    consider(key.clone(), *base);
                }
            }
            Base::Git { commit, sub } => {
                let spec = if sub.is_empty() { ".".to_string() } else { sub.clone() };
                let tracked = git(
                    &self.top,
                    &["diff", "--name-only", "-z", "--no-renames", "--ignore-submodules=all", commit, "--", &spec],
                    None,
                )?;
                let others = git(&self.top, &["ls-files", "--others", "--exclude-standard", "-z", "--", &spec], None)?;
                let mut listed: Vec<String> = names(&tracked).chain(names(&others)).map(str::to_string).collect();
                // A submodule's files, which git does not follow in the worktree (it has no repository there).
                for rel in submodules(&self.top, &spec)? {
                    let files = crate::checkpoint::followed(&self.top.join(&rel));
                    listed.extend(files.into_iter().filter(|(_, link)| !link).map(|(k, _)| format!("{rel}/{k}")));
                }
                // Files applied since, changed back or not: compared with what was applied.
                let prefix = if sub.is_empty() { String::new() } else { format!("{sub}/") };
                listed.extend(manifest.keys().map(|k| format!("{prefix}{k}")));
                listed.sort();
                listed.dedup();
                for top_rel in listed {
                    let Some(rel) = top_rel.strip_prefix(&prefix).map(str::to_string) else { continue };
                    let base = match manifest.get(&rel) {
                        Some(h) => *h,
                        None => git(&self.top, &["cat-file", "blob", &format!("{commit}:{top_rel}")], None)
                            .ok()
                            .map(|b| Hash::of(&b)),
                    };
                    consider(rel, base);
                }
            }
        }
        out.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(out)
    }

    /// Removes the worktree (and its branch): what it held is gone.
    pub fn remove(&self, folder: &Path) -> Result<(), String> {
        if let (Some(branch), Some((top, _))) = (&self.branch, repository(folder)) {
            let at = self.top.to_str().ok_or("the worktree's path is not UTF-8")?;
            if self.top.exists() {
                git(&top, &["worktree", "remove", "--force", at], None)?;
            } else {
                // Deleted by hand: git is told it is gone.
                let _ = git(&top, &["worktree", "prune"], None);
            }
            let _ = git(&top, &["branch", "-D", branch], None);
        }
        match std::fs::remove_dir_all(&self.top) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("cannot remove {}: {e}", self.top.display()))
            }
            _ => Ok(()),
        }
    }
}

/// The largest file an apply carries (a larger one is a conflict: it is not read).
const MAX_FILE: u64 = 64 << 20;

/// What `rel` holds beneath `root` now. Opened beneath `root` without following a symlink (a link
/// swapped in cannot lead the read outside), without waiting on a FIFO, and bounded.
pub fn read_now(root: &Path, rel: &str) -> Now {
    use std::io::Read;
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let file = match crate::host::beneath::open(root, Path::new(rel), flags, 0) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Now::Absent,
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Now::Absent,
        Err(e) if crate::host::beneath::is_escape(&e) || e.raw_os_error() == Some(libc::ELOOP) => {
            return Now::Other("a symbolic link".into())
        }
        Err(e) => return Now::Other(e.to_string()),
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return Now::Other(e.to_string()),
    };
    if !meta.is_file() {
        return Now::Other("not a regular file".into());
    }
    if meta.len() > MAX_FILE {
        return Now::Other(format!("over {} MB", MAX_FILE >> 20));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    match file.take(MAX_FILE).read_to_end(&mut bytes) {
        Ok(_) => Now::File(bytes),
        Err(e) => Now::Other(e.to_string()),
    }
}
