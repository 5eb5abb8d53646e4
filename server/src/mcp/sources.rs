//! The servers a session gets, from every source, and what stands in their way (bad entries, an
//! untrusted workspace file).

use std::path::Path;

use super::config::{self, ConfigFile, Configured, Origin, Servers};

/// What was found for one session.
pub struct Found {
    /// Every server, later sources winning by name: user file, workspace file, editor, client.
    pub servers: Vec<Configured>,
    /// Bad entries, each naming its file or setting and server.
    pub problems: Vec<String>,
    /// The workspace's `.mcp.json`, when it lists servers that are not trusted yet.
    pub untrusted: Option<ConfigFile>,
}

pub fn find(root: &Path, settings: Option<&Servers>, client: Servers) -> Found {
    let mut problems = Vec::new();
    let mut sources = Vec::new();
    if let Some(f) = config::user_file() {
        problems.extend(f.problems.iter().cloned());
        sources.push((Origin::User, f.servers));
    }
    let mut untrusted = None;
    if let Some(f) = config::workspace_file(root) {
        problems.extend(f.problems.iter().cloned());
        if !f.servers.is_empty() {
            if !super::trust::is_trusted(&f.path, &f.content) {
                untrusted = Some(f.clone());
            }
            sources.push((Origin::Workspace, f.servers));
        }
    }
    if let Some(s) = settings {
        sources.push((Origin::Settings, s.clone()));
    }
    sources.push((Origin::Client, client));
    Found { servers: config::merge(sources), problems, untrusted }
}

impl Found {
    /// Leaves out the workspace file's servers (not trusted).
    pub fn without_workspace(mut self) -> Found {
        self.servers.retain(|c| c.origin != Origin::Workspace);
        self
    }
}
