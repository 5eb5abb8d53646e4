//! Code intelligence: what the language servers know, for the agent. `source` is the seam (`host/intelligence.rs`: the
//! `Intelligence` trait: an editor answering `stepwise/query` offers one through `Host::intelligence`,
//! elsewhere `servers/` starts language servers itself); `session.rs` feeds it what the agent writes and
//! makes the round's `<diagnostics>` block; `tools.rs` is the three tools; `text.rs` the lines the model reads.

pub mod rename;
pub mod servers;
pub mod session;
/// The seam lives with the host that offers it (`host/intelligence.rs`); here under its old name.
pub use crate::host::intelligence as source;
pub mod text;
pub mod tools;
mod untracked;
pub mod walk;

pub use session::Session;
pub use source::{Answer, Checked, DiagnosticsRequest, FileDiagnostics, Intelligence, Query, Source, Written};

/// What a run is given of code intelligence besides what its host offers: the setting, the language
/// servers stepwise starts itself (the workspace's, made once at the first run's preparation), the wait cap.
#[derive(Clone, Default)]
pub struct Setup {
    pub mode: DiagnosticsMode,
    pub servers: Option<Source>,
    pub max_wait: Option<std::time::Duration>,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup").field("mode", &self.mode).field("servers", &self.servers.is_some()).finish()
    }
}

/// The `diagnostics` setting (`STEPWISE_DIAGNOSTICS`, editor settings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiagnosticsMode {
    /// The tools, and the `<diagnostics>` block after a round that changed files.
    #[default]
    Auto,
    /// Only the tools.
    Tool,
    /// Neither: no language server is started and no code-intelligence tool is offered.
    Off,
}

impl DiagnosticsMode {
    pub fn parse(s: &str) -> Option<DiagnosticsMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(DiagnosticsMode::Auto),
            "tool" | "tools" => Some(DiagnosticsMode::Tool),
            "off" => Some(DiagnosticsMode::Off),
            _ => None,
        }
    }
}
