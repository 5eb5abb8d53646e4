//! Skills (the seeds' s05, in the Agent Skills format): folders holding a `SKILL.md`, its frontmatter a
//! `name` and a `description`, its body the know-how, beside it any `scripts/` and `references/`. The
//! system prompt lists them one a line (`catalogue`); the body comes into the conversation only when the
//! model calls `load_skill` or the user types `/<name>` (`prompt.rs`).
//!
//! Found once per run (`find.rs`; read ahead while the run is prepared: `agent/ahead.rs`), in `<workspace>/.agents/skills/`, `<workspace>/.claude/skills/`,
//! `~/.agents/skills/` and `$XDG_CONFIG_HOME/stepwise/skills/`, in that order: a name found twice is the
//! first folder's (the workspace's wins), the other said by `stepwise doctor`. Discovery reads only each
//! `SKILL.md`'s head, as far as its frontmatter goes (one call for most); the body is read when a skill is
//! loaded.
//!
//! The workspace's files are read without trusting them (the model can write them): opened beneath the
//! workspace, so a symlink cannot lead the read out of it, without waiting on a FIFO, up to a bound.

mod find;
pub(crate) mod frontmatter;
mod prompt;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

pub use find::{find, folders};
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

/// The bytes as text: a cut in the middle of a character at the bound is cut off, other bad bytes refused.
fn text(bytes: &[u8], cut: bool) -> Result<&str, String> {
    match std::str::from_utf8(bytes) {
        Ok(t) => Ok(t),
        Err(e) if cut && e.error_len().is_none() => Ok(std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or("")),
        Err(_) => Err("is not UTF-8 text".into()),
    }
}

/// A skill's name, description and whether only the user calls it, from the head of its file: up to the
/// frontmatter's closing line, or `cut` where it filled what discovery reads without one.
fn head_meta(folder: &str, bytes: &[u8], cut: bool) -> Result<Skill, String> {
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
        let d = &self.description;
        // Most are one line of printable ASCII already: one pass over their bytes, no splitting (the
        // catalogue of fifty skills is made before the first request).
        let b = d.as_bytes();
        let plain = b.iter().all(|c| (b' '..=b'~').contains(c))
            && b.first() != Some(&b' ')
            && b.last() != Some(&b' ')
            && !b.windows(2).any(|w| w == b"  ");
        if plain {
            return d.clone();
        }
        d.split_whitespace().collect::<Vec<_>>().join(" ")
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
                .and_then(|w| find::open_in(&w, rel, 0))
                .and_then(|f| crate::text_file::read_from(f, MAX_BYTES + 1)),
            None => crate::text_file::read(&path, MAX_BYTES + 1, true),
        }
        .map_err(|e| format!("{} {}", path.display(), find::read_error(&e)))?;
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
