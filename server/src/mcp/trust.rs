//! A workspace's `.mcp.json` runs commands the moment its servers start, and a cloned repository can
//! carry one: its servers start only once the user trusted that file with that content. Trust is kept
//! in the state directory, one line per file and content hash; a changed file is asked about again.

use std::path::Path;

use crate::trust::{is_recorded, record};

const LIST: &str = "trusted-mcp";

fn line(path: &Path, content: &str) -> String {
    // SHA-256 by ring, which rustls and the checkpoint store use already.
    let digest = ring::digest::digest(&ring::digest::SHA256, content.as_bytes());
    let hash: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("{}\t{hash}", path.display())
}

/// Whether the user trusted `path` with this `content`.
pub fn is_trusted(path: &Path, content: &str) -> bool {
    is_recorded(LIST, &line(path, content))
}

/// Records the user's trust in `path` with this `content`.
pub fn remember(path: &Path, content: &str) -> std::io::Result<()> {
    record(LIST, &line(path, content))
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
