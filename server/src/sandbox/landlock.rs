//! The sandbox on Linux: a Landlock ruleset made in stepwise (allocations, opening paths) and imposed in
//! the forked guard just before it starts the command (two async-signal-safe syscalls, `restrict`), so
//! the guard and the command are confined and stepwise is not. The policy is `policy.rs`'s.
//!
//! Landlock ABI 3 at least (Linux 6.2: before it `truncate` on any file was uncontrolled), and ABI 4
//! (Linux 6.7: TCP `connect`/`bind` rules) when the network is off. Below that stepwise does not
//! half-confine with a seccomp filter: it reports the sandbox unavailable and asks per command, which
//! the user can see and judge, rather than a sandbox that holds for files and silently not for sockets.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};

use super::policy::Policy;

/// The kernel's Landlock ABI version, or why there is none.
fn kernel_abi() -> Result<i32, String> {
    const VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: no attribute, size 0.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, VERSION) };
    if v >= 1 {
        return Ok(v as i32);
    }
    let e = std::io::Error::last_os_error();
    Err(match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            "this kernel has no Landlock, or a container's seccomp policy hides it (Linux 6.7+ needed)".into()
        }
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot option)".into()
        }
        _ => format!("Landlock cannot be queried: {e}"),
    })
}

/// The kernel's Landlock ABI if it offers what the sandbox needs (one syscall), else why not; only a
/// trial (`probe`) says whether a command can really be confined.
pub fn promised(network: bool) -> Result<i32, String> {
    let abi = kernel_abi()?;
    if abi < 3 {
        return Err(format!("Landlock ABI {abi} cannot stop a command truncating files (ABI 3, Linux 6.2, is needed)"));
    }
    if abi < 4 && !network {
        return Err(format!(
            "Landlock ABI {abi} has no TCP rules (ABI 4, Linux 6.7, is needed with sandboxNetwork off)"
        ));
    }
    Ok(abi)
}

/// `Ok("Landlock ABI N")` once a real command ran confined, or why the sandbox cannot start.
pub fn probe(network: bool) -> Result<String, String> {
    let abi = promised(network)?;
    // A trial: confine a child that does nothing. A container can refuse `landlock_restrict_self` or
    // the path rules (an unsupported file system) even where the version query answers.
    let tmp = std::env::temp_dir();
    let policy =
        Policy { root: tmp.clone(), tmp, write: false, network, writable: Vec::new(), keeper: None, netns: None };
    let fd = make(&policy).map_err(|e| format!("a Landlock ruleset cannot be made: {e}"))?;
    // Confined is a thread of its own, which then starts the trial: Landlock and `no_new_privs` hold for
    // the calling thread only (and for what it starts), and a plain spawn (`posix_spawn`, no copy of the
    // page tables) replaces the fork a `pre_exec` needs, which stalled the other threads' allocations
    // while the first model request was being made (issue 39). The thread ends with the trial.
    let trial = std::thread::Builder::new().name("sandbox-trial".into()).spawn(move || {
        // SAFETY: two syscalls on this thread, which runs nothing else.
        if !unsafe { restrict(fd.as_raw_fd()) } {
            return Err(std::io::Error::last_os_error());
        }
        std::process::Command::new("/bin/sh").args(["-c", ":"]).stdin(std::process::Stdio::null()).status()
    });
    let status = trial.map_err(|e| format!("no thread for a trial command: {e}"))?.join();
    match status {
        Ok(Ok(s)) if s.success() => Ok(format!("Landlock ABI {abi}")),
        Ok(Ok(s)) => Err(format!("a confined trial command failed ({s})")),
        Ok(Err(e)) => Err(format!("Landlock refused to confine a trial command: {e}")),
        Err(_) => Err("the trial command's thread panicked".into()),
    }
}

/// What a ruleset grants, to tell when one made before still fits: whether it holds TCP rules, and each
/// writable folder with the file it was (device, inode; `None`: missing), so a folder removed and made
/// again, or one that appeared since, gets a ruleset of its own (a rule holds an inode, not a name).
#[derive(PartialEq, Eq)]
struct Grants {
    tcp_rules: bool,
    write: Vec<(PathBuf, Option<(u64, u64)>)>,
}

/// The file a folder is now (device, inode), or `None`: missing.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Grants {
    /// What `policy` grants, its writable folders being the files `ids`.
    fn of(policy: &Policy, ids: &[Option<(u64, u64)>]) -> Grants {
        let write = policy.write_roots_iter().map(Path::to_path_buf).zip(ids.iter().copied()).collect();
        Grants { tcp_rules: tcp_rules(policy), write }
    }

    /// Whether `policy`, whose writable folders are now the files `ids`, grants the same: compared in place,
    /// as every command asks this (nearly always of the ruleset used last).
    fn fit(&self, policy: &Policy, ids: &[Option<(u64, u64)>]) -> bool {
        self.tcp_rules == tcp_rules(policy)
            && self.write.len() == ids.len()
            && policy
                .write_roots_iter()
                .zip(ids)
                .zip(&self.write)
                .all(|((p, id), (kept, kept_id))| p == kept && id == kept_id)
    }
}

/// The rulesets made lately, the newest last: a ruleset is made once for what it grants and imposed by
/// every command under it (issue 39: made per command, it was most of what the sandbox added to a round,
/// about 30 syscalls and the `landlock` crate's bookkeeping, where checking that it still fits is a `statx`
/// per writable folder). A few, for the sidecar's several folders; an old one is dropped (closed) when
/// no command still holds it.
static MADE: Mutex<Vec<(Grants, Arc<OwnedFd>)>> = Mutex::new(Vec::new());
const KEPT: usize = 8;

