//! What a file system says about disk use, for the copy-on-write checkpoint test and benchmark: a file's
//! extents (FIEMAP, with whether another file shares them) and the free space under a folder (statvfs,
//! which counts inodes and folders too).

use std::os::fd::AsRawFd;
use std::path::Path;

const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B; // _IOWR('f', 11, struct fiemap): not in the libc crate
const FIEMAP_FLAG_SYNC: u32 = 1;
const FIEMAP_EXTENT_LAST: u32 = 0x1;
const FIEMAP_EXTENT_SHARED: u32 = 0x2000;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

#[repr(C)]
struct Fiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped: u32,
    count: u32,
    reserved: u32,
    extents: [RawExtent; 64],
}

/// One extent of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub physical: u64,
    pub length: u64,
    /// Another file (a clone) shares its blocks.
    pub shared: bool,
}

/// The file's extents, from the kernel's FIEMAP (the file's data written out first).
pub fn extents(path: &Path) -> Vec<Extent> {
    let f = std::fs::File::open(path).unwrap();
    let mut out = Vec::new();
    let mut start = 0u64;
    loop {
        let mut m = Fiemap {
            start,
            length: u64::MAX - start,
            flags: FIEMAP_FLAG_SYNC,
            mapped: 0,
            count: 64,
            reserved: 0,
            extents: [RawExtent::default(); 64],
        };
        // SAFETY: a valid fd and a fiemap with room for `count` extents.
        let r = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP as _, &mut m as *mut Fiemap) };
        assert_eq!(r, 0, "FIEMAP {}: {}", path.display(), std::io::Error::last_os_error());
        let got = &m.extents[..m.mapped as usize];
        out.extend(got.iter().map(|e| Extent {
            physical: e.physical,
            length: e.length,
            shared: e.flags & FIEMAP_EXTENT_SHARED != 0,
        }));
        match got.last() {
            Some(e) if e.flags & FIEMAP_EXTENT_LAST == 0 => start = e.logical + e.length,
            _ => return out,
        }
    }
}

/// Bytes free on the file system under `dir`, once what was written to it is on disk.
pub fn free_bytes(dir: &Path) -> u64 {
    let d = std::fs::File::open(dir).unwrap();
    // SAFETY: a valid fd; zeroed plain data filled by the kernel.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    unsafe {
        assert_eq!(libc::syncfs(d.as_raw_fd()), 0);
        assert_eq!(libc::fstatvfs(d.as_raw_fd(), &mut st), 0);
    }
    #[allow(clippy::unnecessary_cast)]
    let free = st.f_bfree as u64 * st.f_frsize as u64;
    free
}
