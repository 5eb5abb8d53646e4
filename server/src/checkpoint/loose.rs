//! Objects kept as copy-on-write clones, one file each beside the pack (`objects/ab/cdef…`, named by the
//! SHA-256 as git names its loose objects), where the file system can clone (`clone.rs`).
//!
//! Why a file per object and not clones of ranges into the pack (`FICLONERANGE`): a range clone needs
//! block-aligned offsets, so the pack's next record header lands in the clone's last block and unshares it
//! (a 5 KB file would keep one of its two blocks shared), compacting the pack must clone every range again
//! or the sharing is gone, and macOS has no range clone at all. A clone as its own file shares every block,
//! a prune is an `unlink`, and `fclonefileat` does the same on APFS. The price is a file create, the clone,
//! a read back and a rename per object (`CLONE_MIN` says what it buys for small files).
//!
//! What is stored is what was cloned: the clone is read back and hashed (a write to the workspace file
//! after the clone does not reach it), and every read checks the bytes against their name again.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;

use super::clone;
use super::hash::Hash;

/// The smallest file cloned (`Limits::clone_min`); smaller ones are packed.
///
/// A file smaller than a block still takes a whole block in the workspace (XFS, APFS: no data in the
/// inode), so its clone shares that block and costs the store an inode (512 bytes on XFS) and a name in
/// the fan-out folder, where packed it costs its bytes. Past about an inode's size the clone is the smaller;
/// at or under it, the pack. Measured with the checkpoints benchmark (250,000 files of 0.5–5 KB, 700 MB,
/// on XFS with reflink; the store's added disk by statvfs, which counts inodes and folders; paired in one
/// run each against the copy into the pack, 710 MB, 1.01×):
///   clone every file, or from 513 bytes:  155 MB (0.22×); the copy 38–43 s of CPU against 8–11 s
///   clone from 2,049 bytes:               218 MB (0.31×); 28 s of CPU
///   clone from a block (4,096, before):   512 MB (0.73×); 12.5 s of CPU
/// The smallest disk wins: the copy is background work at the lowest priority, and its extra CPU (a
/// create, the ioctl, a read back, a rename: 120–130 µs more a file in a debug build) is paid once per
/// workspace. btrfs keeps files under 2 KB inline in its metadata, where a clone copies them: there the
/// gain starts at 2 KB (the store does not tell file systems apart; the loss is a few hundred bytes per
/// small file, not its size).
/// Where clones are refused, every file is packed, as always.
pub const CLONE_MIN: u64 = 513;

const UNKNOWN: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;

/// The folder of clones and whether this file system makes them (learnt at the first try, for the
/// session).
pub struct Clones {
    dir: PathBuf,
    mode: AtomicU8,
    seq: AtomicU64,
    /// The folder, opened at the first clone.
    fd: OnceLock<File>,
}

/// A clone made and hashed, not yet in its place.
pub struct Made {
    tmp: PathBuf,
    pub hash: Hash,
    pub len: u64,
}

