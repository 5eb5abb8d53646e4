//! Sessions survive a restart: conversations and plans, saved as they change. The LSP sidecar keeps one
//! file per folder (`file_for`), the ACP agent one per session id (`file_for_id`); both use this format.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::agent::Session;
use crate::images::saved::{Pending, SavedMessage};
use crate::snapshot::{Snapshot, FORMAT};

#[derive(Deserialize)]
struct LoadedSession {
    format: u32,
    #[serde(default)]
    folder: Option<PathBuf>,
    session: Session,
}

/// What is written: the same shape, borrowed, so saving after every round copies nothing; images by
/// reference (`images::saved`).
#[derive(Serialize)]
struct SessionFile<'a> {
    format: u32,
    folder: &'a Path,
    session: SavedSession<'a>,
}

#[derive(Serialize)]
struct SavedSession<'a> {
    messages: Vec<SavedMessage<'a>>,
    plan: &'a crate::plan::Plan,
    revision: u64,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    children: &'a [crate::subagents::Record],
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
    // Images come back from their files beside the session.
    let read = match crate::images::saved::resolve(&text, &crate::images::saved::dir_for(file)) {
        None => serde_json::from_str::<LoadedSession>(&text).map_err(|e| e.to_string()),
        Some(t) => t.and_then(|t| serde_json::from_str::<LoadedSession>(&t).map_err(|e| e.to_string())),
    };
    match read {
        Ok(s) if s.format == FORMAT => match s.session.plan.check() {
            Ok(()) => (Loaded::Restored(s.session), s.folder),
            Err(e) => (set_aside(file, format!("its plan breaks the plan's rules ({e})")), None),
        },
        Ok(s) => (set_aside(file, format!("unknown format {}", s.format)), None),
        Err(e) => (set_aside(file, e), None),
    }
}

fn set_aside(file: &Path, error: String) -> Loaded {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let target = file.with_extension(format!("json.corrupt-{secs}"));
    let moved_to = std::fs::rename(file, &target).ok().map(|_| target);
    Loaded::Corrupt { moved_to, error }
}

