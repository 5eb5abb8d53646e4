//! The guard on Linux: a forked copy of stepwise that runs no program of its own. It becomes a child
//! subreaper, starts `bash -c COMMAND` with `posix_spawn` (no page tables copied), waits for it, reports
//! its status on the status pipe and then holds what the command left until stepwise ends it all.
//!
//! Why not a bash guard as on the portable paths: bash forking its subshell for the command cost about
//! 0.5 ms of the ≈1 ms a command added over a bare `bash -c` (measured, `benches/shell.rs`). Between the
//! fork and its end the guard makes only async-signal-safe calls (stepwise has other threads), on memory
//! prepared before the fork.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::RawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::OnceLock;

/// What the guard runs, made before the fork: `bash -c COMMAND` with stepwise's environment, `marker` and
/// the sandbox's variables.
pub struct Image {
    path: CString,
    _args: Vec<CString>,
    _env: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into the CStrings the image owns; nothing mutates them after `new`.
unsafe impl Send for Image {}
// SAFETY: as above; only read.
unsafe impl Sync for Image {}

impl Image {
    /// `None` when no `bash` is on the `PATH`, or the command holds a NUL byte.
    pub fn new(command: &str, marker: (&str, &str), extra: &[(OsString, OsString)]) -> Option<Image> {
        let path = bash()?.clone();
        let args = vec![CString::new("bash").ok()?, CString::new("-c").ok()?, CString::new(command).ok()?];
        let mut env: Vec<CString> = std::env::vars_os()
            .filter(|(k, _)| k != marker.0 && !extra.iter().any(|(e, _)| e == k))
            .chain(extra.iter().cloned())
            .filter_map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                CString::new(kv).ok()
            })
            .collect();
        env.push(CString::new(format!("{}={}", marker.0, marker.1)).ok()?);
        let argv = args.iter().map(|a| a.as_ptr()).chain([std::ptr::null()]).collect();
        let envp = env.iter().map(|e| e.as_ptr()).chain([std::ptr::null()]).collect();
        Some(Image { path, _args: args, _env: env, argv, envp })
    }
}

/// The `bash` on the `PATH`, looked up once (a lookup in the child costs a failed `execve` per entry).
fn bash() -> Option<&'static CString> {
    static BASH: OnceLock<Option<CString>> = OnceLock::new();
    BASH.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
        std::env::split_paths(&path)
            .map(|dir| dir.join("bash"))
            .find(|p| is_executable(p.as_os_str()))
            .and_then(|p| CString::new(p.into_os_string().into_vec()).ok())
    })
    .as_ref()
}

