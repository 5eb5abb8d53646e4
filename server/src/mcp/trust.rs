//! A workspace's `.mcp.json` runs commands the moment its servers start, and a cloned repository can
//! carry one: its servers start only once the user trusted that file with that content. Trust is kept
//! in the state directory, one line per file and content hash; a changed file is asked about again.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn file() -> Option<PathBuf> {
    crate::trust::state_dir().map(|d| d.join("trusted-mcp"))
}

fn line(path: &Path, content: &str) -> String {
    let hash: String = Sha256::digest(content.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!("{}\t{hash}", path.display())
}

/// Whether the user trusted `path` with this `content`.
pub fn is_trusted(path: &Path, content: &str) -> bool {
    let Some(f) = file() else { return false };
    let want = line(path, content);
    std::fs::read_to_string(f).is_ok_and(|text| text.lines().any(|l| l == want))
}

/// Records the user's trust in `path` with this `content`.
pub fn remember(path: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    let f = file().ok_or_else(|| std::io::Error::other("no state directory (set STEPWISE_STATE_DIR or HOME)"))?;
    if let Some(dir) = f.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut out = std::fs::OpenOptions::new().create(true).append(true).open(f)?;
    writeln!(out, "{}", line(path, content))
}

/// The question put to the user, naming what would run.
pub fn question(file: &super::config::ConfigFile) -> String {
    let what: Vec<String> = file
        .servers
        .iter()
        .map(|(name, spec)| match spec {
            super::ServerSpec::Stdio { command, args, .. } => {
                format!("{name}: {command} {}", args.join(" ")).trim_end().to_string()
            }
            super::ServerSpec::Http { url, .. } => format!("{name}: {url}"),
        })
        .collect();
    format!(
        "{} asks to start MCP servers (they run as commands on this machine): {}. Trust this file?",
        file.path.display(),
        what.join("; ")
    )
}
