//! Model endpoints the user approved. A `.env` file in the workspace can be written by the model (with
//! approval) or come with a cloned repository; a base URL it sets must not receive an API key that came
//! from somewhere else unless the user said so once. Approvals are kept per `.env` file and URL.

use std::path::{Path, PathBuf};

/// `STEPWISE_STATE_DIR`, else `$XDG_STATE_HOME/stepwise/sessions`, else `~/.local/state/stepwise/sessions`.
pub fn state_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var("STEPWISE_STATE_DIR") {
        return Some(d);
    }
    let base = var("XDG_STATE_HOME").or_else(|| var("HOME").map(|h| h.join(".local/state")))?;
    Some(base.join("stepwise").join("sessions"))
}

const ENDPOINTS: &str = "trusted-endpoints";

fn line(env_file: &Path, url: &str) -> String {
    format!("{}\t{}", env_file.display(), url.trim())
}

/// Whether the user approved `url` as set by `env_file`.
pub fn is_trusted(env_file: &Path, url: &str) -> bool {
    is_recorded(ENDPOINTS, &line(env_file, url))
}

/// Records the user's approval of `url` as set by `env_file`.
pub fn remember(env_file: &Path, url: &str) -> std::io::Result<()> {
    record(ENDPOINTS, &line(env_file, url))
}

/// Whether the state directory's list `name` (one record a line) holds `line`.
pub(crate) fn is_recorded(name: &str, line: &str) -> bool {
    let Some(f) = state_dir().map(|d| d.join(name)) else { return false };
    std::fs::read_to_string(f).is_ok_and(|text| text.lines().any(|l| l == line))
}

/// Appends `line` to the state directory's list `name`.
pub(crate) fn record(name: &str, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let f = state_dir()
        .map(|d| d.join(name))
        .ok_or_else(|| std::io::Error::other("no state directory (set STEPWISE_STATE_DIR or HOME)"))?;
    if let Some(dir) = f.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut out = std::fs::OpenOptions::new().create(true).append(true).open(f)?;
    writeln!(out, "{line}")
}
