//! The command line's MCP servers: the user's and the workspace's files; the workspace's only once
//! trusted on the terminal (`--yes` does not cover it: it is about what runs, before anything is asked).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use super::input::Input;
use crate::agent::AgentConfig;
use crate::mcp::{sources, trust, McpSet};

/// Starts the session's servers in the background and hands them to `cfg`.
pub(super) async fn start(ws: &Path, cfg: &mut AgentConfig, interactive: bool, input: &Input) {
    let found = sources::find(ws, None, Default::default());
    for p in &found.problems {
        eprintln!("stepwise: {p}");
    }
    let found = match &found.untrusted {
        None => found,
        Some(f) if interactive => {
            anstream::eprint!("{}\n[y/N]: ", super::bold(&trust::question(f)));
            let _ = std::io::stderr().flush();
            let answer = input.next_line().await.unwrap_or_default();
            if matches!(answer.trim(), "y" | "Y" | "yes") {
                if let Err(e) = trust::remember(&f.path, &f.content) {
                    eprintln!("stepwise: could not remember the trust: {e}");
                }
                found
            } else {
                found.without_workspace()
            }
        }
        Some(f) => {
            eprintln!(
                "stepwise: not starting the MCP servers of {}: the file is not trusted yet (run stepwise chat on a terminal to trust it)",
                f.path.display()
            );
            found.without_workspace()
        }
    };
    if found.servers.is_empty() {
        return;
    }
    let report: crate::mcp::Report = Arc::new(|line: &str| eprintln!("stepwise: {line}"));
    cfg.mcp.set = Some(McpSet::start(found.servers, ws.to_path_buf(), cfg.mcp.timeout, None, report));
}
