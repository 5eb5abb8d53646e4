//! A session's private network namespace, for sandboxed commands with the network off: its own
//! loopback (up) and nothing else, so a test can bind and reach 127.0.0.1, commands of the same session
//! (a background task and a later command) reach each other, and nothing outside the machine, the host's
//! own ports included, can be reached, nor anything inside from the host.
//!
//! Made once per session: as root by a short-lived thread of stepwise (a network namespace belongs to a
//! thread, so `unshare(CLONE_NEWNET)` moves that thread alone, which then ends), otherwise by a
//! short-lived forked child with a user namespace of its own (`CLONE_NEWUSER`, mapping the user to
//! itself; a process with other threads may not enter a new user namespace); stepwise keeps the
//! namespaces' descriptors. The guard joins them with `setns` before it starts the
//! command (`join`). The namespace lives while a descriptor or a process holds it: the session's drop
//! closes the descriptors, the kernel does when stepwise dies (even by SIGKILL), and the processes inside
//! are the guards', which end with their commands or with stepwise (their parent-death signal).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// The namespaces' descriptors.
#[derive(Debug)]
pub struct NetNs {
    net: OwnedFd,
    /// The user namespace that owns `net`, when stepwise is not root (joined first: `setns` into the
    /// network namespace needs CAP_SYS_ADMIN in its owner).
    user: Option<OwnedFd>,
}

/// A session's namespace, shared by its policies (equal when it is the same one).
#[derive(Debug, Clone)]
pub struct NetRef(pub Arc<NetNs>);

impl PartialEq for NetRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for NetRef {}

impl NetNs {
    /// The raw descriptors the guard joins: (user or -1, net).
    pub fn fds(&self) -> (RawFd, RawFd) {
        (self.user.as_ref().map_or(-1, |f| f.as_raw_fd()), self.net.as_raw_fd())
    }

    /// Whether it came with a user namespace (stepwise is not root).
    pub fn with_user_namespace(&self) -> bool {
        self.user.is_some()
    }

    /// Makes one, or says why it cannot be made here.
    pub fn make() -> Result<NetNs, String> {
        // SAFETY: plain queries.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        if uid == 0 {
            return make_in_thread();
        }
        // Not root: a forked helper, with a user namespace. Everything the child uses is made before the fork: it may only make syscalls.
        let uid_map = CString::new(format!("{uid} {uid} 1\n")).map_err(|e| e.to_string())?;
        let gid_map = CString::new(format!("{gid} {gid} 1\n")).map_err(|e| e.to_string())?;
        let (ready_r, ready_w) = pipe()?;
        let (go_r, go_w) = pipe()?;
        // SAFETY: the child makes only async-signal-safe syscalls on memory made before the fork and
        // ends with `_exit`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: as above, in the forked child.
            unsafe {
                // Its copies of the parent's ends, so that an end the parent closes reads as closed.
                libc::close(ready_r.as_raw_fd());
                libc::close(go_w.as_raw_fd());
                child(&uid_map, &gid_map, ready_w.as_raw_fd(), go_r.as_raw_fd())
            }
        }
        drop(ready_w);
        drop(go_r);
        let mut status = [255u8; 1];
        // SAFETY: reading one byte into a live buffer.
        let n = unsafe { libc::read(ready_r.as_raw_fd(), status.as_mut_ptr().cast(), 1) };
        let opened = if n == 1 && status[0] == 0 {
            let net = open_ns(pid, "net");
            let user = open_ns(pid, "user");
            net.and_then(|net| Ok(NetNs { net, user: Some(user?) }))
        } else {
            Err(match status[0] {
                1 => "this user may not make a user namespace (unprivileged user namespaces are off, or a \
                      container's seccomp policy forbids them)"
                    .to_string(),
                2 => "the user namespace's uid/gid map could not be written".to_string(),
                3 => "the namespace's loopback could not be brought up".to_string(),
                _ => "the helper that makes the namespace died".to_string(),
            })
        };
        // A byte rather than the end of the pipe: a helper forked at the same time by another thread
        // may hold a copy of this write end.
        // SAFETY: writing one byte from a live buffer.
        unsafe { libc::write(go_w.as_raw_fd(), b"g".as_ptr().cast(), 1) };
        drop(go_w);
        let mut st = 0;
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        opened
    }
}

