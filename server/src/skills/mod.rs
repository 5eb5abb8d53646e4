//! Skills (the seeds' s05, in the Agent Skills format): folders holding a `SKILL.md`, its frontmatter a
//! `name` and a `description`, its body the know-how, beside it any `scripts/` and `references/`. The
//! system prompt lists them one a line (`catalogue`); the body comes into the conversation only when the
//! model calls `load_skill` or the user types `/<name>` (`prompt.rs`).
//!
//! Found once per run (`find`), in `<workspace>/.agents/skills/`, `<workspace>/.claude/skills/`,
//! `~/.agents/skills/` and `$XDG_CONFIG_HOME/stepwise/skills/`, in that order: a name found twice is the
//! first folder's (the workspace's wins), the other said by `stepwise doctor`. Discovery reads each
//! `SKILL.md`'s head once (one read: its frontmatter), so fifty skills cost little before the first request.
//!
//! The workspace's files are read without trusting them (the model can write them): opened beneath the
//! workspace, so a symlink cannot lead the read out of it, without waiting on a FIFO, up to a bound.

mod frontmatter;
mod prompt;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use prompt::{is_block, CATALOGUE_MAX, HEADING};

/// The file that makes a folder a skill.
pub const FILE: &str = "SKILL.md";
/// What discovery reads of each `SKILL.md`: the frontmatter must close within it.
const HEAD_BYTES: u64 = 16 * 1024;
/// A skill's file is read up to this; the body past it is left out, with a note saying where it is.
pub const MAX_BYTES: u64 = 256 * 1024;
/// Folders read in one skills folder at most (memory stays bounded; the rest is said).
const MAX_PER_FOLDER: usize = 1000;
/// The format's limits.
const NAME_MAX: usize = 64;
const DESCRIPTION_MAX: usize = 1024;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The workspace's `.agents/skills/` or `.claude/skills/`.
    Workspace,
    /// The user's `~/.agents/skills/` or `$XDG_CONFIG_HOME/stepwise/skills/`.
    User,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Workspace => "workspace",
            Scope::User => "user",
        }
    }
}

/// One skill that was found and is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its folder (what `load_skill` names, so its scripts and references can be read and run).
    pub dir: PathBuf,
    pub scope: Scope,
    /// `disable-model-invocation: true`: the user calls it (`/<name>`); the model is not told of it.
    pub user_only: bool,
    /// A workspace skill's `SKILL.md` relative to the workspace: read beneath it.
    rel: Option<PathBuf>,
}

/// A `SKILL.md` that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub problem: String,
}

/// A skill hidden by another of its name found first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    pub name: String,
    pub dir: PathBuf,
    pub by: PathBuf,
}

/// The skills of one workspace, as one run sees them.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    /// In the order found (the folders' order, names sorted within each folder).
    pub list: Vec<Skill>,
    pub problems: Vec<Problem>,
    pub hidden: Vec<Hidden>,
    root: PathBuf,
}

