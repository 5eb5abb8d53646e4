//! Reading and putting back paths beneath the workspace, never through a path that leaves it.
//!
//! Every operation opens the parent directory with `host::beneath` (`openat2(RESOLVE_BENEATH)`) and acts
//! on the last name relative to it (`fstatat`, `openat(O_NOFOLLOW)`, `unlinkat`, `renameat`): a folder
//! swapped for a symlink to somewhere else, even between two steps, is refused by the kernel. A file is
//! put back by writing a fresh temporary file next to it and renaming it over the name, so nothing is
//! written through a symlink or a hard link, and a reader never sees half a file.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::state::{Mark, Stat};
use crate::host::beneath;

/// What a path holds now.
pub enum Seen {
    Absent,
    /// `bytes` is `None` for a file over the size limit (not read).
    File {
        stat: Stat,
        bytes: Option<Vec<u8>>,
    },
    Link {
        stat: Stat,
        target: Vec<u8>,
    },
    /// A directory, a FIFO, a socket, a device.
    Other,
}

impl Seen {
    pub fn mark(&self) -> Mark {
        match self {
            Seen::Absent => Mark::Absent,
            Seen::File { bytes: Some(b), .. } => Mark::of_bytes(b),
            Seen::File { stat, bytes: None } => Mark::Stat { size: stat.size, mtime: stat.mtime },
            Seen::Link { target, .. } => Mark::of_link(target),
            Seen::Other => Mark::Other,
        }
    }
}

fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn split(key: &str) -> (Option<&str>, &str) {
    match key.rsplit_once('/') {
        Some((parent, name)) => (Some(parent), name),
        None => (None, key),
    }
}

fn open_parent(root: &File, parent: Option<&str>) -> io::Result<File> {
    match parent {
        None => root.try_clone(),
        // Not `O_PATH` (Linux only): see `beneath`'s `DIR`.
        Some(p) => beneath::open_in(root, Path::new(p), libc::O_RDONLY | libc::O_DIRECTORY, 0),
    }
}

fn gone(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR))
}

