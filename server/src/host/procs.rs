//! What the operating system tells about other processes, for finding a command's escaped children.
//!
//! Linux: a process's children (`/proc/<pid>/task/<tid>/children`, for the subreaper's tree), and for the
//! portable paths the processes started since a moment with their environment (`/proc`). macOS: the
//! same two questions through libproc (`proc_listpids`, `proc_pidinfo`) and `sysctl(KERN_PROCARGS2)`.

/// A moment on the clock process start times are given in; see `started_since`.
#[derive(Debug, Clone, Copy)]
pub struct Mark(u64);

/// The children of `pid`, from every one of its threads; `None` where the kernel does not list them
/// (built without `CONFIG_PROC_CHILDREN`). Reliable once they are stopped, which is how it is used.
#[cfg(target_os = "linux")]
pub fn children(pid: i32) -> Option<Vec<i32>> {
    let tasks = match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(t) => t,
        // Gone already: no children left to it.
        Err(_) => return Some(Vec::new()),
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        match std::fs::read_to_string(task.path().join("children")) {
            Ok(s) => out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && task.path().exists() => return None,
            Err(_) => {}
        }
    }
    Some(out)
}

/// Now, a little early: a process started from here on has a start time at or after it.
#[cfg(target_os = "linux")]
pub fn mark() -> Mark {
    // Start times are clock ticks since boot (monotonic before Linux 5.5, boot time since, which is never
    // behind it): the monotonic clock errs on the early side, which only adds candidates.
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    // SAFETY: plain query.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let ticks = ts.tv_sec as u64 * hz + ts.tv_nsec as u64 * hz / 1_000_000_000;
    Mark(ticks.saturating_sub(1))
}

/// The processes (any user's the kernel shows) started at or after `since`.
#[cfg(target_os = "linux")]
pub fn started_since(since: Mark) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // Field 22 (starttime); the command name before it may hold spaces and parentheses.
        let start = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(19)?.parse::<u64>().ok());
        if start.is_some_and(|s| s >= since.0) {
            out.push(pid);
        }
    }
    out
}

/// Whether `entry` (`NAME=value`) is in the environment `pid` started with.
#[cfg(target_os = "linux")]
pub fn has_env(pid: i32, entry: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == entry.as_bytes()))
}

#[cfg(target_os = "macos")]
pub fn mark() -> Mark {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    // Start times are wall-clock microseconds; a second early covers a clock that steps back a little.
    Mark((now.as_micros() as u64).saturating_sub(1_000_000))
}

/// This user's processes started at or after `since` (the others' environments are not ours to read).
#[cfg(target_os = "macos")]
pub fn started_since(since: Mark) -> Vec<i32> {
    // sys/proc_info.h: PROC_UID_ONLY lists the processes of one user.
    const PROC_UID_ONLY: u32 = 4;
    // SAFETY: plain query.
    let uid = unsafe { libc::getuid() };
    let mut pids: Vec<libc::pid_t> = vec![0; 4096];
    loop {
        let bytes = (pids.len() * std::mem::size_of::<libc::pid_t>()) as libc::c_int;
        // SAFETY: the buffer holds `bytes` bytes.
        let got = unsafe { libc::proc_listpids(PROC_UID_ONLY, uid, pids.as_mut_ptr().cast(), bytes) };
        if got <= 0 {
            return Vec::new();
        }
        let n = got as usize / std::mem::size_of::<libc::pid_t>();
        if n < pids.len() {
            pids.truncate(n);
            break;
        }
        pids.resize(pids.len() * 2, 0);
    }
    pids.into_iter()
        .filter(|&pid| pid > 0)
        .filter(|&pid| {
            // SAFETY: proc_bsdinfo is plain data; the call fills at most its size.
            let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
            let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
            // SAFETY: valid pointer to a proc_bsdinfo of `size` bytes.
            let got = unsafe {
                libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, (&mut info as *mut libc::proc_bsdinfo).cast(), size)
            };
            got == size && info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec >= since.0
        })
        .collect()
}

/// Whether `entry` (`NAME=value`) is in the environment `pid` started with (`KERN_PROCARGS2`: argc, the
/// executable's path, then argv and the environment, all NUL-separated).
#[cfg(target_os = "macos")]
pub fn has_env(pid: i32, entry: &str) -> bool {
    let mut max: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>();
    let mut mib = [libc::CTL_KERN, libc::KERN_ARGMAX];
    // SAFETY: valid name, output pointer and its length.
    let ok = unsafe {
        libc::sysctl(mib.as_mut_ptr(), 2, (&mut max as *mut libc::c_int).cast(), &mut len, std::ptr::null_mut(), 0)
    };
    if ok != 0 || max <= 0 {
        return false;
    }
    let mut buf = vec![0u8; max as usize];
    let mut len = buf.len();
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, pid];
    // SAFETY: valid name, a buffer of `len` bytes and its length.
    let ok = unsafe { libc::sysctl(mib.as_mut_ptr(), 3, buf.as_mut_ptr().cast(), &mut len, std::ptr::null_mut(), 0) };
    if ok != 0 || len <= std::mem::size_of::<libc::c_int>() {
        return false;
    }
    buf[std::mem::size_of::<libc::c_int>()..len].split(|b| *b == 0).any(|var| var == entry.as_bytes())
}
