//! The command line's host: files on disk, commands approved on the terminal (or by `--yes`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::beneath;
use super::{run_shell_in, Approval, Ask, EditContext, FileChange, Host, Policy, ResolvedPath, ShellOutput};

/// Asks the user (commands, protected writes); `None` means everything is approved (`--yes`). Dropping
/// the future (a cancelled task) abandons the question.
pub type Approver = Arc<dyn Fn(&Ask<'_>) -> futures_util::future::BoxFuture<'static, Approval> + Send + Sync>;

pub struct DiskHost {
    root: PathBuf,
    approver: Option<Approver>,
}

impl DiskHost {
    /// `root` must exist; it is canonicalised so symlinked workspaces compare correctly.
    pub fn new(root: &Path, approver: Option<Approver>) -> std::io::Result<DiskHost> {
        Ok(DiskHost { root: std::fs::canonicalize(root)?, approver })
    }
}

/// The largest file read or edited whole; larger ones are for the shell (`head`, `sed`).
pub const MAX_FILE: u64 = 16 * 1024 * 1024;

pub(crate) async fn read_disk(path: &ResolvedPath) -> Result<String, String> {
    let p = path.clone();
    tokio::task::spawn_blocking(move || read_beneath(&p))
        .await
        .unwrap_or_else(|e| Err(format!("reading {} failed: {e}", path.given)))
}

pub(crate) async fn write_disk(path: &ResolvedPath, content: &str) -> Result<(), String> {
    let (p, c) = (path.clone(), content.to_string());
    tokio::task::spawn_blocking(move || write_beneath(&p, &c))
        .await
        .unwrap_or_else(|e| Err(format!("writing {} failed: {e}", path.given)))
}

/// What a file is, when it is not a regular file (a FIFO would block a read forever).
fn kind_of(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_block_device() || t.is_char_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

fn read_beneath(path: &ResolvedPath) -> Result<String, String> {
    use std::io::Read;
    let mut file = open_regular(path, "read")?;
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    if meta.len() > MAX_FILE {
        return Err(too_large(path, meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // `take`: a file that grows while it is read still stops at the limit.
    (&mut file).take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| io_error(path, e))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(too_large(path, bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| format!("{} is not a UTF-8 text file", path.given))
}

/// `read_file` from disk: streamed, so the file's size does not matter (see `preview`).
pub(crate) async fn preview_disk(path: &ResolvedPath, limit: Option<u64>) -> Result<super::preview::Preview, String> {
    let p = path.clone();
    let read = move || {
        let file = open_regular(&p, "read")?;
        super::preview::read_stream(file, limit).map_err(|e| match e {
            super::preview::PreviewError::Io(e) => io_error(&p, e),
            super::preview::PreviewError::NotUtf8 => format!("{} is not a UTF-8 text file", p.given),
        })
    };
    tokio::task::spawn_blocking(read).await.unwrap_or_else(|e| Err(format!("reading {} failed: {e}", path.given)))
}

/// Opens a file beneath the workspace for reading; anything but a regular file is refused (a FIFO
/// would block, a device never end).
pub(crate) fn open_regular(path: &ResolvedPath, what: &str) -> Result<std::fs::File, String> {
    // Non-blocking, so opening a FIFO returns at once; the type is checked on the opened file itself.
    let file = beneath::open(&path.root, &path.rel, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY, 0)
        .map_err(|e| io_error(path, e))?;
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    if let Some(kind) = kind_of(&meta) {
        return Err(format!("{} is {kind}; only regular files can be {what}", path.given));
    }
    Ok(file)
}

fn too_large(path: &ResolvedPath, size: u64) -> String {
    format!(
        "{} is {} MB; files up to {} MB are read whole (use the shell, e.g. head or sed, for larger ones)",
        path.given,
        size.div_ceil(1024 * 1024),
        MAX_FILE / (1024 * 1024)
    )
}

fn write_beneath(path: &ResolvedPath, content: &str) -> Result<(), String> {
    use std::io::Write;
    if let Some(parent) = path.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        beneath::create_dirs(&path.root, parent).map_err(|e| io_error(path, e))?;
    }
    let mut file =
        beneath::open(&path.root, &path.rel, libc::O_WRONLY | libc::O_CREAT | libc::O_NONBLOCK | libc::O_NOCTTY, 0o666)
            .map_err(|e| io_error(path, e))?;
    let meta = file.metadata().map_err(|e| io_error(path, e))?;
    if let Some(kind) = kind_of(&meta) {
        return Err(format!("{} is {kind}; only regular files can be written", path.given));
    }
    // Writing through a hard link would change the other name's file too, which may lie outside the
    // workspace. (Reads are allowed: a hard link is made by the user or a command they approved, never by
    // a cloned repository or a file tool.)
    use std::os::unix::fs::MetadataExt;
    if meta.nlink() > 1 {
        return Err(format!(
            "{} has {} hard links; stepwise does not write through a hard link, whose other names may lie outside the workspace",
            path.given,
            meta.nlink()
        ));
    }
    // Written over the old bytes, then cut to length: an edit rewrites pages in place rather than
    // freeing the whole file and allocating it again.
    file.write_all(content.as_bytes()).map_err(|e| io_error(path, e))?;
    file.set_len(content.len() as u64).map_err(|e| io_error(path, e))
}

pub(crate) fn io_error(path: &ResolvedPath, e: std::io::Error) -> String {
    if beneath::is_escape(&e) {
        return format!("Path escapes workspace: {}", path.given);
    }
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("No such file: {}", path.given),
        std::io::ErrorKind::InvalidData => format!("{} is not a UTF-8 text file", path.given),
        _ => format!("{}: {e}", path.given),
    }
}

impl Host for DiskHost {
    fn root(&self) -> &Path {
        &self.root
    }

    async fn read_file(&self, path: &ResolvedPath) -> Result<String, String> {
        read_disk(path).await
    }

    async fn read_preview(&self, path: &ResolvedPath, limit: Option<u64>) -> Result<super::preview::Preview, String> {
        preview_disk(path, limit).await
    }

    async fn apply_change(&self, path: &ResolvedPath, change: &FileChange, _ctx: &EditContext) -> Result<(), String> {
        write_disk(path, &change.new_text).await
    }

    async fn approve(&self, ask: &Ask<'_>, _call_id: &str) -> Approval {
        match &self.approver {
            None => Approval::Allow,
            Some(approver) => approver(ask).await,
        }
    }

    async fn run_command(
        &self,
        command: &str,
        timeout: Duration,
        sandbox: Option<&Policy>,
    ) -> Result<ShellOutput, String> {
        run_shell_in(&self.root, command, timeout, sandbox).await
    }
}