/// As root: a thread of its own leaves stepwise's namespace for a new one, brings its loopback up, opens it
/// and ends (issue 39: the forked helper copied stepwise's page tables and was a process to start, end and
/// reap, about 0.3 ms more than the namespace itself, once per session).
fn make_in_thread() -> Result<NetNs, String> {
    let made = std::thread::Builder::new().name("sandbox-netns".into()).spawn(|| {
        // SAFETY: plain syscalls; they change this thread alone, which does nothing else and then ends.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(format!("unshare(CLONE_NEWNET) was refused: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: as above.
        if !unsafe { loopback_up() } {
            return Err("the namespace's loopback could not be brought up".to_string());
        }
        let path = "/proc/thread-self/ns/net";
        let net = std::fs::File::open(path).map(OwnedFd::from).map_err(|e| format!("{path}: {e}"))?;
        Ok(NetNs { net, user: None })
    });
    made.map_err(|e| format!("no thread to make the namespace: {e}"))?
        .join()
        .map_err(|_| "the thread that makes the namespace panicked".to_string())?
}

fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0; 2];
    // SAFETY: a live two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: both are fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn open_ns(pid: libc::pid_t, kind: &str) -> Result<OwnedFd, String> {
    let path = format!("/proc/{pid}/ns/{kind}");
    std::fs::File::open(&path).map(OwnedFd::from).map_err(|e| format!("{path}: {e}"))
}

/// The helper (not root): makes the namespaces, reports (0 or what failed), waits until stepwise opened them.
unsafe fn child(uid_map: &CString, gid_map: &CString, ready: RawFd, go: RawFd) -> ! {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
    let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNET;
    let mapped = || {
        write_file(c"/proc/self/setgroups", b"deny")
            && write_file(c"/proc/self/uid_map", uid_map.as_bytes())
            && write_file(c"/proc/self/gid_map", gid_map.as_bytes())
    };
    let status: u8 = if libc::unshare(flags) != 0 {
        1
    } else if !mapped() {
        2
    } else if !loopback_up() {
        3
    } else {
        0
    };
    libc::write(ready, (&status as *const u8).cast(), 1);
    let mut b = [0u8; 1];
    libc::read(go, b.as_mut_ptr().cast(), 1);
    libc::_exit(0)
}

unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return false;
    }
    let ok = libc::write(fd, bytes.as_ptr().cast(), bytes.len()) == bytes.len() as isize;
    libc::close(fd);
    ok
}

/// `ip link set lo up`: SIOCGIFFLAGS / SIOCSIFFLAGS on a socket of the new namespace.
unsafe fn loopback_up() -> bool {
    let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if sock < 0 {
        return false;
    }
    // `struct ifreq`: the name (16 bytes), then a union whose first short is the flags.
    let mut req = [0u8; 40];
    req[..2].copy_from_slice(b"lo");
    let mut ok = libc::ioctl(sock, libc::SIOCGIFFLAGS as _, req.as_mut_ptr()) == 0;
    if ok {
        let flags = i16::from_ne_bytes([req[16], req[17]]) | libc::IFF_UP as i16;
        req[16..18].copy_from_slice(&flags.to_ne_bytes());
        ok = libc::ioctl(sock, libc::SIOCSIFFLAGS as _, req.as_mut_ptr()) == 0;
    }
    libc::close(sock);
    ok
}

/// Joins the namespaces `user` (or -1) and `net`, in a forked child before it starts the command.
///
/// # Safety
/// Async-signal-safe: only syscalls; for a single-threaded forked child.
pub unsafe fn join(user: RawFd, net: RawFd) -> bool {
    (user < 0 || libc::setns(user, libc::CLONE_NEWUSER) == 0) && libc::setns(net, libc::CLONE_NEWNET) == 0
}

/// Whether a namespace can be made here, and how (`Ok("as root")`), or why not; tried once.
pub fn availability() -> Result<&'static str, String> {
    static TRIED: std::sync::OnceLock<Result<&'static str, String>> = std::sync::OnceLock::new();
    TRIED
        .get_or_init(|| {
            let ns = NetNs::make()?;
            Ok(if ns.with_user_namespace() { "in a user namespace" } else { "as root" })
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_namespace_is_made_apart_and_the_maker_stays_where_it_was() {
        let ino = |path: &str| std::fs::metadata(path).map(|m| m.ino()).unwrap();
        let (process, thread) = (ino("/proc/self/ns/net"), ino("/proc/thread-self/ns/net"));
        let ns = match NetNs::make() {
            Ok(ns) => ns,
            Err(why) => {
                eprintln!("CANNOT TRY: no network namespace can be made here ({why})");
                return;
            }
        };
        let made = ino(&format!("/proc/self/fd/{}", ns.fds().1));
        assert_ne!(made, process, "the namespace is stepwise's own");
        assert_eq!((ino("/proc/self/ns/net"), ino("/proc/thread-self/ns/net")), (process, thread));
    }
}
