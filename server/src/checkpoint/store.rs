//! The object store: contents named by their SHA-256, each kept once, appended to one pack file.
//!
//! One file rather than a file per object: a workspace's first snapshot holds thousands of small files,
//! and as separate files each would take a disk block (4 KiB) and a create, a write and a rename. The
//! index (hash → offset) lives in memory and is rebuilt on open from the records' headers. A record is
//! `hash (32 bytes) | length (u64 LE) | bytes`; a torn last record (a crash mid-write) is cut off on open,
//! and every read checks the bytes against their hash, so damage elsewhere is reported, never restored.
//!
//! Where the file system can clone (copy-on-write), a workspace file over 512 bytes is not copied into
//! the pack but kept as a clone beside it (`loose.rs`), which shares the workspace file's blocks: the store
//! then costs no disk for it until one of the two changes.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use super::hash::Hash;
use super::loose::Clones;

const HEADER: u64 = 40;

/// The pack, shared by the checkpoints and the background copy (`copy.rs`): every method takes `&self`
/// and holds the lock for one record (a clone is made and hashed without it).
pub struct Pack {
    inner: Mutex<Inner>,
    clones: Clones,
}

struct Inner {
    path: PathBuf,
    file: File,
    /// hash → offset of the bytes (their length is in the record's header, just before: a workspace's
    /// copy holds hundreds of thousands of objects, and 8 bytes less each is megabytes).
    index: HashMap<Hash, u64>,
    end: u64,
    /// The clones beside the pack, and their bytes in all. A set, not hash → length as the pack's index:
    /// nearly every file of a workspace can be a clone, and at 250,000 the 8 bytes less each keep the
    /// table under the 64 MB the checkpoints may hold (a length is one `stat` of the clone away).
    loose: HashSet<Hash>,
    loose_bytes: u64,
}

impl Pack {
    /// The pack at `path`, and the clones in the `objects` folder beside it.
    pub fn open(path: &Path) -> io::Result<Pack> {
        let mut inner = Inner::open(path)?;
        let (clones, loose) = Clones::open(&path.with_file_name("objects"));
        inner.loose_bytes = loose.values().sum();
        inner.loose = loose.into_keys().collect();
        Ok(Pack { inner: Mutex::new(inner), clones })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        crate::locks::lock(&self.inner)
    }

    /// Whether a file of `len` bytes can be cloned (`put_clone`) here; which sizes are worth it is the caller's.
    pub fn wants_clone(&self, len: u64) -> bool {
        self.clones.wanted(len)
    }

    /// Stores what `src` (a file of `len` bytes) holds as a copy-on-write clone, unless the pack would pass
    /// `limit` bytes or it holds more than `max` bytes; its hash. `None` when it was not cloned (too small
    /// to be worth it, a file system that cannot clone, a failure): the caller copies it instead.
    pub fn put_clone(&self, src: &File, len: u64, max: u64, limit: u64) -> Option<Hash> {
        if !self.clones.wanted(len) || self.size() + len > limit {
            return None;
        }
        let made = self.clones.make(src, max)?;
        let mut inner = self.inner();
        if inner.contains(&made.hash) {
            self.clones.discard(&made);
            return Some(made.hash);
        }
        if inner.size() + made.len > limit {
            self.clones.discard(&made);
            return None;
        }
        if let Err(e) = self.clones.keep(&made) {
            tracing::debug!("checkpoint store: cannot keep a clone, the file is copied instead: {e}");
            return None;
        }
        inner.loose.insert(made.hash);
        inner.loose_bytes += made.len;
        Some(made.hash)
    }

    /// Whether files are stored as clones (`Some(false)`: the file system refused, they are copied), or
    /// `None` before the first file big enough to try.
    pub fn cloning(&self) -> Option<bool> {
        self.clones.state()
    }

    pub fn put(&self, data: &[u8]) -> io::Result<Hash> {
        let h = Hash::of(data);
        self.put_hashed(h, data)?;
        Ok(h)
    }

    /// Stores `data`, already hashed as `h`, unless it is there.
    pub fn put_hashed(&self, h: Hash, data: &[u8]) -> io::Result<()> {
        self.inner().put_hashed(h, data)
    }

    /// Stores `data` unless it is there or the pack would pass `limit` bytes; whether it is stored.
    pub fn put_within(&self, h: Hash, data: &[u8], limit: u64) -> io::Result<bool> {
        let mut inner = self.inner();
        if !inner.contains(&h) && inner.size() + data.len() as u64 > limit {
            return Ok(false);
        }
        inner.put_hashed(h, data).map(|()| true)
    }