/// The ruleset for `policy` (see `make`), made once for what it grants.
pub fn ruleset(policy: &Policy) -> std::io::Result<Arc<OwnedFd>> {
    let ids: Vec<Option<(u64, u64)>> = policy.write_roots_iter().map(file_id).collect();
    let mut made = crate::locks::lock(&MADE);
    // The newest first: a session's commands nearly always share the ruleset used last.
    if let Some(i) = made.iter().rposition(|(g, _)| g.fit(policy, &ids)) {
        let entry = made.remove(i);
        let fd = entry.1.clone();
        made.push(entry);
        return Ok(fd);
    }
    let grants = Grants::of(policy, &ids);
    let fd = Arc::new(make(policy)?);
    if made.len() >= KEPT {
        made.remove(0);
    }
    made.push((grants, fd.clone()));
    Ok(fd)
}

/// Whether the ruleset holds TCP rules: network off and no private namespace to fence it instead.
fn tcp_rules(policy: &Policy) -> bool {
    !policy.network && policy.netns.is_none()
}

/// The ruleset for `policy`: reading everywhere, writing in the workspace, `TMPDIR` and the user's folders, the
/// usual character devices, and (network off) no TCP. Made before the fork; `restrict` imposes it.
fn make(policy: &Policy) -> std::io::Result<OwnedFd> {
    let err = |e: landlock::RulesetError| std::io::Error::other(e.to_string());
    // Rights named by ABI, so the same policy holds on every kernel; those a kernel lacks are dropped
    // (best effort), and `probe` made sure the ones the policy depends on are there.
    let all = AccessFs::from_all(ABI::V5);
    let read = AccessFs::from_read(ABI::V5);
    let mut rs = Ruleset::default().set_compatibility(CompatLevel::BestEffort).handle_access(all).map_err(err)?;
    // With a private network namespace the namespace is the fence (its loopback is the command's to use).
    if tcp_rules(policy) {
        rs = rs.handle_access(AccessNet::from_all(ABI::V4)).map_err(err)?;
    }
    // Nor may it reach processes or abstract sockets outside (stepwise, the desktop's services).
    rs = rs.scope(Scope::from_all(ABI::V6)).map_err(err)?;
    let mut created = rs.create().map_err(err)?;
    let mut grant = |fd: OwnedFd, access: BitFlags<AccessFs>| -> std::io::Result<()> {
        let rule = PathBeneath::new(fd, access);
        created.as_mut().add_rule(rule).map_err(err).map(|_| ())
    };
    grant(open("/", true)?, read)?;
    for dir in policy.write_roots() {
        // The workspace whole, its top level included: the protected paths in it are kept by the keeper
        // (`keep/`), which Landlock cannot do (it only grants, and a name not made yet has no inode).
        match open(&dir, true) {
            Ok(fd) => grant(fd, all)?,
            // A `sandboxWritable` folder removed since the settings were read: nothing to grant.
            Err(_) if dir != policy.tmp && dir != policy.root => {}
            Err(e) => return Err(e),
        }
    }
    for dev in ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/urandom", "/dev/random"] {
        if let Ok(fd) = PathFd::new(dev) {
            let rule = PathBeneath::new(fd, AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev);
            created.as_mut().add_rule(rule).map_err(err)?;
        }
    }
    Option::<OwnedFd>::from(created).ok_or_else(|| std::io::Error::other("Landlock is not supported"))
}

/// An `O_PATH` descriptor of `path`; `follow` false opens a symlink itself (whose kind then tells).
fn open(path: impl AsRef<std::path::Path>, follow: bool) -> std::io::Result<OwnedFd> {
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    let f =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH | libc::O_CLOEXEC | nofollow).open(path)?;
    Ok(f.into())
}

/// Imposes the ruleset `fd` on the calling (single-threaded, forked) process and all it starts.
///
/// # Safety
/// Async-signal-safe: only syscalls; for a forked child before it starts the command.
pub unsafe fn restrict(fd: RawFd) -> bool {
    libc::prctl(
        libc::PR_SET_NO_NEW_PRIVS,
        1 as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong,
        0 as libc::c_ulong,
    ) == 0
        && libc::syscall(libc::SYS_landlock_restrict_self, fd, 0 as libc::c_uint) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_grants_share_one_ruleset_and_other_grants_or_a_folder_made_again_get_their_own() {
        assert!(kernel_abi().is_ok_and(|v| v >= 3), "this machine's kernel must offer Landlock: {:?}", kernel_abi());
        let dir = std::env::temp_dir().join(format!("stepwise-ruleset-{}", std::process::id()));
        let (root, tmp) = (dir.join("ws"), dir.join("tmp"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        let p = Policy { root: root.clone(), tmp, writable: Vec::new(), ..crate::sandbox::policy::example() };
        let one = ruleset(&p).unwrap();
        assert!(Arc::ptr_eq(&one, &ruleset(&p).unwrap()), "made again for the same grants");
        let read_only = ruleset(&Policy { write: false, ..p.clone() }).unwrap();
        let network = ruleset(&Policy { network: true, ..p.clone() }).unwrap();
        assert!(!Arc::ptr_eq(&one, &read_only) && !Arc::ptr_eq(&one, &network) && !Arc::ptr_eq(&read_only, &network));
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        assert!(!Arc::ptr_eq(&one, &ruleset(&p).unwrap()), "the workspace made again is another folder");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