fn is_executable(path: &OsStr) -> bool {
    let Ok(c) = CString::new(path.as_bytes()) else { return false };
    // SAFETY: a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// The guard's life, in the forked child (std has set up its stdio, working folder and process group).
/// Never returns. `parent` is stepwise's pid; `status` and `hold` are the status pipe's write end and the read end of the pipe only
/// stepwise holds open; `sandbox` a Landlock ruleset to impose on the guard (so on the command), or -1;
/// `netns` the (user or -1, net or -1) namespaces to join first (`sandbox/netns.rs`).
///
/// # Safety
/// Only in a freshly forked child, as a `pre_exec` hook.
pub unsafe fn run(image: &Image, parent: u32, status: RawFd, hold: RawFd, sandbox: RawFd, netns: (RawFd, RawFd)) -> ! {
    // stepwise's handlers (the runtime's) mean nothing here; the command starts with the defaults.
    for sig in 1..32 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP && sig != libc::SIGTERM {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    let mut term: libc::sigaction = std::mem::zeroed();
    term.sa_sigaction = end_group as extern "C" fn(libc::c_int) as libc::sighandler_t;
    libc::sigemptyset(&mut term.sa_mask);
    libc::sigaction(libc::SIGTERM, &term, std::ptr::null_mut());
    // If stepwise dies (even by SIGKILL) the guard gets SIGTERM and takes its whole process group down;
    // tokio spawns from its long-lived worker threads, whose exit would also count.
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong);
    if libc::getppid() as u32 != parent {
        // stepwise died before the signal was asked for: nothing may start.
        libc::_exit(1);
    }
    if netns.1 >= 0 && !crate::sandbox::join_netns(netns.0, netns.1) {
        let msg = b"stepwise: the sandbox's network namespace could not be joined, so the command did not run\n";
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::write(status, b"126\n".as_ptr().cast(), 4);
        libc::_exit(1);
    }
    if sandbox >= 0 && !crate::sandbox::landlock_restrict(sandbox) {
        // Never run unconfined what was meant to be confined: say so and report a failure.
        let msg = b"stepwise: the sandbox could not be applied, so the command did not run\n";
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::write(status, b"126\n".as_ptr().cast(), 4);
        libc::_exit(1);
    }
    close_all_but(status, hold);
    let mut pid: libc::pid_t = 0;
    let spawned = libc::posix_spawn(
        &mut pid,
        image.path.as_ptr(),
        std::ptr::null(),
        std::ptr::null(),
        image.argv.as_ptr() as *const *mut libc::c_char,
        image.envp.as_ptr() as *const *mut libc::c_char,
    );
    // As a shell reports it: death by signal N is 128 + N; 127 when bash could not start.
    let code = if spawned != 0 {
        127
    } else if ended_within(pid, QUICK_MS) {
        wait_for(pid)
    } else {
        // A longer command: the guard lives on, so it lets go of its copy of stepwise's memory.
        release_memory();
        wait_for(pid)
    };
    let mut text = [0u8; 12];
    let len = decimal(code, &mut text);
    libc::write(status, text.as_ptr().cast(), len);
    libc::close(status);
    let mut buf = [0u8; 16];
    loop {
        let n = libc::read(hold, buf.as_mut_ptr().cast(), buf.len());
        if n > 0 || (n < 0 && *libc::__errno_location() == libc::EINTR) {
            continue;
        }
        break;
    }
    libc::kill(0, libc::SIGKILL);
    libc::_exit(0)
}

/// The parent-death signal (stepwise is gone, even by `kill -9`): the group dies, and so does every
/// process that left it (`setsid`, double forks): as a subreaper the guard is the parent of each one whose
/// parent died, so it kills its children and reaps until it has none left, then ends.
extern "C" fn end_group(_: libc::c_int) {
    // SAFETY: only async-signal-safe calls (kill, open, read, close, waitpid, _exit).
    unsafe {
        // Not the group first: the guard is in it, and would die before the escapees.
        let me = libc::getpid();
        for _ in 0..4096 {
            kill_children(me);
            let mut st = 0;
            if libc::waitpid(-1, &mut st, 0) < 0 && *libc::__errno_location() == libc::ECHILD {
                break;
            }
        }
        libc::kill(0, libc::SIGKILL);
        libc::_exit(1);
    }
}

/// SIGKILLs the children `/proc` lists for `pid` (the guard is single-threaded: one task).
unsafe fn kill_children(pid: libc::pid_t) {
    let mut path = *b"/proc/self/task/0000000000/children\0";
    // "/proc/self/task/" then the pid's digits then "/children".
    let mut digits = [0u8; 12];
    let n = decimal(pid, &mut digits) - 1;
    let mut at = 16;
    path[at..at + n].copy_from_slice(&digits[..n]);
    at += n;
    let rest = b"/children\0";
    path[at..at + rest.len()].copy_from_slice(rest);
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    let len = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
    libc::close(fd);
    let mut child: libc::pid_t = 0;
    for &b in &buf[..len.max(0) as usize] {
        if b.is_ascii_digit() {
            child = child * 10 + (b - b'0') as libc::pid_t;
        } else {
            if child > 0 {
                libc::kill(child, libc::SIGKILL);
            }
            child = 0;
        }
    }
    if child > 0 {
        libc::kill(child, libc::SIGKILL);
    }
}

/// The command's exit status as a shell gives it.
unsafe fn wait_for(pid: libc::pid_t) -> i32 {
    let mut st = 0;
    loop {
        let r = libc::waitpid(pid, &mut st, 0);
        if r == pid {
            break;
        }
        if r < 0 && *libc::__errno_location() != libc::EINTR {
            return 255;
        }
    }
    if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        libc::WEXITSTATUS(st)
    }
}

