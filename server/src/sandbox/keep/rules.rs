//! Which paths of the workspace the sandbox keeps as they were (CONTRACT "Sandbox"), at any depth:
//! git's `hooks/` and `config` (of nested repositories and submodules too, and the `.git` entry itself,
//! whose replacement by a `gitdir:` file could point git at other hooks), `.env*`, `.envrc`, `.vscode/`,
//! `AGENTS.md`, `CLAUDE.md`, `.mcp.json`, the top-level Neovim files, and the folders git's
//! `core.hooksPath` names.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

fn names(rel: &Path) -> Vec<String> {
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// Whether `rel` (relative to the workspace) is kept; `hook_dirs` are the `core.hooksPath` folders.
pub fn kept(rel: &Path, hook_dirs: &[PathBuf]) -> bool {
    if hook_dirs.iter().any(|h| rel.starts_with(h)) {
        return true;
    }
    let names = names(rel);
    let Some(file) = names.last() else { return false };
    if let Some(i) = names.iter().position(|n| n == ".git") {
        return git_kept(&names[i + 1..]);
    }
    file == ".env"
        || file.starts_with(".env.")
        || file == ".envrc"
        || names.iter().any(|n| n == ".vscode")
        || file == "agents.md"
        || file == "claude.md"
        || file == ".mcp.json"
        || (names.len() == 1 && matches!(file.as_str(), ".nvim.lua" | ".nvimrc" | ".exrc"))
}

/// Below a `.git`: the entry itself, `config`, `hooks/`, and the same in `modules/...` (submodules).
fn git_kept(tail: &[String]) -> bool {
    match tail {
        [] => true,
        [c] if c == "config" => true,
        [h, ..] if h == "hooks" => true,
        [m, rest @ ..] if m == "modules" => {
            rest.len() >= 2 && (rest.last().is_some_and(|l| l == "config") || rest[1..].iter().any(|n| n == "hooks"))
        }
        _ => false,
    }
}

/// Whether the keeper follows (watches and walks) the folder `rel`: every folder, but inside a `.git`
/// only those that can hold kept paths (not its objects, refs and logs, which `git commit` writes).
pub fn followed(rel: &Path) -> bool {
    let names = names(rel);
    let Some(i) = names.iter().position(|n| n == ".git") else { return true };
    let tail = &names[i + 1..];
    match tail.first().map(String::as_str) {
        None | Some("hooks") => true,
        Some("modules") => !tail.iter().any(|n| SKIPPED_IN_GIT.contains(&n.as_str())),
        _ => false,
    }
}

const SKIPPED_IN_GIT: [&str; 7] = ["objects", "refs", "logs", "lfs", "worktrees", "info", "rr-cache"];

/// The `core.hooksPath` a git config names, as a path relative to the workspace, if it lies inside it.
/// `config` is the config file's path relative to the workspace (`app/.git/config`): a relative hooks
/// path is relative to that repository's working tree.
pub fn hooks_path(root: &Path, config: &Path, text: &[u8]) -> Option<PathBuf> {
    let text = String::from_utf8_lossy(text);
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line.trim_start_matches('[').trim_end_matches(']').trim().eq_ignore_ascii_case("core");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if in_core && key.trim().eq_ignore_ascii_case("hookspath") {
            found = Some(value.trim().trim_matches('"').to_string());
        }
    }
    let value = found?;
    let path = Path::new(&value);
    let worktree = config.ancestors().find(|a| a.file_name() == Some(OsStr::new(".git")))?.parent()?;
    let abs = if path.is_absolute() { path.to_path_buf() } else { root.join(worktree).join(path) };
    let rel = abs.strip_prefix(root).ok()?;
    let clean: PathBuf = rel.components().filter(|c| !matches!(c, Component::CurDir)).collect();
    // `..` could leave the workspace or alias another folder: such a value is not followed here.
    (!clean.components().any(|c| matches!(c, Component::ParentDir)) && !clean.as_os_str().is_empty()).then_some(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_list_at_any_depth() {
        let hooks = [PathBuf::from(".husky")];
        for p in [
            ".git",
            ".git/config",
            ".git/hooks",
            ".git/hooks/pre-commit",
            "vendor/lib/.git/hooks/post-checkout",
            "vendor/lib/.git/config",
            ".git/modules/sub/config",
            ".git/modules/sub/hooks/pre-commit",
            ".env",
            ".env.local",
            "app/.env",
            ".envrc",
            ".vscode",
            ".vscode/settings.json",
            "web/.vscode/tasks.json",
            "AGENTS.md",
            "docs/claude.md",
            ".mcp.json",
            ".nvim.lua",
            ".exrc",
            ".husky/pre-commit",
        ] {
            assert!(kept(Path::new(p), &hooks), "{p}");
        }
        for p in [
            ".git/index",
            ".git/objects/ab/cdef",
            ".git/refs/heads/main",
            ".git/COMMIT_EDITMSG",
            ".git/config.lock",
            ".git/modules/sub/index",
            "src/main.rs",
            ".environment",
            "a/.nvim.lua",
            "target",
            "husky/x",
        ] {
            assert!(!kept(Path::new(p), &hooks), "{p}");
        }
    }

    #[test]
    fn inside_git_only_what_can_hold_kept_paths_is_followed() {
        for p in ["src", ".git", ".git/hooks", ".git/modules/sub", ".git/modules/sub/hooks", "a/.git/hooks"] {
            assert!(followed(Path::new(p)), "{p}");
        }
        for p in [".git/objects", ".git/refs/heads", ".git/logs", ".git/modules/sub/objects"] {
            assert!(!followed(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn the_hooks_path_is_read_relative_to_its_repository() {
        let root = Path::new("/w");
        let conf = b"[core]\n\tbare = false\n\thooksPath = .husky/_\n[remote \"o\"]\n\thookspath = no\n";
        assert_eq!(hooks_path(root, Path::new(".git/config"), conf), Some(PathBuf::from(".husky/_")));
        assert_eq!(hooks_path(root, Path::new("app/.git/config"), conf), Some(PathBuf::from("app/.husky/_")));
        assert_eq!(hooks_path(root, Path::new(".git/config"), b"[core]\nhooksPath = /w/hooks\n"), Some("hooks".into()));
        assert_eq!(hooks_path(root, Path::new(".git/config"), b"[core]\nhooksPath = /etc/h\n"), None);
        assert_eq!(hooks_path(root, Path::new(".git/config"), b"[core]\nhooksPath = ../x\n"), None);
        assert_eq!(hooks_path(root, Path::new(".git/config"), b"[core]\nbare = true\n"), None);
    }
}
