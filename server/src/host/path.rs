//! Keeping the model's paths inside the workspace: `..`, absolute paths and symlinks that lead out are refused.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The path as the model wrote it (used in messages to the model).
    pub given: String,
    /// Absolute path inside the workspace, symlinks in existing parts resolved.
    pub abs: PathBuf,
    /// The workspace, and the path relative to it: files are opened beneath the workspace through these
    /// (`beneath.rs`), so a symlink swapped in after this check still cannot lead outside.
    pub root: PathBuf,
    pub rel: PathBuf,
}

/// Resolve `given` against the canonical workspace `root`.
pub fn resolve(root: &Path, given: &str) -> Result<ResolvedPath, String> {
    let escapes = || format!("Path escapes workspace: {given}");
    if given.contains('\0') {
        return Err(escapes());
    }
    let joined = if Path::new(given).is_absolute() { PathBuf::from(given) } else { root.join(given) };
    // Lexical normalisation first, so `a/../../x` cannot slip past a later prefix check.
    let mut normal = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                if !normal.pop() {
                    return Err(escapes());
                }
            }
            Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    if !normal.starts_with(root) {
        return Err(escapes());
    }
    // Then follow symlinks in the part that exists: a link inside the workspace may point outside it.
    let mut existing = normal.clone();
    let mut rest = Vec::new();
    let real = loop {
        match std::fs::canonicalize(&existing) {
            Ok(p) => break p,
            Err(_) => {
                // A dangling symlink must not be written through either.
                if std::fs::symlink_metadata(&existing).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(escapes());
                }
                match (existing.file_name().map(|n| n.to_owned()), existing.parent()) {
                    (Some(name), Some(parent)) => {
                        rest.push(name);
                        existing = parent.to_path_buf();
                    }
                    _ => return Err(escapes()),
                }
            }
        }
    };
    if !real.starts_with(root) {
        return Err(escapes());
    }
    let mut abs = real;
    for name in rest.into_iter().rev() {
        abs.push(name);
    }
    let rel = abs.strip_prefix(root).map_err(|_| escapes())?.to_path_buf();
    Ok(ResolvedPath { given: given.to_string(), abs, root: root.to_path_buf(), rel })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_escapes_and_accepts_inside() {
        let tmp = std::env::temp_dir().join(format!("stepwise-path-{}", std::process::id()));
        let root = tmp.join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let root = std::fs::canonicalize(&root).unwrap();
        let outside = tmp.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();

        assert_eq!(resolve(&root, "sub/../a.txt").unwrap().abs, root.join("a.txt"));
        assert_eq!(resolve(&root, "new/dir/b.txt").unwrap().abs, root.join("new/dir/b.txt"));
        let inside_abs = root.join("sub/c.txt");
        assert_eq!(resolve(&root, inside_abs.to_str().unwrap()).unwrap().abs, inside_abs);
        for bad in ["../x", "sub/../../x", "/etc/passwd", "link/secret.txt", "link"] {
            assert_eq!(resolve(&root, bad).unwrap_err(), format!("Path escapes workspace: {bad}"), "{bad}");
        }
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
