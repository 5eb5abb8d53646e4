//! Opening files beneath the workspace without a check-then-use race.
//!
//! `resolve` checks a path once; a directory swapped for a symlink between that check and the open could
//! still lead outside. So every open goes through `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`
//! relative to the workspace directory: the kernel refuses any step that leaves it, at the moment of use.
//! Hand-written over libc (a few lines) rather than a capability crate: this is the one call we need.
//! Kernels before 5.6 and every other Unix (macOS) lack openat2; there each component is opened with
//! `openat(O_NOFOLLOW)` from the one before (which also refuses symlinks that stay inside). The walk uses
//! the same flags everywhere, so the test suite runs it on Linux too (`platform::portable`).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// The error a refused escape gets; callers turn it into the contract's "Path escapes workspace".
pub fn is_escape(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EXDEV) | Some(libc::ELOOP))
}

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn cvt(fd: libc::c_long) -> io::Result<RawFd> {
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as RawFd)
    }
}

#[cfg(target_os = "linux")]
fn openat2(dir: RawFd, rel: &Path, flags: libc::c_int, mode: u32) -> io::Result<File> {
    let name = cstr(rel)?;
    // SAFETY: open_how is plain data (non-exhaustive, so built from zeroes); the kernel reads `size` bytes.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = if flags & libc::O_CREAT != 0 { mode as u64 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: valid fd, NUL-terminated name, pointer and size of a live open_how.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    // SAFETY: a fresh fd we own.
    cvt(fd).map(|fd| unsafe { File::from_raw_fd(fd) })
}

/// Opens a directory to walk on from: `O_RDONLY`, not Linux's `O_PATH`, because `O_PATH | O_NOFOLLOW`
/// would open a symlink itself rather than refuse it, and macOS has no `O_PATH`.
const DIR: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY;

/// The fallback: one component at a time, never following a symlink.
fn walk(dir: RawFd, rel: &Path, flags: libc::c_int, mode: u32) -> io::Result<File> {
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(io::Error::from_raw_os_error(libc::EXDEV)),
        })
        .collect::<io::Result<_>>()?;
    let Some((last, dirs)) = parts.split_last() else { return Err(io::Error::from_raw_os_error(libc::EINVAL)) };
    let mut held: Option<File> = None;
    for d in dirs {
        let at = held.as_ref().map(|f| f.as_raw_fd()).unwrap_or(dir);
        let name = cstr(Path::new(d))?;
        // SAFETY: valid fd and NUL-terminated name.
        let fd = unsafe { libc::openat(at, name.as_ptr(), DIR | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
        // SAFETY: a fresh fd we own.
        held =
            Some(unsafe { File::from_raw_fd(cvt(fd as libc::c_long).map_err(|e| symlink_is_escape(at, &name, e))?) });
    }
    let at = held.as_ref().map(|f| f.as_raw_fd()).unwrap_or(dir);
    let name = cstr(Path::new(last))?;
    // SAFETY: valid fd and NUL-terminated name.
    let fd =
        unsafe { libc::openat(at, name.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC, mode as libc::c_uint) };
    // SAFETY: a fresh fd we own.
    cvt(fd as libc::c_long).map(|fd| unsafe { File::from_raw_fd(fd) }).map_err(|e| symlink_is_escape(at, &name, e))
}

/// `O_DIRECTORY | O_NOFOLLOW` on a symlink fails with ENOTDIR (Linux) rather than ELOOP: a symlink met on
/// the way is an escape, whatever the kernel calls it.
fn symlink_is_escape(at: RawFd, name: &CString, e: io::Error) -> io::Error {
    if e.raw_os_error() != Some(libc::ENOTDIR) {
        return e;
    }
    // SAFETY: stat is plain data, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, NUL-terminated name, pointer to a live stat.
    let r = unsafe { libc::fstatat(at, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK {
        io::Error::from_raw_os_error(libc::ELOOP)
    } else {
        e
    }
}

/// Opens `rel` (relative, normalised) beneath `root` with `open(2)` flags.
pub fn open(root: &Path, rel: &Path, flags: libc::c_int, mode: u32) -> io::Result<File> {
    open_in(&File::open(root)?, rel, flags, mode)
}

/// `open` beneath a directory already open (checkpoint scans open many files under one root).
pub fn open_in(dir: &File, rel: &Path, flags: libc::c_int, mode: u32) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    if !super::platform::portable() {
        match openat2(dir.as_raw_fd(), rel, flags, mode) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {}
            other => return other,
        }
    }
    walk(dir.as_raw_fd(), rel, flags, mode)
}

/// Creates `rel` and its missing parents as directories beneath `root`.
pub fn create_dirs(root: &Path, rel: &Path) -> io::Result<()> {
    let mut prefix = std::path::PathBuf::new();
    for c in rel.components() {
        let Component::Normal(name) = c else { return Err(io::Error::from_raw_os_error(libc::EXDEV)) };
        let parent = if prefix.as_os_str().is_empty() { File::open(root)? } else { open(root, &prefix, DIR, 0)? };
        let cname = cstr(Path::new(name))?;
        // SAFETY: valid fd and NUL-terminated name.
        if unsafe { libc::mkdirat(parent.as_raw_fd(), cname.as_ptr(), 0o777) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(e);
            }
        }
        prefix.push(name);
    }
    Ok(())
}