/// The skills folders for `root`, in order: the workspace's two (relative to it), then the user's two.
pub fn folders(root: &Path) -> Vec<(PathBuf, Option<PathBuf>, Scope)> {
    let mut out = Vec::new();
    for rel in [".agents/skills", ".claude/skills"] {
        out.push((root.join(rel), Some(PathBuf::from(rel)), Scope::Workspace));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let user = home.map(|h| h.join(".agents/skills")).into_iter();
    for dir in user.chain(crate::instructions::config_dir().map(|d| d.join("skills"))) {
        // A workspace that is the home folder: its `.agents/skills` is read once, as the workspace's.
        if !out.iter().any(|(d, _, _)| *d == dir) {
            out.push((dir, None, Scope::User));
        }
    }
    out
}

/// Finds the skills for the workspace `root` now.
pub fn find(root: &Path) -> Skills {
    find_in(root, folders(root))
}

/// Finds the skills in `folders` (`folders`' kind) for the workspace `root`.
fn find_in(root: &Path, folders: Vec<(PathBuf, Option<PathBuf>, Scope)>) -> Skills {
    let mut skills = Skills { root: root.to_path_buf(), ..Default::default() };
    // The workspace, opened once: its skills folders are opened beneath it, and each skill beneath its folder.
    let workspace = std::fs::File::open(root);
    for (dir, rel, scope) in folders {
        let within = match &rel {
            None => None,
            Some(rel) => match workspace.as_ref().map_err(clone).and_then(|w| open_in(w, rel, libc::O_DIRECTORY)) {
                Ok(d) => Some(d),
                Err(e) if absent(&e) => continue,
                Err(e) => {
                    skills.problems.push(Problem { path: dir, problem: read_error(&e) });
                    continue;
                }
            },
        };
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if absent(&e) => continue,
            Err(e) => {
                skills.problems.push(Problem { path: dir, problem: format!("cannot be read: {e}") });
                continue;
            }
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        if names.len() > MAX_PER_FOLDER {
            let problem = format!("holds {} folders; only the first {MAX_PER_FOLDER} were read", names.len());
            skills.problems.push(Problem { path: dir.clone(), problem });
            names.truncate(MAX_PER_FOLDER);
        }
        for name in names {
            let folder = dir.join(&name);
            let file = Path::new(&name).join(FILE);
            let rel = rel.as_ref().map(|r| r.join(&file));
            let head = match (&within, &rel, &workspace) {
                (Some(d), Some(rel), Ok(w)) => match open_in(d, &file, 0) {
                    // A skill linked from elsewhere in the workspace (`.claude/skills/x` -> `../../.agents/...`):
                    // beneath the workspace is bound enough.
                    Err(e) if crate::host::beneath::is_escape(&e) => open_in(w, rel, 0),
                    other => other,
                }
                .and_then(|f| crate::text_file::read_from(f, HEAD_BYTES)),
                _ => crate::text_file::read(&folder.join(FILE), HEAD_BYTES, true),
            };
            let found = match head {
                Ok(bytes) => head_meta(&name, &bytes),
                // A folder without a SKILL.md, or a file: not a skill.
                Err(e) if absent(&e) => continue,
                Err(e) => Err(read_error(&e)),
            };
            match found {
                Ok(meta) => skills.add(Skill { dir: folder, scope, rel, ..meta }),
                Err(problem) => skills.problems.push(Problem { path: folder.join(FILE), problem }),
            }
        }
    }
    skills
}

/// Not there (or not a folder where one was named): nothing to find, nothing to say.
fn absent(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory)
}

fn clone(e: &std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), e.to_string())
}

fn read_error(e: &std::io::Error) -> String {
    if crate::host::beneath::is_escape(e) {
        "leads out of the workspace (a symlink)".into()
    } else {
        format!("cannot be read: {e}")
    }
}

/// `rel` opened beneath the folder `dir` (a symlink leading out of it is refused), without blocking.
fn open_in(dir: &std::fs::File, rel: &Path, flags: libc::c_int) -> std::io::Result<std::fs::File> {
    crate::host::beneath::open_in(dir, rel, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | flags, 0)
}

/// The bytes as text: a cut in the middle of a character at the bound is cut off, other bad bytes refused.
fn text(bytes: &[u8], cut: bool) -> Result<&str, String> {
    match std::str::from_utf8(bytes) {
        Ok(t) => Ok(t),
        Err(e) if cut && e.error_len().is_none() => Ok(std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or("")),
        Err(_) => Err("is not UTF-8 text".into()),
    }
}

/// A skill's name, description and whether only the user calls it, from the head of its file.
fn head_meta(folder: &str, bytes: &[u8]) -> Result<Skill, String> {
    let cut = bytes.len() as u64 >= HEAD_BYTES;
    let head = text(bytes, cut)?;
    let front = match frontmatter::parse(head) {
        Err(e) if cut && e.contains("closing") => {
            return Err(format!("the frontmatter does not close within the first {} KiB", HEAD_BYTES / 1024))
        }
        other => other?,
    };
    meta(folder, &front)
}

