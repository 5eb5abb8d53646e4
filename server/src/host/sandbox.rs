//! The sandbox shell commands run in: what a command may write and reach, decided here for every OS and
//! applied by the guard just before the command starts (`landlock.rs` on Linux, `seatbelt.rs` on macOS),
//! so stepwise itself is never confined.
//!
//! The policy: reading is allowed everywhere; writing only in the workspace's top-level entries (files
//! and the whole tree of folders) other than the protected names (`approval::protected`: `.git`, `.env*`,
//! `.vscode`, `AGENTS.md`, `CLAUDE.md`, `.mcp.json`, ...) and in a private temporary folder (`TMPDIR`);
//! with the network off, no TCP connection or listening port.
//!
//! Why per top-level entry rather than "the workspace minus the protected paths": Landlock only grants,
//! beneath a granted folder it cannot deny a name, and a protected file that does not exist yet (a new
//! `.env`) has nothing to hang a rule on. A mount namespace (bind-mounting the protected paths read-only)
//! has the same hole for names that do not exist, and needs user namespaces that containers often forbid.
//! So the workspace folder itself gets no write right: nothing can be created, removed or renamed at its
//! top level, which is exactly where the protected names are read (stepwise's `.env`, git's `.git`, the
//! editors' `.vscode`, the agents' `AGENTS.md`). The cost: a command that creates a new top-level entry
//! (`npm init`, `sed -i` on a top-level file, which renames a temporary file there) is stopped, and can be
//! run outside the sandbox once the user approves it. Protected names deeper down (`app/.env`, a nested
//! repository's `.git`) are inside a writable folder and are not covered; docs/sandbox.md says so.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

pub use super::policy::{Entry, Policy};

/// The `sandbox` setting. An unknown value is refused by name when the settings are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum SandboxMode {
    /// Writes beneath the workspace (not its top level or protected names) and `TMPDIR`.
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

/// The `sandbox` and `sandboxNetwork` settings of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    /// `sandboxNetwork: on`: TCP connections and listening ports are allowed.
    pub network: bool,
}

impl SandboxSettings {
    /// No sandbox: the engine's default for embedders and tests; the adapters read the settings
    /// (`config::sandbox`), whose default is `workspace-write`.
    pub const OFF: SandboxSettings = SandboxSettings { mode: SandboxMode::Off, network: false };

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

/// Whether commands can be confined here, and by what (`Ok("Landlock ABI 7")`), or why not. Checked
/// once per process and network setting by confining a real command.
pub fn availability(network: bool) -> Result<String, String> {
    static WITH: OnceLock<Result<String, String>> = OnceLock::new();
    static WITHOUT: OnceLock<Result<String, String>> = OnceLock::new();
    let cell = if network { &WITH } else { &WITHOUT };
    cell.get_or_init(|| {
        // Debug builds only: lets the tests see a machine without a sandbox (the fallback to asking).
        #[cfg(debug_assertions)]
        if std::env::var_os(UNAVAILABLE_ENV).is_some_and(|v| v == "1") {
            return Err(format!("{UNAVAILABLE_ENV}=1 (a debug build pretending there is none)"));
        }
        probe(network)
    })
    .clone()
}

/// In a debug build, `1` makes the sandbox unavailable, as on an old kernel.
pub const UNAVAILABLE_ENV: &str = "STEPWISE_TEST_NO_SANDBOX";

#[cfg(target_os = "linux")]
fn probe(network: bool) -> Result<String, String> {
    super::landlock::probe(network)
}

#[cfg(target_os = "macos")]
fn probe(_network: bool) -> Result<String, String> {
    match Path::new(super::seatbelt::SANDBOX_EXEC).exists() {
        true => Ok("Seatbelt".into()),
        false => Err(format!("{} is missing", super::seatbelt::SANDBOX_EXEC)),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn probe(_network: bool) -> Result<String, String> {
    Err("stepwise has no sandbox for this operating system".into())
}

/// A session's sandbox: its private temporary folder, made at the first sandboxed command and removed
/// with the session.
#[derive(Debug, Default)]
pub struct Sandbox {
    tmp: OnceLock<Result<PathBuf, String>>,
    /// The session was told the sandbox cannot start.
    told: std::sync::atomic::AtomicBool,
}

static NEXT_TMP: AtomicU64 = AtomicU64::new(1);

impl Sandbox {
    /// The policy for a command under `settings`: `Ok(None)` when the sandbox is off, `Err(why)` when it
    /// is wanted but cannot start here (the caller asks the user instead).
    pub fn policy(&self, root: &Path, settings: SandboxSettings) -> Result<Option<Policy>, String> {
        if settings.mode == SandboxMode::Off {
            return Ok(None);
        }
        availability(settings.network)?;
        let tmp = self.tmp.get_or_init(make_tmp).clone()?;
        Ok(Some(Policy {
            root: root.to_path_buf(),
            tmp,
            write: settings.mode == SandboxMode::WorkspaceWrite,
            network: settings.network,
        }))
    }

    /// The policy for a command that must not write (plan mode): `Err(why)` when the sandbox cannot
    /// start here; then the command must not run at all.
    pub fn read_only(&self, root: &Path, network: bool) -> Result<Policy, String> {
        let settings = SandboxSettings { mode: SandboxMode::ReadOnly, network };
        self.policy(root, settings)?.ok_or_else(|| "the sandbox is off".to_string())
    }

    /// The warning an adapter shows once per session (status line, message) when the sandbox is wanted
    /// but cannot start; `None` when it can, when it is off, or when this session was told already.
    pub fn unavailable_once(&self, settings: SandboxSettings) -> Option<String> {
        if settings.mode == SandboxMode::Off {
            return None;
        }
        let why = availability(settings.network).err()?;
        if self.told.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(match settings.mode {
            SandboxMode::ReadOnly => {
                format!("the sandbox cannot start here ({why}): in read-only mode shell commands are refused")
            }
            _ => format!(
                "the sandbox cannot start here ({why}): every shell command asks for approval instead \
                 (`sandbox: off` / STEPWISE_SANDBOX=off turns it off)"
            ),
        })
    }

    /// The temporary folder, once made.
    pub fn tmp(&self) -> Option<&Path> {
        self.tmp.get().and_then(|t| t.as_deref().ok())
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(Ok(tmp)) = self.tmp.get() {
            let _ = std::fs::remove_dir_all(tmp);
        }
    }
}

/// `$TMPDIR/stepwise-sandbox-PID-N-NANOS`, readable by the user only. The first one a process makes
/// also removes those of stepwise processes that are gone (killed before their sessions ended).
fn make_tmp() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| remove_orphans(&base));
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let name = format!("stepwise-sandbox-{}-{}-{nanos}", std::process::id(), NEXT_TMP.fetch_add(1, Ordering::Relaxed));
    let path = base.join(name);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&path)
        .map_err(|e| format!("cannot make the sandbox's temporary folder in {}: {e}", base.display()))?;
    // Canonical, as the sandbox profiles name real paths (macOS's /tmp is /private/tmp).
    std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))
}