fn stat_of(st: &libc::stat) -> Stat {
    // `st_mode` is a u16 on macOS.
    #[allow(clippy::useless_conversion)]
    let mode = u32::from(st.st_mode);
    Stat {
        link: st.st_mode & libc::S_IFMT == libc::S_IFLNK,
        size: st.st_size as u64,
        mtime: st.st_mtime.saturating_mul(1_000_000_000).saturating_add(st.st_mtime_nsec),
        ctime: st.st_ctime.saturating_mul(1_000_000_000).saturating_add(st.st_ctime_nsec),
        ino: st.st_ino,
        mode,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Link,
    Other,
}

/// What kind of entry `key` is beneath `root`, with its `lstat`; `None` when absent.
pub fn lstat(root: &File, key: &str) -> io::Result<Option<(Kind, Stat)>> {
    let (parent, name) = split(key);
    let dir = match open_parent(root, parent) {
        Err(e) if gone(&e) => return Ok(None),
        other => other?,
    };
    let cname = cstr(name)?;
    // SAFETY: zeroed plain data, filled by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, NUL-terminated name, pointer to a live stat.
    match check(unsafe { libc::fstatat(dir.as_raw_fd(), cname.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) }) {
        Err(e) if gone(&e) => Ok(None),
        Err(e) => Err(e),
        Ok(()) => {
            let kind = match st.st_mode & libc::S_IFMT {
                libc::S_IFDIR => Kind::Dir,
                libc::S_IFREG => Kind::File,
                libc::S_IFLNK => Kind::Link,
                _ => Kind::Other,
            };
            Ok(Some((kind, stat_of(&st))))
        }
    }
}

/// What `key` (a checkpoint key, see `state::key_of`) holds beneath `root`; files up to `max_file` bytes
/// are read whole.
pub fn look(root: &File, key: &str, max_file: u64) -> io::Result<Seen> {
    let (parent, name) = split(key);
    let dir = match open_parent(root, parent) {
        Err(e) if gone(&e) => return Ok(Seen::Absent),
        other => other?,
    };
    let cname = cstr(name)?;
    // SAFETY: zeroed plain data, filled by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, NUL-terminated name, pointer to a live stat.
    if let Err(e) = check(unsafe { libc::fstatat(dir.as_raw_fd(), cname.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })
    {
        return if gone(&e) { Ok(Seen::Absent) } else { Err(e) };
    }
    match st.st_mode & libc::S_IFMT {
        libc::S_IFLNK => {
            let mut buf = vec![0u8; 4096];
            // SAFETY: valid fd and name; the buffer is as long as said.
            let n = unsafe { libc::readlinkat(dir.as_raw_fd(), cname.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            buf.truncate(n as usize);
            Ok(Seen::Link { stat: stat_of(&st), target: buf })
        }
        libc::S_IFREG => {
            let file = match open_in(&dir, &cname) {
                Err(e) if gone(&e) => return Ok(Seen::Absent),
                other => other?,
            };
            // The name may have been swapped since fstatat: what counts is what was opened.
            let meta = file.metadata()?;
            if !meta.file_type().is_file() {
                return Ok(Seen::Other);
            }
            let stat = Stat::of_meta(&meta);
            if stat.size > max_file {
                return Ok(Seen::File { stat, bytes: None });
            }
            let mut bytes = Vec::with_capacity(stat.size as usize);
            file.take(max_file + 1).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > max_file {
                return Ok(Seen::File { stat, bytes: None });
            }
            Ok(Seen::File { stat, bytes: Some(bytes) })
        }
        _ => Ok(Seen::Other),
    }
}

/// Opens `name` in `dir` for reading, never through a symlink, never blocking on a FIFO.
fn open_in(dir: &File, name: &CString) -> io::Result<File> {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    // SAFETY: valid fd and NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd we own.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// The regular file at `key` beneath `root`, opened for reading, with its `lstat`; `None` when absent or
/// not a regular file (a symlink, a folder: `look` tells what it is).
pub fn open_file(root: &File, key: &str) -> io::Result<Option<(File, Stat)>> {
    let (parent, name) = split(key);
    let dir = match open_parent(root, parent) {
        Err(e) if gone(&e) => return Ok(None),
        other => other?,
    };
    let file = match open_in(&dir, &cstr(name)?) {
        Err(e) if gone(&e) || e.raw_os_error() == Some(libc::ELOOP) => return Ok(None),
        other => other?,
    };
    let meta = file.metadata()?;
    Ok(meta.file_type().is_file().then(|| (file, Stat::of_meta(&meta))))
}

static SEQ: AtomicU64 = AtomicU64::new(0);

fn temp_name() -> String {
    format!(".stepwise-rewind-{}-{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed))
}

/// Makes a temporary entry with `make` in `key`'s folder (created as needed), then renames it over `key`.
fn replace(
    root: &File,
    root_path: &Path,
    key: &str,
    make: impl FnOnce(&File, &CString) -> io::Result<()>,
) -> io::Result<()> {
    let (parent, name) = split(key);
    if let Some(p) = parent {
        beneath::create_dirs(root_path, Path::new(p))?;
    }
    let dir = open_parent(root, parent)?;
    let tmp = cstr(&temp_name())?;
    let cname = cstr(name)?;
    let made = make(&dir, &tmp).and_then(|()| {
        // SAFETY: valid fds and NUL-terminated names.
        check(unsafe { libc::renameat(dir.as_raw_fd(), tmp.as_ptr(), dir.as_raw_fd(), cname.as_ptr()) })
    });
    if made.is_err() {
        // SAFETY: as above; the temporary name is ours.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
    }
    made
}

/// Puts `bytes` at `key` with permission bits `mode`.
pub fn write(root: &File, root_path: &Path, key: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mode = mode & 0o777;
    replace(root, root_path, key, |dir, tmp| {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid fd and NUL-terminated name.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), tmp.as_ptr(), flags, mode as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd we own.
        let mut file = unsafe { File::from_raw_fd(fd) };
        file.write_all(bytes)?;
        // The umask may have taken bits the file had.
        // SAFETY: a valid fd.
        check(unsafe { libc::fchmod(file.as_raw_fd(), mode as libc::mode_t) })
    })
}

/// Puts a symlink to `target` at `key`.
pub fn link(root: &File, root_path: &Path, key: &str, target: &str) -> io::Result<()> {
    let target = cstr(target)?;
    replace(root, root_path, key, |dir, tmp| {
        // SAFETY: NUL-terminated strings and a valid fd.
        check(unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), tmp.as_ptr()) })
    })
}

/// Removes the file or symlink at `key`; one already gone is fine.
pub fn remove(root: &File, key: &str) -> io::Result<()> {
    let (parent, name) = split(key);
    let dir = match open_parent(root, parent) {
        Err(e) if gone(&e) => return Ok(()),
        other => other?,
    };
    let cname = cstr(name)?;
    // SAFETY: valid fd and NUL-terminated name.
    match check(unsafe { libc::unlinkat(dir.as_raw_fd(), cname.as_ptr(), 0) }) {
        Err(e) if gone(&e) => Ok(()),
        other => other,
    }
}

/// Removes the folder at `key` if it is empty; says whether it did.
pub fn remove_empty_dir(root: &File, key: &str) -> io::Result<bool> {
    let (parent, name) = split(key);
    let dir = match open_parent(root, parent) {
        Err(e) if gone(&e) => return Ok(false),
        other => other?,
    };
    let cname = cstr(name)?;
    // SAFETY: valid fd and NUL-terminated name.
    match check(unsafe { libc::unlinkat(dir.as_raw_fd(), cname.as_ptr(), libc::AT_REMOVEDIR) }) {
        Ok(()) => Ok(true),
        Err(e) if gone(&e) || matches!(e.raw_os_error(), Some(libc::ENOTEMPTY) | Some(libc::EEXIST)) => Ok(false),
        Err(e) => Err(e),
    }
}