/// The session file's bytes; the images it names are left to the caller (`images::saved::write`).
pub fn encode(folder: &Path, session: &Session) -> Option<Vec<u8>> {
    // Every field of the session is written; a field added to `Session` fails to compile here.
    let Session { messages, plan, revision, children } = session;
    let messages = messages.iter().map(|m| SavedMessage::new(m).0).collect();
    let session = SavedSession { messages, plan, revision: *revision, children };
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
///
/// A save on the loop's task encodes only what changed since the last one (`Snapshot`); the whole
/// file is put together and written by the background writer.
pub struct Saver {
    file: PathBuf,
    latest: Arc<Mutex<Latest>>,
    wake: tokio::sync::watch::Sender<()>,
}

#[derive(Default)]
struct Latest {
    snapshot: Snapshot,
    /// Something was saved (a flush writes it even when the writer already has).
    saved: bool,
    /// Saved since the writer last wrote.
    unwritten: bool,
}

impl Latest {
    /// The newest bytes, if there are any worth writing, and the images they name not yet written.
    fn take(&mut self, even_if_written: bool) -> Option<(Vec<u8>, Vec<Pending>)> {
        let due = self.saved && (self.unwritten || even_if_written);
        self.unwritten = false;
        due.then(|| (self.snapshot.bytes(), self.snapshot.images()))
    }
}

/// The images first (the file names them), then the file; images written are no longer pending (those
/// that failed are tried again with the next write).
fn write_session(file: &Path, latest: &Mutex<Latest>, (bytes, images): (Vec<u8>, Vec<Pending>)) -> std::io::Result<()> {
    if !images.is_empty() {
        crate::images::saved::write(&crate::images::saved::dir_for(file), &images)?;
        crate::locks::lock(latest).snapshot.images_written(&images);
    }
    write_atomic(file, &bytes)
}

impl Saver {
    /// Starts the background writer of `file`, the session of `folder` (on the current runtime).
    pub fn spawn(file: PathBuf, folder: &Path) -> Saver {
        let snapshot = Snapshot::new(folder).unwrap_or_default();
        let latest = Arc::new(Mutex::new(Latest { snapshot, ..Latest::default() }));
        Saver { wake: spawn_writer(file.clone(), latest.clone()), latest, file }
    }

    /// What is saved already (a restored session), so a first save of one part keeps the other.
    pub fn prime(&self, session: &Session) {
        if let Err(e) = crate::locks::lock(&self.latest).snapshot.update(session) {
            tracing::warn!("could not encode session state: {e}");
        }
    }

    /// The conversation reached a consistent point: hands it to the background writer.
    pub fn save_messages(&self, messages: &[crate::llm::Message]) {
        self.save_with(|s| s.update_messages(messages));
    }

    /// The plan changed: saved with the conversation as of its last consistent point.
    pub fn save_plan(&self, plan: &crate::plan::Plan, revision: u64) {
        self.save_with(|s| s.update_plan(plan, revision));
    }

    /// The children of the session's runs changed (one ended).
    pub fn save_children(&self, children: &[crate::subagents::Record]) {
        self.save_with(|s| s.update_children(children));
    }

    fn save_with(&self, update: impl FnOnce(&mut Snapshot) -> serde_json::Result<()>) {
        {
            let mut latest = crate::locks::lock(&self.latest);
            if let Err(e) = update(&mut latest.snapshot) {
                // Not saved: the file keeps what was last written.
                tracing::warn!("could not encode session state: {e}");
                return;
            }
            latest.saved = true;
            latest.unwritten = true;
        }
        self.wake.send_replace(());
    }

    /// Writes the newest snapshot now (blocking).
    pub fn flush(&self) -> std::io::Result<()> {
        let _turn = crate::locks::lock(&WRITING);
        let due = crate::locks::lock(&self.latest).take(true);
        due.map_or(Ok(()), |d| write_session(&self.file, &self.latest, d))
    }
}

/// Saves the latest snapshot of one folder in the background; older snapshots not yet written are skipped.
fn spawn_writer(file: PathBuf, latest: Arc<Mutex<Latest>>) -> tokio::sync::watch::Sender<()> {
    let (tx, mut rx) = tokio::sync::watch::channel(());
    tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            let (file, latest) = (file.clone(), latest.clone());
            let res = tokio::task::spawn_blocking(move || {
                let _turn = crate::locks::lock(&WRITING);
                // The newest snapshot now, not the one that woke us.
                let due = crate::locks::lock(&latest).take(false);
                due.map_or(Ok(()), |d| write_session(&file, &latest, d))
            })
            .await;
            match res {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("could not save session state: {e}"),
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
    use serde_json::json;

    use super::*;
    use crate::llm::{Block, Message, Role};

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

    /// A saved session's images are files beside it, written once each, and come back on load.
    #[tokio::test]
    async fn a_session_with_images_is_saved_and_comes_back() {
        let dir = std::env::temp_dir().join(format!("stepwise-store-images-{}", std::process::id()));
        let file = dir.join("s.json");
        let png = crate::images::check("a.png", b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x02\0\0\0\x02").unwrap().image;
        let mut session = Session::default();
        crate::agent::push_prompt(&mut session.messages, "what is this?", std::slice::from_ref(&png));
        let saver = Saver::spawn(file.clone(), Path::new("/work/p"));
        saver.save_messages(&session.messages);
        session.push_prompt("and again");
        session.messages.push(Message { role: Role::User, content: vec![Block::Image { source: png.clone() }].into() });
        saver.save_messages(&session.messages);
        saver.flush().unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(png.base64()) && text.matches("\"sha256\"").count() == 2, "{text}");
        let files: Vec<_> = std::fs::read_dir(crate::images::saved::dir_for(&file)).unwrap().collect();
        assert_eq!(files.len(), 1, "one file for the one image");
        match load(&file) {
            Loaded::Restored(s) => assert_eq!(s.messages, session.messages),
            _ => panic!("not restored"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    /// `Snapshot`'s bytes, kept between saves, are exactly `encode`'s.
    fn the_kept_bytes_are_the_whole_session_encoded_afresh() {
        let mut snap = Snapshot::new(Path::new("/work/a \"b\"")).unwrap();
        let mut session = Session::default();
        let check = |snap: &mut Snapshot, folder: &str, session: &Session| {
            snap.update(session).unwrap();
            let want = encode(Path::new(folder), session).unwrap();
            assert_eq!(String::from_utf8(snap.bytes()).unwrap(), String::from_utf8(want).unwrap());
        };
        check(&mut snap, "/work/a \"b\"", &session);
        session.push_prompt("the task");
        for i in 0..20 {
            check(&mut snap, "/work/a \"b\"", &session);
            session.messages.push(Message {
                role: Role::Assistant,
                content: vec![Block::ToolUse { id: format!("t{i}"), name: "todo".into(), input: json!({"i": i}) }]
                    .into(),
            });
            session.messages.push(Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_use_id: format!("t{i}"),
                    content: "ok é\n".into(),
                    is_error: false,
                    // Images are written by reference, the same whether kept or encoded afresh.
                    images: if i % 5 == 1 {
                        vec![crate::llm::Image::new("image/gif", format!("R0lGOD{i}="))]
                    } else {
                        vec![]
                    },
                }]
                .into(),
            });
            let items = json!([{"id": "1", "text": format!("Step {i}"), "status": "in_progress"}]);
            session.plan.update(&items).unwrap();
        }
        session.push_prompt("more");
        check(&mut snap, "/work/a \"b\"", &session);
        session.messages[3].content[0] = Block::Text { text: "shortened".into() };
        check(&mut snap, "/work/a \"b\"", &session);
        // The plan alone (a change mid-round): the conversation stays as last saved.
        let saved = session.clone();
        session.plan.update(&json!([{"text": "by the user"}])).unwrap();
        session.revision = 41;
        snap.update_plan(&session.plan, session.revision).unwrap();
        let want = Session { messages: saved.messages.clone(), ..session.clone() };
        assert_eq!(snap.bytes(), encode(Path::new("/work/a \"b\""), &want).unwrap());
        session.messages.drain(..10);
        let mut elsewhere = Snapshot::new(Path::new("/elsewhere")).unwrap();
        check(&mut elsewhere, "/elsewhere", &session);
        check(&mut elsewhere, "/elsewhere", &Session::default());
    }
}