fn remove_orphans(base: &Path) {
    let Ok(dir) = std::fs::read_dir(base) else { return };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) =
            name.to_str().and_then(|n| n.strip_prefix("stepwise-sandbox-")?.split('-').next()?.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = pid > 0
            && (unsafe { libc::kill(pid, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM));
        if !alive && e.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Whether a failed command's output shows the sandbox refusing it: the errors Landlock and Seatbelt
/// give (EACCES, EPERM; EXDEV for a hard link or rename out of the writable tree), as the C library,
/// Python, Node and the shells print them. `None` when the command did not fail this way.
pub fn stopped(output: &str, failed: bool) -> Option<&'static str> {
    if !failed {
        return None;
    }
    let lower = output.to_ascii_lowercase();
    const SIGNS: [&str; 6] =
        ["permission denied", "operation not permitted", "cross-device link", "eacces", "eperm", "exdev"];
    SIGNS.iter().any(|s| lower.contains(s)).then_some("a write or connection it does not allow")
}

/// The line the model reads when the sandbox stopped a command, saying what it allows and what came of
/// the question to run it outside.
pub fn stopped_note(policy: &Policy, outcome: Escalation) -> String {
    let allows = if policy.write {
        "writes only beneath the workspace's folders and files (not new entries at its top level, nor .git, \
         .env*, .vscode, AGENTS.md, CLAUDE.md, .mcp.json) and in $TMPDIR"
    } else {
        "read-only: writes only in $TMPDIR"
    };
    let net = if policy.network { "" } else { ", no network" };
    let then = match outcome {
        Escalation::Declined => "the user declined to run it outside the sandbox: do it another way, or ask the user",
        Escalation::NotOffered => "it cannot run outside the sandbox in this mode",
        Escalation::Approved => "the user approved running it again outside the sandbox; that run's output follows",
    };
    format!("[sandbox: the command was stopped by the sandbox ({allows}{net}); {then}]")
}

/// What became of a command the sandbox stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escalation {
    Approved,
    Declined,
    NotOffered,
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

    #[test]
    fn a_denial_is_read_from_the_error_of_a_failed_command() {
        assert!(stopped("bash: /root/x: Permission denied", true).is_some());
        assert!(stopped("touch: cannot touch 'x': Operation not permitted", true).is_some());
        assert!(
            stopped("ln: failed to create hard link 'a' => '/etc/passwd': Invalid cross-device link", true).is_some()
        );
        assert!(stopped("Error: EACCES: permission denied, open '/x'", true).is_some());
        assert!(stopped("bash: /root/x: Permission denied", false).is_none());
        assert!(stopped("error[E0425]: cannot find value", true).is_none());
    }

    #[test]
    fn the_temporary_folders_of_stepwise_processes_that_are_gone_are_removed() {
        let base = std::env::temp_dir();
        // No pid reaches this (the kernel's limit is 2^22); our own is alive.
        let gone = base.join("stepwise-sandbox-999999999-1-0");
        let ours = base.join(format!("stepwise-sandbox-{}-777-0", std::process::id()));
        for d in [&gone, &ours] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
        }
        remove_orphans(&base);
        assert!(!gone.exists() && ours.exists());
        std::fs::remove_dir_all(&ours).unwrap();
    }

    #[test]
    fn the_temporary_folder_is_private_and_goes_with_the_session() {
        use std::os::unix::fs::PermissionsExt;
        let sandbox = Sandbox::default();
        let tmp = make_tmp().unwrap();
        let _ = sandbox.tmp.set(Ok(tmp.clone()));
        assert_eq!(std::fs::metadata(&tmp).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::write(tmp.join("f"), "x").unwrap();
        drop(sandbox);
        assert!(!tmp.exists());
    }
}
