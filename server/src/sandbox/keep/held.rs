//! What a kept path held, and putting it back: a file's bytes and mode, a folder, a symlink's target.
//! Kept in stepwise's memory, never in a folder a sandboxed command can write.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// A kept file larger than this is not copied (a protected path is a small text file); such a file
/// cannot be put back, and the result says so.
pub const MAX_FILE: u64 = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    File {
        bytes: Vec<u8>,
        mode: u32,
    },
    Dir {
        mode: u32,
    },
    Link(PathBuf),
    /// Something held here that is not copied (too large, or not a file, folder or symlink).
    Other,
}

impl Held {
    /// Bytes of memory it takes.
    pub fn size(&self) -> usize {
        match self {
            Held::File { bytes, .. } => bytes.len(),
            Held::Link(p) => p.as_os_str().len(),
            _ => 0,
        }
    }
}

/// What `abs` holds now (`None`: nothing), without following a symlink.
pub fn capture(abs: &Path) -> Option<Held> {
    let meta = std::fs::symlink_metadata(abs).ok()?;
    let t = meta.file_type();
    let mode = meta.mode() & 0o7777;
    Some(if t.is_symlink() {
        std::fs::read_link(abs).map(Held::Link).unwrap_or(Held::Other)
    } else if t.is_dir() {
        Held::Dir { mode }
    } else if t.is_file() && meta.len() <= MAX_FILE {
        match read_nofollow(abs) {
            Some(bytes) => Held::File { bytes, mode },
            None => Held::Other,
        }
    } else {
        Held::Other
    })
}

fn read_nofollow(abs: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(abs).ok()?;
    let mut bytes = Vec::new();
    f.by_ref().take(MAX_FILE + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= MAX_FILE).then_some(bytes)
}

/// What happened to a kept path, as the result names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Created,
    Changed,
    Removed,
}

impl Change {
    pub fn word(self) -> &'static str {
        match self {
            Change::Created => "created",
            Change::Changed => "changed",
            Change::Removed => "removed",
        }
    }
}

/// How `now` differs from `before`, if it does. A folder's mode alone is not a change worth undoing
/// its contents for, but is put back too.
pub fn differs(before: Option<&Held>, now: Option<&Held>) -> Option<Change> {
    match (before, now) {
        (None, None) => None,
        (None, Some(_)) => Some(Change::Created),
        (Some(_), None) => Some(Change::Removed),
        (Some(a), Some(b)) if a == b && *a != Held::Other => None,
        (Some(_), Some(_)) => Some(Change::Changed),
    }
}

/// Puts `held` back at `rel` beneath `root` (removes what is there when `held` is `None`). Every folder
/// on the way must be a real folder (made if missing): a symlink there could lead the write out.
pub fn restore(root: &Path, rel: &Path, held: Option<&Held>) -> Result<(), String> {
    if held == Some(&Held::Other) {
        return Err("it was not a small file, folder or symlink, so no copy was kept".into());
    }
    let mut dir = root.to_path_buf();
    let parents: Vec<Component> = rel.parent().map(|p| p.components().collect()).unwrap_or_default();
    for c in parents {
        let Component::Normal(name) = c else { return Err("not a plain path".into()) };
        dir.push(name);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("{} is no longer a folder", dir.display())),
            Err(_) if held.is_none() => return Ok(()),
            Err(_) => std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?,
        }
    }
    let abs = root.join(rel);
    let now = std::fs::symlink_metadata(&abs).ok();
    if let (Some(Held::Dir { mode }), Some(m)) = (held, &now) {
        if m.is_dir() {
            // The folder stays with what it holds (each kept path in it is checked on its own).
            return std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(*mode)).map_err(|e| e.to_string());
        }
    }
    match now {
        Some(m) if m.is_dir() => std::fs::remove_dir_all(&abs),
        Some(_) => std::fs::remove_file(&abs),
        None => Ok(()),
    }
    .map_err(|e| format!("cannot remove what the command left there: {e}"))?;
    match held {
        None | Some(Held::Other) => Ok(()),
        Some(Held::Dir { mode }) => std::fs::DirBuilder::new()
            .create(&abs)
            .and_then(|_| std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(*mode))),
        Some(Held::Link(target)) => std::os::unix::fs::symlink(target, &abs),
        Some(Held::File { bytes, mode }) => {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(*mode)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&abs)
                .and_then(|mut f| {
                    f.write_all(bytes)?;
                    // The umask narrowed the mode given at creation.
                    f.set_permissions(std::fs::Permissions::from_mode(*mode))
                })
        }
    }
    .map_err(|e| format!("cannot write it back: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_folders_and_links_go_back_as_they_were() {
        let root = std::env::temp_dir().join(format!("stepwise-held-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("app")).unwrap();
        std::fs::write(root.join("app/.env"), "K=v\n").unwrap();
        std::fs::set_permissions(root.join("app/.env"), std::fs::Permissions::from_mode(0o600)).unwrap();
        let env = capture(&root.join("app/.env"));
        assert!(matches!(&env, Some(Held::File { bytes, mode: 0o600 }) if bytes == b"K=v\n"));
        // Changed, then replaced by a folder, then its folder by a symlink: back each time.
        std::fs::write(root.join("app/.env"), "K=evil\n").unwrap();
        assert_eq!(differs(env.as_ref(), capture(&root.join("app/.env")).as_ref()), Some(Change::Changed));
        restore(&root, Path::new("app/.env"), env.as_ref()).unwrap();
        assert_eq!(capture(&root.join("app/.env")), env);
        std::fs::remove_file(root.join("app/.env")).unwrap();
        std::fs::create_dir_all(root.join("app/.env/x")).unwrap();
        restore(&root, Path::new("app/.env"), env.as_ref()).unwrap();
        assert_eq!(capture(&root.join("app/.env")), env);
        std::fs::remove_dir_all(root.join("app")).unwrap();
        std::os::unix::fs::symlink("/tmp", root.join("app")).unwrap();
        assert!(restore(&root, Path::new("app/.env"), env.as_ref()).unwrap_err().contains("no longer a folder"));
        std::fs::remove_file(root.join("app")).unwrap();
        restore(&root, Path::new("app/.env"), env.as_ref()).unwrap();
        assert_eq!(capture(&root.join("app/.env")), env);
        // Created: removed.
        std::fs::write(root.join(".env.local"), "x").unwrap();
        restore(&root, Path::new(".env.local"), None).unwrap();
        assert!(!root.join(".env.local").exists());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