/// Closes every descriptor but stdio and the two given (stepwise's sockets and files, and std's pipe
/// waiting for an `exec` that never comes: its closing tells the parent the spawn succeeded).
unsafe fn close_all_but(a: RawFd, b: RawFd) {
    let (lo, hi) = (a.min(b) as libc::c_uint, a.max(b) as libc::c_uint);
    for (first, last) in [(3, lo.wrapping_sub(1)), (lo + 1, hi.wrapping_sub(1)), (hi + 1, libc::c_uint::MAX)] {
        if first > last {
            continue;
        }
        if libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
            // Kernels before 5.9: one by one, up to the limit.
            let mut lim: libc::rlimit = std::mem::zeroed();
            let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 { lim.rlim_cur.min(65536) } else { 4096 };
            for fd in first..=(last.min(top as libc::c_uint)) {
                libc::close(fd as RawFd);
            }
        }
    }
}

/// Most commands end within this: for them the guard is killed before its memory matters, and letting go
/// of it (tearing down the pages it shares) would only compete with the command for a core.
const QUICK_MS: libc::c_int = 20;

/// Whether `pid` ended within `ms` milliseconds (its pidfd becomes readable); false where pidfds are not
/// supported (before Linux 5.3).
unsafe fn ended_within(pid: libc::pid_t, ms: libc::c_int) -> bool {
    let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as libc::c_int;
    if fd < 0 {
        return false;
    }
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ready = libc::poll(&mut p, 1, ms) == 1;
    libc::close(fd);
    ready
}

/// Lets go of the guard's copy of stepwise's heap and other threads' stacks. A fork shares every page
/// until one side writes it: while the guard held them, each page stepwise wrote during a command was
/// copied, and the guard kept the old copy (a command running while stepwise wrote 30 MB left a 31 MB
/// guard). Kept: file mappings, the stack in use and the thread-local block (the calls that follow use
/// only those); whatever else the guard read from now on would read as zeros, and it reads nothing else.
unsafe fn release_memory() {
    let here = 0u8;
    let keep = [&here as *const u8 as usize, libc::__errno_location() as usize];
    let fd = libc::open(c"/proc/self/maps".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    let mut len = 0;
    loop {
        let n = libc::read(fd, buf.as_mut_ptr().add(len).cast(), buf.len() - len);
        if n <= 0 {
            break;
        }
        len += n as usize;
        let mut start = 0;
        while let Some(nl) = buf[start..len].iter().position(|&b| b == b'\n') {
            if let Some((lo, hi)) = spare_range(&buf[start..start + nl]) {
                if !keep.iter().any(|&a| lo <= a && a < hi) {
                    libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_DONTNEED);
                }
            }
            start += nl + 1;
        }
        buf.copy_within(start..len, 0);
        len -= start;
        if len == buf.len() {
            // A line longer than the buffer (a long path): not anonymous memory; skip what was read of it.
            len = 0;
        }
    }
    libc::close(fd);
}