    pub fn contains(&self, h: &Hash) -> bool {
        self.inner().contains(h)
    }

    /// The stored length of `h`, if stored.
    pub fn len_of(&self, h: &Hash) -> Option<u64> {
        let inner = self.inner();
        if inner.loose.contains(h) {
            drop(inner);
            return self.clones.len_of(h);
        }
        let off = *inner.index.get(h)?;
        inner.len_at(off).ok()
    }

    pub fn get(&self, h: &Hash) -> io::Result<Vec<u8>> {
        let inner = self.inner();
        if !inner.index.contains_key(h) && inner.loose.contains(h) {
            drop(inner);
            return self.clones.read(h);
        }
        inner.get(h)
    }

    /// Bytes the store holds: the pack, garbage included, and the clones at their full length (a clone
    /// costs no disk until the workspace file changes, but then all of it: the limit counts it whole).
    pub fn size(&self) -> u64 {
        self.inner().size()
    }

    /// Rewrites the pack with only the objects in `keep` (write a new file, then rename it over), and
    /// removes the clones not in it (the others stay as they are, still sharing their blocks).
    pub fn retain(&self, keep: &HashSet<Hash>) -> io::Result<()> {
        let mut inner = self.inner();
        inner.retain(keep)?;
        let gone: Vec<Hash> = inner.loose.iter().filter(|h| !keep.contains(h)).copied().collect();
        for h in gone {
            let n = self.clones.len_of(&h).unwrap_or(0);
            self.clones.remove(&h);
            inner.loose.remove(&h);
            inner.loose_bytes = inner.loose_bytes.saturating_sub(n);
        }
        Ok(())
    }
}

