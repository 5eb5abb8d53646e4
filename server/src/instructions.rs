//! Project instructions: `AGENTS.md` at the workspace root (else `CLAUDE.md`) and the user's own
//! `$XDG_CONFIG_HOME/stepwise/AGENTS.md`, added to the system prompt under a line naming each file.
//! Read once per run, so the prompt's prefix (cached by the provider) stays byte-stable within the run.

use std::path::{Path, PathBuf};

/// All instruction files together stay under this many bytes; the rest is cut with a note.
pub const MAX_BYTES: usize = 32 * 1024;

/// One instruction file that was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    pub path: PathBuf,
    /// `user` (the config folder's) or `workspace`.
    pub scope: &'static str,
    /// The file's size on disk.
    pub bytes: u64,
    /// The bytes of it that made it into the prompt (less when cut by `MAX_BYTES`).
    pub used: usize,
    /// Set when it could not be read (it is then left out).
    pub error: Option<String>,
}

/// What a run adds to its system prompt, and where it came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    pub files: Vec<InstructionFile>,
    /// The text appended to the system prompt (empty when there is none).
    pub prompt: String,
}

/// `$XDG_CONFIG_HOME/stepwise`, else `~/.config/stepwise`: the user's AGENTS.md and mcp.json live there.
pub fn config_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|h| h.join(".config")))?;
    Some(base.join("stepwise"))
}

/// The files that apply to `root`, user's first (the project's, read last, is closest to the task).
pub fn candidates(root: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut out = Vec::new();
    if let Some(dir) = config_dir() {
        out.push((dir.join("AGENTS.md"), "user"));
    }
    let agents = root.join("AGENTS.md");
    let claude = root.join("CLAUDE.md");
    if agents.is_file() {
        out.push((agents, "workspace"));
    } else if claude.is_file() {
        out.push((claude, "workspace"));
    }
    out
}

/// Reads the instruction files for `root` now.
pub fn load(root: &Path) -> Instructions {
    let mut files = Vec::new();
    let mut prompt = String::new();
    let mut left = MAX_BYTES;
    for (path, scope) in candidates(root) {
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if !meta.is_file() {
            continue;
        }
        let mut file = InstructionFile { path: path.clone(), scope, bytes: meta.len(), used: 0, error: None };
        match read_head(&path, left) {
            Ok(text) if text.trim().is_empty() => {}
            Ok(text) => {
                let cut = (text.len() as u64) < meta.len();
                file.used = text.len();
                left -= text.len();
                prompt.push_str(&format!("\n\nInstructions from {}:\n{}", path.display(), text.trim_end()));
                if cut {
                    prompt.push_str(&format!(
                        "\n[cut: instruction files are limited to {} KiB in all; the rest of {} was left out]",
                        MAX_BYTES / 1024,
                        path.display()
                    ));
                }
            }
            Err(e) => file.error = Some(e.to_string()),
        }
        files.push(file);
    }
    Instructions { files, prompt }
}

/// At most `max` bytes of a file as text, ending on a character boundary.
fn read_head(path: &Path, max: usize) -> std::io::Result<String> {
    let buf = crate::text_file::read(path, max as u64, true)?;
    let text = match String::from_utf8(buf) {
        Ok(t) => t,
        Err(e) => {
            // A cut in the middle of a character, or a file that is not UTF-8: keep the valid part.
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("stepwise-instr-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn workspace_only(root: &Path) -> Instructions {
        let mut i = load(root);
        // The user's own file (if the machine has one) is not part of these tests.
        i.files.retain(|f| f.scope == "workspace");
        i
    }

    #[test]
    fn agents_md_wins_over_claude_md() {
        let root = ws("both");
        std::fs::write(root.join("AGENTS.md"), "use tabs\n").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "use spaces\n").unwrap();
        let i = workspace_only(&root);
        assert_eq!(i.files.len(), 1);
        assert!(i.files[0].path.ends_with("AGENTS.md"));
        assert!(i.prompt.contains(&format!("Instructions from {}:\nuse tabs", root.join("AGENTS.md").display())));
        assert!(!i.prompt.contains("use spaces"));
        std::fs::remove_file(root.join("AGENTS.md")).unwrap();
        let i = workspace_only(&root);
        assert!(i.files[0].path.ends_with("CLAUDE.md"));
        assert!(i.prompt.contains("use spaces"));
    }

    #[test]
    fn long_files_are_cut_with_a_note() {
        let root = ws("long");
        let text = "é".repeat(MAX_BYTES); // two bytes each: twice the limit
        std::fs::write(root.join("AGENTS.md"), &text).unwrap();
        let i = workspace_only(&root);
        let f = &i.files[0];
        assert_eq!(f.bytes, 2 * MAX_BYTES as u64);
        assert!(f.used <= MAX_BYTES && f.used > MAX_BYTES - 4, "{}", f.used);
        assert!(i.prompt.contains("[cut: instruction files are limited to 32 KiB in all"));
    }

    #[test]
    fn nothing_found_adds_nothing() {
        let root = ws("none");
        assert!(workspace_only(&root).files.is_empty());
    }
}
