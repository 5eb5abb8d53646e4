//! The sandbox shell commands run in: what a command may write and reach, decided here for every OS and
//! applied by the guard just before the command starts (`landlock.rs` on Linux, `seatbelt.rs` on macOS),
//! so stepwise itself is never confined.
//!
//! The policy: reading is allowed everywhere; writing beneath the workspace (its top level included),
//! in a private temporary folder (`TMPDIR`, where the tools' caches go too) and in the folders the user
//! lists in `sandboxWritable`; with the network off, no TCP connection or listening port.
//!
//! The protected paths beneath the workspace (`keep/rules.rs`: git's hooks and config, `.env*`,
//! `.vscode/`, `AGENTS.md`, ...) cannot be denied by Landlock, which only grants, and has nothing to
//! hang a rule on for a name that does not exist yet. So they are kept by the keeper (`keep/`): after
//! each sandboxed command it puts back whatever protected path the command created, changed or removed,
//! and the result says so. Seatbelt (macOS) can deny by name, and does, before the keeper.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

pub use super::trial::{availability, expected, failed_where_expected, known, TRIAL_FAILS_ENV, UNAVAILABLE_ENV};

/// Where the trial's warning goes (the adapters' reporter; the same type as `mcp::Report`, named here so the
/// host, a floor below the MCP client, does not import it).
pub type Report = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

pub use super::policy::{KeeperRef, NetRef, Policy};

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
    fn resolved(self) -> Vec<PathBuf> {
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

/// `1` makes stepwise use Landlock's TCP rules rather than a network namespace (as where none can be
/// made): for the tests of that path, and for a user whose tools need the host's loopback.
pub const NO_NETNS_ENV: &str = "STEPWISE_SANDBOX_NO_NETNS";

#[cfg(target_os = "linux")]
fn netns_disabled() -> bool {
    std::env::var_os(NO_NETNS_ENV).is_some_and(|v| v == "1")
}

/// How a sandboxed command with the network off is kept from the network, or why it cannot be: a
/// private network namespace where one can be made, else Landlock's TCP rules.
pub fn network_isolation() -> String {
    #[cfg(target_os = "linux")]
    {
        if netns_disabled() {
            return format!(
                "Landlock's TCP rules ({NO_NETNS_ENV}=1): no connection or listening port, loopback included"
            );
        }
        match super::netns::availability() {
            Ok(how) => format!("a private network namespace per session, made {how}: its own loopback, nothing else"),
            Err(why) => format!(
                "Landlock's TCP rules: no connection or listening port, loopback included (no network namespace: {why})"
            ),
        }
    }
    #[cfg(target_os = "macos")]
    return "Seatbelt: no IP connection or listening port, loopback included".into();
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    return "none".into();
}

/// A session's sandbox: its private temporary folder, made at the first sandboxed command and removed
/// with the session.
#[derive(Debug, Default)]
pub struct Sandbox {
    tmp: OnceLock<Result<PathBuf, String>>,
    /// The keeper of the workspace's protected paths, made at the first workspace-write command.
    keeper: OnceLock<std::sync::Arc<super::keep::Keeper>>,
    /// The private network namespace its commands share with the network off (Linux), or why none.
    #[cfg(target_os = "linux")]
    netns: OnceLock<Result<super::netns::NetRef, String>>,
    /// The session was told the sandbox cannot start (shared with the trial's thread).
    told: std::sync::Arc<std::sync::atomic::AtomicBool>,
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
        let write = settings.mode == SandboxMode::WorkspaceWrite;
        let keeper = write.then(|| {
            KeeperRef(self.keeper.get_or_init(|| std::sync::Arc::new(super::keep::Keeper::new(root))).clone())
        });
        Ok(Some(Policy {
            root: root.to_path_buf(),
            tmp,
            write,
            network: settings.network,
            writable: settings.writable.resolved(),
            keeper,
            netns: if settings.network { None } else { self.netns() },
        }))
    }

    /// The session's network namespace, made at its first command with the network off.
    #[cfg(target_os = "linux")]
    fn netns(&self) -> Option<NetRef> {
        let made = self.netns.get_or_init(|| {
            if netns_disabled() {
                return Err(format!("{NO_NETNS_ENV}=1"));
            }
            super::netns::NetNs::make().map(|ns| NetRef(std::sync::Arc::new(ns)))
        });
        if let Err(why) = made {
            tracing::debug!("sandbox: no private network namespace ({why}): Landlock's TCP rules instead");
        }
        made.clone().ok()
    }

    #[cfg(not(target_os = "linux"))]
    fn netns(&self) -> Option<NetRef> {
        None
    }

    /// The policy for a command that must not write (plan mode): `Err(why)` when the sandbox cannot
    /// start here; then the command must not run at all.
    pub fn read_only(&self, root: &Path, network: bool) -> Result<Policy, String> {
        let settings = SandboxSettings::of(SandboxMode::ReadOnly, network);
        self.policy(root, settings)?.ok_or_else(|| "the sandbox is off".to_string())
    }

    /// The warning an adapter shows once per session (status line, message) when the sandbox is wanted
    /// but cannot start, told to `report`: at once when the answer is known, else from the trial's own
    /// thread when it ends. Nothing when it can start, when it is off, or when this session was told
    /// already. The trial is kept off the way to the first model request (issue 39: it was 1.5 ms of
    /// the start): nothing before that request needs it in the default mode (the first command, and plan
    /// mode's tools, wait for it through `availability`). Returns the trial's thread, if one was started
    /// (the tests wait for it; nothing else needs to).
    pub fn unavailable_later(&self, settings: SandboxSettings, report: Report) -> Option<std::thread::JoinHandle<()>> {
        if settings.mode == SandboxMode::Off || self.told.load(Ordering::Relaxed) {
            return None;
        }
        let told = self.told.clone();
        let tell = move |answer: Result<String, String>| {
            if let Err(why) = answer {
                if !told.swap(true, Ordering::Relaxed) {
                    report(&unavailable_warning(settings.mode, &why));
                }
            }
        };
        let network = settings.network;
        match known(network) {
            Some(answer) => {
                tell(answer);
                None
            }
            None => {
                let spawned = std::thread::Builder::new().name("sandbox-answer".into()).spawn(move || {
                    yield_to_others();
                    tell(availability(network))
                });
                spawned
                    .map_err(|e| {
                        tracing::debug!("sandbox: no thread for the trial ({e}); it runs at the first command")
                    })
                    .ok()
            }
        }
    }

    /// The temporary folder, once made.
    pub fn tmp(&self) -> Option<&Path> {
        self.tmp.get().and_then(|t| t.as_deref().ok())
    }
}