impl Inner {
    fn open(path: &Path) -> io::Result<Inner> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        let len = file.metadata()?.len();
        let mut index = HashMap::new();
        let mut pos = 0u64;
        let mut head = [0u8; HEADER as usize];
        while pos + HEADER <= len {
            file.read_exact_at(&mut head, pos)?;
            let mut n = [0u8; 8];
            n.copy_from_slice(&head[32..]);
            let n = u64::from_le_bytes(n);
            if n > len - pos - HEADER {
                break;
            }
            let mut h = [0u8; 32];
            h.copy_from_slice(&head[..32]);
            index.insert(Hash(h), pos + HEADER);
            pos += HEADER + n;
        }
        if pos < len {
            tracing::warn!("checkpoint store {}: cut a torn record at {pos}", path.display());
            file.set_len(pos)?;
        }
        Ok(Inner { path: path.to_path_buf(), file, index, end: pos, loose: HashSet::new(), loose_bytes: 0 })
    }

    fn contains(&self, h: &Hash) -> bool {
        self.index.contains_key(h) || self.loose.contains(h)
    }

    fn size(&self) -> u64 {
        self.end + self.loose_bytes
    }

    fn put_hashed(&mut self, h: Hash, data: &[u8]) -> io::Result<()> {
        if self.contains(&h) {
            return Ok(());
        }
        let mut head = [0u8; HEADER as usize];
        head[..32].copy_from_slice(&h.0);
        head[32..].copy_from_slice(&(data.len() as u64).to_le_bytes());
        self.file.write_all_at(&head, self.end)?;
        self.file.write_all_at(data, self.end + HEADER)?;
        self.index.insert(h, self.end + HEADER);
        self.end += HEADER + data.len() as u64;
        Ok(())
    }

    /// The length of the object whose bytes start at `off`.
    fn len_at(&self, off: u64) -> io::Result<u64> {
        let mut n = [0u8; 8];
        self.file.read_exact_at(&mut n, off - 8)?;
        Ok(u64::from_le_bytes(n))
    }

    fn get(&self, h: &Hash) -> io::Result<Vec<u8>> {
        let &off = self
            .index
            .get(h)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("object {h:?} is not in the store")))?;
        let n = self.len_at(off)?;
        if off + n > self.end {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("object {h:?} is damaged in the store")));
        }
        let mut buf = vec![0u8; n as usize];
        self.file.read_exact_at(&mut buf, off)?;
        if Hash::of(&buf) != *h {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("object {h:?} is damaged in the store")));
        }
        Ok(buf)
    }

    fn retain(&mut self, keep: &HashSet<Hash>) -> io::Result<()> {
        let tmp = self.path.with_extension("pack.tmp");
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&tmp)?;
        let mut out =
            Inner { path: tmp.clone(), file, index: HashMap::new(), end: 0, loose: HashSet::new(), loose_bytes: 0 };
        let mut live: Vec<(&Hash, &u64)> = self.index.iter().filter(|(h, _)| keep.contains(h)).collect();
        live.sort_by_key(|(_, &off)| off);
        for (h, _) in live {
            match self.get(h) {
                Ok(bytes) => out.put_hashed(*h, &bytes)?,
                Err(e) => tracing::warn!("checkpoint store: dropped while compacting: {e}"),
            }
        }
        std::fs::rename(&tmp, &self.path)?;
        out.path = self.path.clone();
        out.loose = std::mem::take(&mut self.loose);
        out.loose_bytes = self.loose_bytes;
        *self = out;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_kept_once_survive_reopening_and_a_torn_tail() {
        let dir = std::env::temp_dir().join(format!("stepwise-pack-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("objects.pack");
        let pack = Pack::open(&path).unwrap();
        let a = pack.put(b"alpha").unwrap();
        let size = pack.size();
        assert_eq!(pack.put(b"alpha").unwrap(), a);
        assert_eq!(pack.size(), size, "stored once");
        let b = pack.put(b"beta").unwrap();
        drop(pack);
        // A crash mid-write leaves half a record.
        let f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all_at(&[7u8; 50], std::fs::metadata(&path).unwrap().len()).unwrap();
        let pack = Pack::open(&path).unwrap();
        assert_eq!(pack.get(&a).unwrap(), b"alpha");
        assert_eq!(pack.get(&b).unwrap(), b"beta");
        pack.retain(&HashSet::from([a, b])).unwrap();
        pack.retain(&HashSet::from([b])).unwrap();
        assert!(!pack.contains(&a));
        assert_eq!(pack.get(&b).unwrap(), b"beta", "readable after compacting twice");
        assert_eq!(Pack::open(&path).unwrap().get(&b).unwrap(), b"beta");
        assert_eq!(Hash::from_hex(&a.hex()), Some(a));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Where the temporary folder's file system clones (run with `TMPDIR` on XFS: `tests/cow/test.sh`), a
    /// file of a block is a clone beside the pack, read back exactly, kept by a compaction that keeps it and
    /// removed by one that does not; elsewhere it is refused once and left to the copy.
    #[test]
    fn a_file_of_a_block_is_cloned_where_the_file_system_can_and_left_to_the_copy_elsewhere() {
        let dir = std::env::temp_dir().join(format!("stepwise-pack-clone-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(dir.join("big"), &bytes).unwrap();
        let src = File::open(dir.join("big")).unwrap();
        let pack = Pack::open(&dir.join("objects.pack")).unwrap();
        assert_eq!(pack.cloning(), None);
        assert!(!pack.wants_clone(0), "an empty file has nothing to share");
        assert_eq!(pack.put_clone(&src, 20_000, 10_000, u64::MAX), None, "over the size limit");
        match pack.put_clone(&src, 20_000, 1 << 20, u64::MAX) {
            Some(h) => {
                assert_eq!(pack.cloning(), Some(true));
                assert_eq!(h, Hash::of(&bytes));
                assert_eq!(pack.get(&h).unwrap(), bytes);
                assert_eq!((pack.len_of(&h), pack.size()), (Some(20_000), 20_000));
                let small = pack.put(b"small").unwrap();
                pack.retain(&HashSet::from([h, small])).unwrap();
                let reopened = Pack::open(&dir.join("objects.pack")).unwrap();
                assert_eq!(reopened.get(&h).unwrap(), bytes, "a clone survives a compaction and a restart");
                drop(reopened);
                pack.retain(&HashSet::from([small])).unwrap();
                assert!(!pack.contains(&h));
                assert!(!dir.join("objects").join(&h.hex()[..2]).join(&h.hex()[2..]).exists());
                assert_eq!(pack.get(&small).unwrap(), b"small");
            }
            None => {
                assert_eq!(pack.cloning(), Some(false), "refused, and remembered");
                assert!(!pack.wants_clone(20_000), "not tried again this session");
                assert_eq!(pack.size(), 0);
            }
        }
        let leftovers: Vec<_> = std::fs::read_dir(dir.join("objects"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