/// The range of a `/proc/self/maps` line if it is private, writable, anonymous memory (the heap,
/// thread stacks, allocations).
fn spare_range(line: &[u8]) -> Option<(usize, usize)> {
    let mut fields = line.split(|&b| b == b' ').filter(|f| !f.is_empty());
    let (range, perms) = (fields.next()?, fields.next()?);
    let (_offset, _device, inode) = (fields.next()?, fields.next()?, fields.next()?);
    let name = fields.next().unwrap_or(b"");
    let anonymous = name.is_empty() || name == b"[heap]" || name.starts_with(b"[anon:");
    if perms != b"rw-p" || inode != b"0" || !anonymous {
        return None;
    }
    let dash = range.iter().position(|&b| b == b'-')?;
    Some((hex(&range[..dash])?, hex(&range[dash + 1..])?))
}

fn hex(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0usize, |n, &d| Some(n << 4 | (d as char).to_digit(16)? as usize))
}

/// Writes `n` (non-negative) and a newline into `out`; returns the length.
fn decimal(n: i32, out: &mut [u8; 12]) -> usize {
    let mut digits = [0u8; 10];
    let (mut n, mut k) = (n.max(0) as u32, 0);
    loop {
        digits[k] = b'0' + (n % 10) as u8;
        k += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..k {
        out[i] = digits[k - 1 - i];
    }
    out[k] = b'\n';
    k + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_writes_the_status_as_the_guard_reads_it() {
        let mut out = [0u8; 12];
        for n in [0, 7, 42, 137, 255, 12345] {
            let len = decimal(n, &mut out);
            assert_eq!(std::str::from_utf8(&out[..len]).unwrap(), format!("{n}\n"));
        }
    }

    #[test]
    fn only_private_anonymous_writable_memory_is_spare() {
        let spare = |l: &str| spare_range(l.as_bytes());
        assert_eq!(spare("7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0 "), Some((0x7f1c2a000000, 0x7f1c2a021000)));
        assert_eq!(
            spare("55d0c8a5e000-55d0c8a7f000 rw-p 00000000 00:00 0                          [heap]"),
            Some((0x55d0c8a5e000, 0x55d0c8a7f000))
        );
        assert_eq!(
            spare("7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0   [anon:tokio]"),
            Some((0x7f1c2a000000, 0x7f1c2a021000))
        );
        for kept in [
            "7ffd5c3e1000-7ffd5c402000 rw-p 00000000 00:00 0                          [stack]",
            "7f1c2b21d000-7f1c2b21f000 rw-p 0021c000 08:01 1835         /usr/lib/x86_64-linux-gnu/libc.so.6",
            "7f1c2a000000-7f1c2a021000 r--p 00000000 00:00 0 ",
            "7f1c2a000000-7f1c2a021000 rw-s 00000000 00:01 42  /dev/zero (deleted)",
            "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
            "7f1c2a000000-7f1c2a021000 rw-p",
            "garbage",
        ] {
            assert_eq!(spare(kept), None, "{kept}");
        }
    }

    #[test]
    fn the_image_carries_the_command_and_the_marker() {
        let image = Image::new("echo hi", ("STEPWISE_TEST_MARK", "1-2"), &[("TMPDIR".into(), "/t".into())])
            .expect("bash on the PATH");
        // SAFETY: the pointers are the image's own NUL-terminated strings, the lists NULL-terminated.
        let strs = |v: &Vec<*const libc::c_char>| -> Vec<String> {
            v.iter()
                .take_while(|p| !p.is_null())
                .map(|p| unsafe { std::ffi::CStr::from_ptr(*p) }.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(strs(&image.argv), ["bash", "-c", "echo hi"]);
        assert!(image.argv.last().unwrap().is_null() && image.envp.last().unwrap().is_null());
        let env = strs(&image.envp);
        assert_eq!(env.iter().filter(|e| e.starts_with("STEPWISE_TEST_MARK=")).count(), 1);
        assert!(env.contains(&"STEPWISE_TEST_MARK=1-2".to_string()));
        assert_eq!(env.iter().filter(|e| e.starts_with("TMPDIR=")).collect::<Vec<_>>(), ["TMPDIR=/t"]);
        assert!(image.path.to_str().unwrap().ends_with("/bash"));
    }
}
