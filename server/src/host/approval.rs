//! What needs the user's leave: shell commands, and writes to files that can run code or redirect
//! credentials. The model is untrusted; writing `.git/hooks/pre-commit` or `.env` is as strong as a shell
//! command, so it goes through the same approval.

use std::path::{Component, Path};

use std::collections::HashSet;
use std::sync::Mutex;

use crate::locks;

/// What the user said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    Allow,
    /// Allow, and do not ask again for this kind of thing until the session is reset.
    AllowForSession,
    Deny,
}

impl Approval {
    pub fn allowed(self) -> bool {
        self != Approval::Deny
    }
}

/// The editors' `approval` setting: ask the user, or answer every question without asking. An unknown
/// value is refused by name when the settings are read, never taken for `ask` unseen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum ApprovalMode {
    Ask,
    Auto,
    Deny,
}

impl ApprovalMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ask" => Some(Self::Ask),
            "auto" | "always" | "yes" => Some(Self::Auto),
            "deny" | "never" => Some(Self::Deny),
            _ => None,
        }
    }
}

impl TryFrom<String> for ApprovalMode {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s).ok_or_else(|| format!("unknown approval '{s}': use 'ask', 'auto' or 'deny'"))
    }
}

/// What "allow for this session" covers: the agent's own tools (shell commands and protected writes,
/// as the editors have always offered it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    Tools,
    /// The tools of one MCP server.
    McpServer(String),
    /// Running commands outside the sandbox after it stopped them (not covered by `Tools`: an earlier
    /// "allow for the session" of a question with the sandbox off must not open this one).
    Unsandboxed,
}

/// The session's standing approvals, kept by the workspace (one place for the command line, the
/// sidecar and the ACP agent).
#[derive(Debug, Default)]
pub struct Approvals {
    granted: Mutex<HashSet<Scope>>,
}

impl Approvals {
    pub fn covers(&self, ask: &Ask<'_>) -> bool {
        locks::lock(&self.granted).contains(&ask.scope())
    }

    /// Remembers an "allow for this session" answer.
    pub fn record(&self, ask: &Ask<'_>, answer: Approval) {
        if answer == Approval::AllowForSession {
            locks::lock(&self.granted).insert(ask.scope());
        }
    }

    pub fn clear(&self) {
        locks::lock(&self.granted).clear();
    }

    /// A child's (`task`): what the user allowed for the session holds for it; what it is allowed stays
    /// its own and never widens the session's.
    pub fn inherit(&self) -> Approvals {
        Approvals { granted: Mutex::new(locks::lock(&self.granted).clone()) }
    }
}

/// One thing the agent asks leave for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask<'a> {
    Command(&'a str),
    /// Running a command again outside the sandbox, which stopped it: the command, and what the sandbox
    /// stopped (as precisely as the stop was read).
    Unsandboxed {
        command: &'a str,
        stopped: &'a str,
    },
    /// A write to a protected file: the path as the model gave it, and why it is protected.
    Write {
        path: &'a str,
        why: &'static str,
    },
    /// A call to a tool of an MCP server.
    Tool {
        server: &'a str,
        tool: &'a str,
    },
}

impl Ask<'_> {
    pub fn scope(&self) -> Scope {
        match self {
            Ask::Command(_) | Ask::Write { .. } => Scope::Tools,
            Ask::Unsandboxed { .. } => Scope::Unsandboxed,
            Ask::Tool { server, .. } => Scope::McpServer(server.to_string()),
        }
    }

    /// A one-line question for a terminal or an editor prompt, naming `folder`.
    pub fn question(&self, folder: &str) -> String {
        match self {
            Ask::Command(command) => format!("stepwise wants to run a shell command in {folder}: {command}"),
            Ask::Unsandboxed { command, stopped } => format!(
                "The sandbox stopped a shell command; stepwise wants to run it outside the sandbox in {folder}: {command} (it stopped: {stopped})"
            ),
            Ask::Write { path, why } => format!("stepwise wants to write {path} in {folder} ({why})"),
            Ask::Tool { server, tool } => format!("stepwise wants to use the MCP tool {tool} of {server} in {folder}"),
        }
    }
}

/// Why writing `rel` (relative to the workspace) needs approval, if it does.
pub fn protected(rel: &Path) -> Option<&'static str> {
    let names: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    let file = names.last().map(String::as_str).unwrap_or("");
    if names.iter().any(|n| n == ".git") {
        return Some("inside .git/: hooks and config there run commands");
    }
    if file == ".env" || file.starts_with(".env.") {
        return Some("a .env file: it can redirect the API key and change stepwise's settings");
    }
    if file == ".envrc" {
        return Some("direnv runs .envrc as shell code");
    }
    if names.first().is_some_and(|n| n == ".vscode") {
        return Some("editor settings and tasks there can run commands");
    }
    if matches!(file, ".nvim.lua" | ".nvimrc" | ".exrc") && names.len() == 1 {
        return Some("Neovim runs it as code when the folder is opened");
    }
    if matches!(file, "agents.md" | "claude.md") {
        return Some("instructions that coding agents, this one included, follow as the user's own");
    }
    if file == ".mcp.json" {
        return Some("MCP servers listed there are started as commands");
    }
    if names.first().is_some_and(|n| n == ".stepwise") {
        return Some("stepwise's own state");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowing_an_mcp_server_for_the_session_covers_that_server_only() {
        let a = Approvals::default();
        let fs = Ask::Tool { server: "fs", tool: "read" };
        a.record(&fs, Approval::AllowForSession);
        assert!(a.covers(&Ask::Tool { server: "fs", tool: "write" }));
        assert!(!a.covers(&Ask::Tool { server: "web", tool: "read" }));
        assert!(!a.covers(&Ask::Command("ls")));
        a.record(&Ask::Command("ls"), Approval::AllowForSession);
        assert!(!a.covers(&Ask::Tool { server: "web", tool: "read" }));
    }

    #[test]
    fn running_outside_the_sandbox_is_its_own_standing_approval() {
        let a = Approvals::default();
        a.record(&Ask::Command("ls"), Approval::AllowForSession);
        assert!(
            !a.covers(&Ask::Unsandboxed { command: "ls", stopped: "x" }),
            "an earlier 'allow for the session' must not open this"
        );
        a.record(&Ask::Unsandboxed { command: "make", stopped: "x" }, Approval::AllowForSession);
        assert!(a.covers(&Ask::Unsandboxed { command: "curl x", stopped: "y" }));
    }

    #[test]
    fn protected_paths() {
        for p in [
            ".git/hooks/pre-commit",
            ".git/config",
            "sub/.git/config",
            ".GIT/config",
            ".env",
            ".env.local",
            "app/.env",
            ".envrc",
            ".vscode/tasks.json",
            ".nvim.lua",
            "AGENTS.md",
            "CLAUDE.md",
            "docs/AGENTS.md",
            ".mcp.json",
        ] {
            assert!(protected(Path::new(p)).is_some(), "{p}");
        }
        for p in [
            "src/main.rs",
            "env.txt",
            ".environment",
            "docs/.gitignore",
            ".github/workflows/ci.yml",
            "a/.nvim.lua",
            "mcp.json",
        ] {
            assert_eq!(protected(Path::new(p)), None, "{p}");
        }
    }
}
