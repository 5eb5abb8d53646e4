//! Sessions survive a restart: conversations and plans, saved as they change. The LSP sidecar keeps one
//! file per folder (`file_for`), the ACP agent one per session id (`file_for_id`); both use this format.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::agent::Session;

const FORMAT: u32 = 1;

#[derive(Deserialize)]
struct SavedSession {
    format: u32,
    #[serde(default)]
    folder: Option<PathBuf>,
    session: Session,
}

/// What is written: the same shape, borrowed, so saving after every round copies nothing.
#[derive(Serialize)]
struct SessionFile<'a> {
    format: u32,
    folder: &'a Path,
    session: &'a Session,
}

/// A saved session in its parts: the conversation as of its last consistent point, and the plan as it
/// is now (a plan change is saved when it happens, mid-round included, without the half-done round).
#[derive(Default)]
struct Parts {
    messages: Vec<u8>,
    plan: Vec<u8>,
}

impl Parts {
    fn compose(&self, folder: &[u8]) -> Vec<u8> {
        let messages: &[u8] = if self.messages.is_empty() { b"[]" } else { &self.messages };
        let plan: &[u8] = if self.plan.is_empty() { b"\"plan\":{\"items\":[]},\"revision\":0" } else { &self.plan };
        let mut out = Vec::with_capacity(messages.len() + plan.len() + folder.len() + 64);
        out.extend_from_slice(format!("{{\"format\":{FORMAT},\"folder\":").as_bytes());
        out.extend_from_slice(folder);
        out.extend_from_slice(b",\"session\":{\"messages\":");
        out.extend_from_slice(messages);
        out.push(b',');
        out.extend_from_slice(plan);
        out.extend_from_slice(b"}}");
        out
    }
}

pub use crate::trust::state_dir;

/// One file per folder, named by a stable hash of its path (FNV-1a: no dependency, same on every run).
pub fn file_for(dir: &Path, folder: &Path) -> PathBuf {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in folder.as_os_str().as_encoded_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(40)
        .collect();
    dir.join(format!("{safe}-{h:016x}.json"))
}

/// An ACP session's file: `<dir>/acp/<id>.json`. `None` for an id that is not one of ours (the id
/// names a file, so only letters, digits, `-` and `_` are accepted).
pub fn file_for_id(dir: &Path, id: &str) -> Option<PathBuf> {
    let ok = !id.is_empty() && id.len() <= 100 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    ok.then(|| dir.join("acp").join(format!("{id}.json")))
}

pub enum Loaded {
    None,
    Restored(Session),
    /// The file could not be read as a session; it was moved to the given path.
    Corrupt {
        moved_to: Option<PathBuf>,
        error: String,
    },
}

pub fn load(file: &Path) -> Loaded {
    load_with_folder(file).0
}

/// A saved session and the folder it was saved for.
pub fn load_with_folder(file: &Path) -> (Loaded, Option<PathBuf>) {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Loaded::None, None),
        Err(e) => return (set_aside(file, e.to_string()), None),
    };
    match serde_json::from_str::<SavedSession>(&text) {
        Ok(s) if s.format == FORMAT => match s.session.plan.check() {
            Ok(()) => (Loaded::Restored(s.session), s.folder),
            Err(e) => (set_aside(file, format!("its plan breaks the plan's rules ({e})")), None),
        },
        Ok(s) => (set_aside(file, format!("unknown format {}", s.format)), None),
        Err(e) => (set_aside(file, e.to_string()), None),
    }
}

fn set_aside(file: &Path, error: String) -> Loaded {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let target = file.with_extension(format!("json.corrupt-{secs}"));
    let moved_to = std::fs::rename(file, &target).ok().map(|_| target);
    Loaded::Corrupt { moved_to, error }
}

pub fn encode(folder: &Path, session: &Session) -> Option<Vec<u8>> {
    serde_json::to_vec(&SessionFile { format: FORMAT, folder, session }).ok()
}

/// Write-then-rename, so a crash mid-write never leaves half a file.
pub fn write_atomic(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // A name of its own per write: the background writer and the flush at shutdown may write at once,
    // and sharing one temporary file could rename a half-written one into place.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = file.with_extension(format!("json.tmp-{}-{seq}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, file)
}

/// Writes of state files take turns, and each writes the newest snapshot at the time it holds this
/// lock: the background writer and the flush at shutdown may both be writing, and an older snapshot
/// must never land after a newer one.
static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One saved session's file: snapshots are written in the background as they come (older ones not yet
/// written are skipped), and the newest can be written at once (at shutdown, when background writers may
/// not get to run). The sidecar's folders and the ACP agent's sessions each hold one.
pub struct Saver {
    file: PathBuf,
    /// The workspace folder, as JSON.
    folder: Vec<u8>,
    parts: std::sync::Mutex<Parts>,
    latest: tokio::sync::watch::Sender<Option<Vec<u8>>>,
}

