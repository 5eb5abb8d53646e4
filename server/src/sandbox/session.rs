//! A session's sandbox: its private temporary folder (`TMPDIR`), its keeper and its network namespace, each
//! made at the first command that needs it and gone with the session; the policy each command gets; and
//! the warning, once per session, when the sandbox wanted cannot start.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::policy::{KeeperRef, NetRef, Policy};
use super::settings::{SandboxMode, SandboxSettings};
use super::trial::{availability, known};

/// Where the trial's warning goes (the adapters' reporter; the same type as `mcp::Report`, named here so the
/// sandbox, a floor below the MCP client, does not import it).
pub type Report = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

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
