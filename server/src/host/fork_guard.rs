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

/// What the guard runs, made before the fork: `bash -c COMMAND` with stepwise's environment and `marker`.
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
    pub fn new(command: &str, marker: (&str, &str)) -> Option<Image> {
        let path = bash()?.clone();
        let args = vec![CString::new("bash").ok()?, CString::new("-c").ok()?, CString::new(command).ok()?];
        let mut env: Vec<CString> = std::env::vars_os()
            .filter(|(k, _)| k != marker.0)
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
/// stepwise holds open.
///
/// # Safety
/// Only in a freshly forked child, as a `pre_exec` hook.
pub unsafe fn run(image: &Image, parent: u32, status: RawFd, hold: RawFd) -> ! {
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
    let code = if spawned != 0 { 127 } else { wait_for(pid) };
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

extern "C" fn end_group(_: libc::c_int) {
    // SAFETY: plain syscall on our own process group.
    unsafe { libc::kill(0, libc::SIGKILL) };
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
    fn the_image_carries_the_command_and_the_marker() {
        let image = Image::new("echo hi", ("STEPWISE_TEST_MARK", "1-2")).expect("bash on the PATH");
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
        assert!(image.path.to_str().unwrap().ends_with("/bash"));
    }
}
