//! The sandbox's settings: `sandbox` (the mode), `sandboxNetwork` and `sandboxWritable`, as the editors and
//! the environment give them, checked by name when they are read.

use std::path::PathBuf;

use super::trial::availability;

/// The `sandbox` setting. An unknown value is refused by name when the settings are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum SandboxMode {
    /// Writes beneath the workspace (protected paths put back after each command) and `TMPDIR`.
    WorkspaceWrite,
    /// Writes only in `TMPDIR` (plan mode runs commands so).
    ReadOnly,
    /// No sandbox: every command asks, as before the sandbox.
    Off,
}

impl SandboxMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "workspace-write" => Some(Self::WorkspaceWrite),
            "read-only" => Some(Self::ReadOnly),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::WorkspaceWrite => "workspace-write",
            Self::ReadOnly => "read-only",
            Self::Off => "off",
        }
    }
}

impl TryFrom<String> for SandboxMode {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s).ok_or_else(|| format!("unknown sandbox '{s}': use 'workspace-write', 'read-only' or 'off'"))
    }
}

/// The `sandboxNetwork` setting: `"on"` / `"off"` (or a boolean, as an editor's checkbox sends it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub struct NetworkSetting(pub bool);

impl NetworkSetting {
    pub fn parse(s: &str) -> Option<bool> {
        match s.trim().to_ascii_lowercase().as_str() {
            "on" | "true" => Some(true),
            "off" | "false" => Some(false),
            _ => None,
        }
    }
}

impl TryFrom<serde_json::Value> for NetworkSetting {
    type Error = String;
    fn try_from(v: serde_json::Value) -> Result<Self, String> {
        match &v {
            serde_json::Value::Bool(b) => Some(NetworkSetting(*b)),
            serde_json::Value::String(s) => Self::parse(s).map(NetworkSetting),
            _ => None,
        }
        .ok_or_else(|| format!("unknown sandboxNetwork {v}: use 'off' or 'on'"))
    }
}

/// The `sandbox`, `sandboxNetwork` and `sandboxWritable` settings of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    /// `sandboxNetwork: on`: TCP connections and listening ports are allowed.
    pub network: bool,
    /// `sandboxWritable`: folders a sandboxed command may write besides the workspace and `TMPDIR`.
    pub writable: Writable,
}

/// The `sandboxWritable` folders, as given (made canonical when a command's policy is made). Interned,
/// so the settings stay `Copy`: each distinct list the user sets is kept once for the process's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Writable(pub &'static [PathBuf]);

impl Writable {
    pub const NONE: Writable = Writable(&[]);

    /// The list `paths`, interned.
    pub fn new(paths: Vec<PathBuf>) -> Writable {
        if paths.is_empty() {
            return Writable::NONE;
        }
        static SEEN: std::sync::Mutex<Vec<&'static [PathBuf]>> = std::sync::Mutex::new(Vec::new());
        let mut seen = crate::locks::lock(&SEEN);
        if let Some(s) = seen.iter().find(|s| **s == paths.as_slice()) {
            return Writable(s);
        }
        let leaked: &'static [PathBuf] = Box::leak(paths.into_boxed_slice());
        seen.push(leaked);
        Writable(leaked)
    }

    /// `a:b:c` (`STEPWISE_SANDBOX_WRITABLE`): each must be an absolute path.
    pub fn parse(s: &str) -> Result<Writable, String> {
        let paths: Vec<PathBuf> = s.split(':').filter(|p| !p.trim().is_empty()).map(PathBuf::from).collect();
        Self::check(paths)
    }

    /// Each must be an absolute path (a relative one would depend on where stepwise was started).
    pub fn check(paths: Vec<PathBuf>) -> Result<Writable, String> {
        if let Some(p) = paths.iter().find(|p| !p.is_absolute()) {
            return Err(format!("sandboxWritable: '{}' is not an absolute path", p.display()));
        }
        Ok(Writable::new(paths))
    }

    /// The folders that exist, canonical (a symlink is granted where it points, which is what the
    /// user named); those that do not are left out.
    pub(super) fn resolved(self) -> Vec<PathBuf> {
        self.0.iter().filter_map(|p| std::fs::canonicalize(p).ok()).filter(|p| p.is_dir()).collect()
    }
}

impl SandboxSettings {
    /// No sandbox: the engine's default for embedders and tests; the adapters read the settings
    /// (`config::sandbox`), whose default is `workspace-write`.
    pub const OFF: SandboxSettings =
        SandboxSettings { mode: SandboxMode::Off, network: false, writable: Writable::NONE };

    /// `mode` and `network`, no folders of the user's.
    pub const fn of(mode: SandboxMode, network: bool) -> SandboxSettings {
        SandboxSettings { mode, network, writable: Writable::NONE }
    }

    /// Whether shell commands run confined under these settings (on, and able to start here).
    pub fn confines(&self) -> bool {
        self.mode != SandboxMode::Off && availability(self.network).is_ok()
    }

    /// One line for status and `stepwise doctor`: the mode and, when it cannot start, why.
    pub fn describe(&self) -> String {
        match (self.mode, availability(self.network)) {
            (SandboxMode::Off, _) => "off: every shell command asks for approval".into(),
            (mode, Ok(how)) => {
                let net = if self.network { "network on" } else { "network off" };
                format!("{} ({how}, {net})", mode.name())
            }
            (_, Err(why)) => format!("unavailable: {why}; shell commands ask for approval"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_values_are_checked_by_name() {
        let mode: Result<SandboxMode, _> = serde_json::from_value(serde_json::json!("strict"));
        assert!(mode.unwrap_err().to_string().contains("unknown sandbox 'strict'"));
        let net: Result<NetworkSetting, _> = serde_json::from_value(serde_json::json!("maybe"));
        assert!(net.unwrap_err().to_string().contains("unknown sandboxNetwork \"maybe\""));
        let net: NetworkSetting = serde_json::from_value(serde_json::json!("On")).unwrap();
        assert_eq!(net, NetworkSetting(true));
    }
}
