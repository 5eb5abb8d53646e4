//! A small file the workspace holds (`.env`, `.mcp.json`, `AGENTS.md`, an ignore file) read without trusting
//! it: the model can make any of them with a shell command, so a FIFO in its place must not block the read
//! for ever (a plain open waits for a writer: `stepwise run` hung before its first request on a FIFO named
//! `.env` or `.mcp.json`), a device or folder is refused, and a huge file is read only up to a bound.

use std::io::Read;
use std::path::Path;

/// What the file at `path` holds, its first `max` bytes: opened without blocking (a FIFO opens at once and
/// is then refused with the rest of what is not a regular file), with a symlink followed only if `follow`.
/// A missing file is `NotFound`, as with `std::fs`.
pub fn read(path: &Path, max: u64, follow: bool) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | nofollow).open(path)?;
    read_from(file, max)
}

/// What a file opened without blocking holds, its first `max` bytes; anything but a regular file is refused.
/// Read to the length it has (a small file in one call, with no second call to find its end; a file that
/// grows meanwhile is read as it was), so many small files cost little (a run reads every skill's head).
pub fn read_from(mut file: std::fs::File, max: u64) -> std::io::Result<Vec<u8>> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    if meta.len() == 0 {
        // Empty, or a file that does not say its length (procfs): read to its end.
        let mut bytes = Vec::new();
        file.take(max).read_to_end(&mut bytes)?;
        return Ok(bytes);
    }
    let mut bytes = vec![0; meta.len().min(max) as usize];
    let mut filled = 0;
    while filled < bytes.len() {
        match read_some(&mut file, &mut bytes[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// One read into `buf`, retried when a signal interrupts it.
pub(crate) fn read_some(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// `read` as text: `InvalidData` if the bytes read are not UTF-8.
pub fn read_string(path: &Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read(path, max, true)?).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_a_folder_or_an_unfollowed_symlink_is_refused_at_once_and_a_file_is_cut_at_the_bound() {
        let dir = std::env::temp_dir().join(format!("stepwise-text-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("folder")).unwrap();
        std::fs::write(dir.join("real"), "0123456789").unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        let fifo = std::ffi::CString::new(dir.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a plain syscall on a path of our own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        // On a thread: an open that waited for the FIFO's writer would block for ever.
        let d = dir.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(read(&d.join("fifo"), 100, true).map_err(|e| e.kind())));
        let fifo = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("blocked on the FIFO");
        assert_eq!(fifo, Err(std::io::ErrorKind::InvalidInput));
        assert_eq!(read(&dir.join("folder"), 100, true).map_err(|e| e.kind()), Err(std::io::ErrorKind::InvalidInput));
        assert!(read(&dir.join("link"), 100, false).is_err(), "a symlink followed");
        assert_eq!(read(&dir.join("link"), 4, true).unwrap(), b"0123");
        assert_eq!(read_string(&dir.join("real"), 100).unwrap(), "0123456789");
        assert_eq!(read(&dir.join("none"), 1, true).map_err(|e| e.kind()), Err(std::io::ErrorKind::NotFound));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