/// The trial's thread (and the command it starts, which inherits it) at the lowest priority: started
/// beside the first model request, it should not take a core from it (on 2 busy cores it did, 1 ms).
fn yield_to_others() {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain syscall on the calling thread (Linux's nice value is per thread).
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS as _, libc::gettid() as libc::id_t, 19);
    }
}

/// What a session is told when the sandbox it wants cannot start.
fn unavailable_warning(mode: SandboxMode, why: &str) -> String {
    match mode {
        SandboxMode::ReadOnly => {
            format!("the sandbox cannot start here ({why}): in read-only mode shell commands are refused")
        }
        _ => format!(
            "the sandbox cannot start here ({why}): every shell command asks for approval instead \
             (`sandbox: off` / STEPWISE_SANDBOX=off turns it off)"
        ),
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

pub use super::stops::{stopped, stopped_note, Escalation, Stop};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_that_the_sandbox_cannot_start_is_told_once_when_its_answer_comes_and_never_when_it_can() {
        let sandbox = Sandbox::default();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let tx = std::sync::Mutex::new(tx);
        let report: Report = std::sync::Arc::new(move |m: &str| {
            let _ = tx.lock().map(|t| t.send(m.to_string()));
        });
        let wanted = SandboxSettings::of(SandboxMode::WorkspaceWrite, false);
        let threads: Vec<_> = [wanted, wanted, SandboxSettings::of(SandboxMode::Off, false)]
            .into_iter()
            .filter_map(|s| sandbox.unavailable_later(s, report.clone()))
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(report);
        let told: Vec<String> = rx.iter().collect();
        match availability(false) {
            Ok(_) => assert!(told.is_empty(), "{told:?}"),
            Err(why) => {
                assert_eq!(told.len(), 1, "{told:?}");
                assert!(told[0].starts_with("the sandbox cannot start here (") && told[0].contains(&why), "{told:?}");
            }
        }
        // Told already: a later run of the session says nothing again.
        assert!(sandbox.unavailable_later(wanted, std::sync::Arc::new(|m: &str| panic!("told twice: {m}"))).is_none());
    }

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