/// The fields the format requires, checked as it says.
fn meta(folder: &str, front: &frontmatter::Frontmatter) -> Result<Skill, String> {
    let field = |key: &str| match front.fields.get(key) {
        None => Err(format!("no `{key}` in the frontmatter")),
        Some(None) => Err(format!("`{key}` must be text")),
        Some(Some(s)) => Ok(s.text.trim()),
    };
    let name = field("name")?;
    check_name(name)?;
    if name != folder {
        return Err(format!("`name` is `{name}` but the folder is `{folder}`: they must be the same"));
    }
    let description = field("description")?;
    if description.is_empty() {
        return Err("`description` is empty".into());
    }
    let chars = description.chars().count();
    if chars > DESCRIPTION_MAX {
        return Err(format!("`description` has {chars} characters; at most {DESCRIPTION_MAX}"));
    }
    let user_only = match front.fields.get("disable-model-invocation") {
        None => false,
        Some(Some(s)) if !s.quoted && matches!(s.text.as_str(), "true" | "True" | "TRUE") => true,
        Some(Some(s)) if !s.quoted && matches!(s.text.as_str(), "false" | "False" | "FALSE" | "") => false,
        Some(_) => return Err("`disable-model-invocation` must be true or false".into()),
    };
    Ok(Skill {
        name: name.to_string(),
        description: description.to_string(),
        dir: PathBuf::new(),
        scope: Scope::User,
        user_only,
        rel: None,
    })
}

/// The format's rule: 1 to 64 of `a-z`, `0-9` and `-`, no `-` first, last or twice in a row.
pub fn check_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("`name` `{name}` {why}"));
    if name.is_empty() {
        return bad("is empty");
    }
    if name.len() > NAME_MAX {
        return bad(&format!("is longer than {NAME_MAX} characters"));
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return bad("may hold only lowercase letters, digits and hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return bad("may not begin or end with a hyphen, or hold two in a row");
    }
    Ok(())
}

impl Skill {
    /// The description on one line (a YAML block's lines joined), as the catalogue and the editors' menus show it.
    pub fn one_line(&self) -> String {
        self.description.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl Skills {
    fn add(&mut self, skill: Skill) {
        match self.list.iter().find(|s| s.name == skill.name) {
            Some(first) => {
                self.hidden.push(Hidden { name: skill.name, dir: skill.dir, by: first.dir.clone() });
            }
            None => self.list.push(skill),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.list.iter().find(|s| s.name == name)
    }

    /// The skills the model is told of (all but those only the user calls).
    pub fn for_model(&self) -> impl Iterator<Item = &Skill> {
        self.list.iter().filter(|s| !s.user_only)
    }

    /// Whether the model is offered `load_skill`: it has a skill to load.
    pub fn offered(&self) -> bool {
        self.for_model().next().is_some()
    }

    /// A skill's body (its file read again, up to `MAX_BYTES`, checked again: it may have changed since the
    /// run found it), with a note when it was cut.
    pub fn body(&self, skill: &Skill) -> Result<String, String> {
        let path = skill.dir.join(FILE);
        let bytes = match &skill.rel {
            Some(rel) => std::fs::File::open(&self.root)
                .and_then(|w| open_in(&w, rel, 0))
                .and_then(|f| crate::text_file::read_from(f, MAX_BYTES + 1)),
            None => crate::text_file::read(&path, MAX_BYTES + 1, true),
        }
        .map_err(|e| format!("{} {}", path.display(), read_error(&e)))?;
        let cut = bytes.len() as u64 > MAX_BYTES;
        let text =
            text(&bytes[..bytes.len().min(MAX_BYTES as usize)], cut).map_err(|e| format!("{} {e}", path.display()))?;
        let front = frontmatter::parse(text).map_err(|e| format!("{}: {e}", path.display()))?;
        meta(&skill.name, &front).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut body = text[front.body_at..].trim().to_string();
        if cut {
            body.push_str(&format!(
                "\n[cut: a skill is read up to {} KiB; the rest is in {}]",
                MAX_BYTES / 1024,
                path.display()
            ));
        }
        Ok(body)
    }
}
