//! Copy-on-write clones of a whole file: `FICLONE` on Linux (btrfs, XFS with reflink, bcachefs),
//! `fclonefileat` on macOS (APFS). The clone shares the source's blocks until either is written, so the
//! store holds a file without a second copy of its bytes, and a later write to the workspace file leaves
//! the clone as it was (a stable snapshot).

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};

/// Makes `name` in `dir` a clone of `src`, opened for reading. Nothing is left at `name` on failure.
#[cfg(target_os = "linux")]
pub fn clone_into(src: &File, dir: &File, name: &CStr) -> io::Result<File> {
    let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a valid fd and a NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, 0o600 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd we own.
    let file = unsafe { File::from_raw_fd(fd) };
    // SAFETY: two valid fds; FICLONE takes the source's fd as its argument.
    if unsafe { libc::ioctl(file.as_raw_fd(), libc::FICLONE, src.as_raw_fd()) } < 0 {
        let e = io::Error::last_os_error();
        // SAFETY: as above; the name is ours.
        unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
        return Err(e);
    }
    Ok(file)
}

/// Makes `name` in `dir` a clone of `src`, opened for reading. Nothing is left at `name` on failure.
#[cfg(target_os = "macos")]
pub fn clone_into(src: &File, dir: &File, name: &CStr) -> io::Result<File> {
    // SAFETY: valid fds and a NUL-terminated name. The clone takes the source's mode; the state
    // directory is the user's own.
    if unsafe { libc::fclonefileat(src.as_raw_fd(), dir.as_raw_fd(), name.as_ptr(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a valid fd and a NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        // SAFETY: as above; the name is ours.
        unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
        return Err(e);
    }
    // SAFETY: a fresh fd we own.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Whether `e` says this file system (or this pair of them) cannot clone at all, as opposed to a failure
/// of this one file: ext4 and tmpfs (`EOPNOTSUPP`, `ENOTTY`), XFS made without reflink (`EINVAL`), the
/// store on another device than the workspace (`EXDEV`), a kernel without the call (`ENOSYS`).
pub fn refused(e: &io::Error) -> bool {
    // EOPNOTSUPP and ENOTSUP are one number on Linux, two on macOS.
    let codes = [libc::EOPNOTSUPP, libc::ENOTSUP, libc::EXDEV, libc::EINVAL, libc::ENOTTY, libc::ENOSYS];
    e.raw_os_error().is_some_and(|n| codes.contains(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_holds_the_source_or_is_refused_and_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("stepwise-clone-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("src"), vec![7u8; 10_000]).unwrap();
        let src = File::open(dir.join("src")).unwrap();
        let d = File::open(&dir).unwrap();
        match clone_into(&src, &d, c"copy") {
            Ok(_) => assert_eq!(std::fs::read(dir.join("copy")).unwrap(), vec![7u8; 10_000]),
            Err(e) => {
                assert!(refused(&e), "{e}");
                assert!(!dir.join("copy").exists(), "a refused clone leaves nothing");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