impl Saver {
    /// Starts the background writer of `file`, the session of `folder` (on the current runtime).
    pub fn spawn(file: PathBuf, folder: &Path) -> Saver {
        Saver {
            latest: spawn_writer(file.clone()),
            file,
            folder: serde_json::to_vec(folder).unwrap_or_else(|_| b"null".to_vec()),
            parts: Default::default(),
        }
    }

    /// What is saved already (a restored session), so a first save of one part keeps the other.
    pub fn prime(&self, session: &Session) {
        let mut parts = crate::locks::lock(&self.parts);
        parts.messages = serde_json::to_vec(&session.messages).unwrap_or_default();
        drop(parts);
        self.set_plan(&session.plan, session.revision, false);
    }

    /// The conversation reached a consistent point: hands a snapshot to the background writer.
    pub fn save_messages(&self, messages: &[crate::llm::Message]) {
        let Ok(bytes) = serde_json::to_vec(messages) else { return };
        let mut parts = crate::locks::lock(&self.parts);
        parts.messages = bytes;
        let _ = self.latest.send(Some(parts.compose(&self.folder)));
    }

    /// The plan changed: saved with the conversation as of its last consistent point.
    pub fn save_plan(&self, plan: &crate::plan::Plan, revision: u64) {
        self.set_plan(plan, revision, true);
    }

    fn set_plan(&self, plan: &crate::plan::Plan, revision: u64, write: bool) {
        #[derive(Serialize)]
        struct PlanPart<'a> {
            plan: &'a crate::plan::Plan,
            revision: u64,
        }
        let Ok(json) = serde_json::to_vec(&PlanPart { plan, revision }) else { return };
        // The fields without their braces, to sit beside "messages".
        let fields = json[1..json.len() - 1].to_vec();
        let mut parts = crate::locks::lock(&self.parts);
        parts.plan = fields;
        if write {
            let _ = self.latest.send(Some(parts.compose(&self.folder)));
        }
    }

    /// Writes the newest snapshot now (blocking).
    pub fn flush(&self) -> std::io::Result<()> {
        let _turn = crate::locks::lock(&WRITING);
        let bytes = self.latest.borrow().clone();
        match bytes {
            Some(b) => write_atomic(&self.file, &b),
            None => Ok(()),
        }
    }
}

/// Saves the latest snapshot of one folder in the background; older snapshots not yet written are skipped.
fn spawn_writer(file: PathBuf) -> tokio::sync::watch::Sender<Option<Vec<u8>>> {
    let (tx, mut rx) = tokio::sync::watch::channel::<Option<Vec<u8>>>(None);
    tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            let file = file.clone();
            let res = tokio::task::spawn_blocking(move || {
                let turn = crate::locks::lock(&WRITING);
                // The newest snapshot now, not the one that woke us.
                let bytes = rx.borrow_and_update().clone();
                let res = bytes.map_or(Ok(()), |b| write_atomic(&file, &b));
                drop(turn);
                (rx, res)
            })
            .await;
            match res {
                Ok((back, written)) => {
                    rx = back;
                    if let Err(e) = written {
                        tracing::warn!("could not save session state: {e}");
                    }
                }
                Err(e) => {
                    tracing::warn!("could not save session state: {e}");
                    return;
                }
            }
        }
    });
    tx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_name_files_inside_the_acp_folder_only() {
        let dir = Path::new("/state");
        assert_eq!(file_for_id(dir, "sw-1a2b-3_4"), Some(PathBuf::from("/state/acp/sw-1a2b-3_4.json")));
        for bad in ["", "../x", "a/b", "a.json", "..", "x\0y", &"a".repeat(101)] {
            assert_eq!(file_for_id(dir, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_folder_is_saved_with_the_session() {
        let dir = std::env::temp_dir().join(format!("stepwise-store-{}", std::process::id()));
        let file = dir.join("s.json");
        let mut session = Session::default();
        session.push_prompt("hello");
        write_atomic(&file, &encode(Path::new("/work/project"), &session).unwrap()).unwrap();
        match load_with_folder(&file) {
            (Loaded::Restored(s), Some(folder)) => {
                assert_eq!(s, session);
                assert_eq!(folder, Path::new("/work/project"));
            }
            _ => panic!("not restored with its folder"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