impl Clones {
    /// The clones in `dir` (hash → length); leftovers of a clone cut short are removed.
    pub fn open(dir: &Path) -> (Clones, HashMap<Hash, u64>) {
        let mut objects = HashMap::new();
        for fan in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let prefix = fan.file_name().to_string_lossy().into_owned();
            if prefix.starts_with("tmp-") {
                let _ = std::fs::remove_file(fan.path());
                continue;
            }
            for e in std::fs::read_dir(fan.path()).into_iter().flatten().flatten() {
                let name = format!("{prefix}{}", e.file_name().to_string_lossy());
                if let (Some(h), Ok(m)) = (Hash::from_hex(&name), e.metadata()) {
                    objects.insert(h, m.len());
                }
            }
        }
        let clones = Clones {
            dir: dir.to_path_buf(),
            mode: AtomicU8::new(UNKNOWN),
            seq: AtomicU64::new(0),
            fd: OnceLock::new(),
        };
        (clones, objects)
    }

    /// Whether clones were made (`Some(true)`), refused by the file system (`Some(false)`: files are
    /// copied into the pack), or not tried yet.
    pub fn state(&self) -> Option<bool> {
        match self.mode.load(Ordering::Relaxed) {
            ON => Some(true),
            OFF => Some(false),
            _ => None,
        }
    }

    /// Whether a file of `len` bytes can be cloned here (not refused, not empty); which sizes are worth it
    /// is `CLONE_MIN`'s.
    pub fn wanted(&self, len: u64) -> bool {
        self.mode.load(Ordering::Relaxed) != OFF && len > 0
    }

    fn path_of(&self, h: &Hash) -> PathBuf {
        let hex = h.hex();
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// Clones `src` into a temporary file and hashes the clone; `None` when the file system refuses (then
    /// never again this session), the clone fails, or it holds more than `max` bytes.
    pub fn make(&self, src: &File, max: u64) -> Option<Made> {
        let dir = match self.folder() {
            Ok(d) => d,
            Err(e) => {
                tracing::debug!("checkpoint store: no folder for clones ({e})");
                return None;
            }
        };
        let name = format!("tmp-{}-{}", std::process::id(), self.seq.fetch_add(1, Ordering::Relaxed));
        let cname = CString::new(name.as_str()).ok()?;
        let mut file = match clone::clone_into(src, dir, &cname) {
            Ok(f) => f,
            Err(e) if clone::refused(&e) => {
                // Refused once: this file system (or this pair of them) does not clone. A refusal after
                // clones worked is one file's (on another device inside the workspace): copied, no more.
                if self.mode.compare_exchange(UNKNOWN, OFF, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                    tracing::info!(
                        "checkpoint store: {} cannot hold copy-on-write clones of the workspace's files ({e}): \
                         they are copied into the pack",
                        self.dir.display()
                    );
                }
                return None;
            }
            Err(e) => {
                tracing::debug!("checkpoint store: a clone failed, the file is copied instead: {e}");
                return None;
            }
        };
        if self.mode.compare_exchange(UNKNOWN, ON, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            tracing::info!("checkpoint store: files are copy-on-write clones in {}", self.dir.display());
        }
        let tmp = self.dir.join(&name);
        match hash_of(&mut file, max) {
            Some((hash, len)) => Some(Made { tmp, hash, len }),
            None => {
                let _ = std::fs::remove_file(&tmp);
                None
            }
        }
    }

    /// Puts a clone in its place (its name: its hash).
    pub fn keep(&self, made: &Made) -> io::Result<()> {
        let to = self.path_of(&made.hash);
        if let Some(fan) = to.parent() {
            std::fs::create_dir_all(fan)?;
        }
        std::fs::rename(&made.tmp, &to).inspect_err(|_| self.discard(made))
    }

    pub fn discard(&self, made: &Made) {
        let _ = std::fs::remove_file(&made.tmp);
    }

    /// The bytes of `h`, checked against it.
    /// The length of the clone of `h`, if it is there.
    pub fn len_of(&self, h: &Hash) -> Option<u64> {
        std::fs::metadata(self.path_of(h)).ok().map(|m| m.len())
    }

    pub fn read(&self, h: &Hash) -> io::Result<Vec<u8>> {
        let bytes = std::fs::read(self.path_of(h)).map_err(|e| {
            io::Error::new(e.kind(), format!("object {h:?} is missing from the store (its clone: {e})"))
        })?;
        if Hash::of(&bytes) != *h {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("object {h:?} is damaged in the store")));
        }
        Ok(bytes)
    }

    pub fn remove(&self, h: &Hash) {
        if let Err(e) = std::fs::remove_file(self.path_of(h)) {
            tracing::debug!("checkpoint store: cannot remove the clone {h:?}: {e}");
        }
    }

    /// The folder, created at the first clone (a store that never clones has none).
    fn folder(&self) -> io::Result<&File> {
        if let Some(d) = self.fd.get() {
            return Ok(d);
        }
        std::fs::create_dir_all(&self.dir)?;
        let _ = self.fd.set(File::open(&self.dir)?);
        self.fd.get().ok_or_else(|| io::Error::other("the folder of clones is not open"))
    }
}

/// The SHA-256 and length of what `file` holds, read in pieces; `None` past `max` bytes or on an error.
fn hash_of(file: &mut File, max: u64) -> Option<(Hash, u64)> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!("checkpoint store: cannot read a clone back: {e}");
                return None;
            }
        };
        len += n as u64;
        if len > max {
            return None;
        }
        ctx.update(&buf[..n]);
    }
    let mut h = [0u8; 32];
    h.copy_from_slice(ctx.finish().as_ref());
    Some((Hash(h), len))
}
