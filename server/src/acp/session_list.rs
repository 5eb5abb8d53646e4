//! `session/list`: the sessions saved under `<state dir>/acp/` (one file per session id, `store.rs`),
//! newest first, those of one folder when the client names it; each titled by its first prompt and dated
//! by its file's last write. Only the start of each conversation is read into memory.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agent_client_protocol::v1::schema::SessionInfo;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

use crate::agent::{CONTINUE, REMINDER};
use crate::llm::Role;
use crate::time::rfc3339;

/// The longest title, in characters; a longer first line is cut with `…`.
const TITLE_CHARS: usize = 80;

/// Saved sessions, newest first; only those of `cwd` when given (compared canonicalised, as sessions
/// keep their folder). Files that cannot be read are left out, and left where they are.
pub(crate) fn list(state_dir: Option<&Path>, cwd: Option<&Path>) -> Vec<SessionInfo> {
    let Some(dir) = state_dir.map(|d| d.join("acp")) else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let cwd = cwd.map(|c| std::fs::canonicalize(c).unwrap_or_else(|_| c.to_path_buf()));
    let mut found: Vec<(SystemTime, SessionInfo)> = entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let id = path.file_name()?.to_str()?.strip_suffix(".json")?.to_string();
            let head = read_head(&path)?;
            if cwd.as_ref().is_some_and(|c| *c != head.folder) {
                return None;
            }
            let modified = entry.metadata().and_then(|m| m.modified()).ok()?;
            let info = SessionInfo::new(id, head.folder)
                .title(head.session.messages.0.map(|t| title(&t)))
                .updated_at(rfc3339(modified));
            Some((modified, info))
        })
        .collect();
    found.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    found.into_iter().map(|(_, info)| info).collect()
}

/// The first line of the first prompt, at most `TITLE_CHARS` characters.
fn title(prompt: &str) -> String {
    let line = prompt.trim().lines().next().unwrap_or("").trim();
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
        None => line.to_string(),
    }
}

/// The part of a session file a listing needs.
#[derive(Deserialize)]
struct Head {
    folder: PathBuf,
    session: HeadSession,
}

#[derive(Deserialize)]
struct HeadSession {
    #[serde(default)]
    messages: FirstPrompt,
}

fn read_head(path: &Path) -> Option<Head> {
    let file = std::fs::File::open(path).ok()?;
    serde_json::from_reader(std::io::BufReader::new(file)).ok()
}

/// The text of the conversation's first prompt; the messages after it are skipped, not kept.
#[derive(Default)]
struct FirstPrompt(Option<String>);

impl<'de> Deserialize<'de> for FirstPrompt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Messages;
        impl<'de> Visitor<'de> for Messages {
            type Value = FirstPrompt;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of messages")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstPrompt, A::Error> {
                let mut first = None;
                while first.is_none() {
                    match seq.next_element::<Listed>()? {
                        Some(m) => first = prompt_of(&m),
                        None => return Ok(FirstPrompt(None)),
                    }
                }
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstPrompt(first))
            }
        }
        d.deserialize_seq(Messages)
    }
}

/// A message as far as a listing reads it: its role and its text (an image, saved by reference, and the
/// other blocks are skipped unread).
#[derive(Deserialize)]
struct Listed {
    role: Role,
    #[serde(default)]
    content: Vec<ListedBlock>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ListedBlock {
    Text {
        text: String,
    },
    #[serde(other)]
    Other,
}

/// The user's own text in a message (not the loop's reminders or continuations).
fn prompt_of(m: &Listed) -> Option<String> {
    if m.role != Role::User {
        return None;
    }
    m.content.iter().find_map(|b| match b {
        ListedBlock::Text { text } if text != REMINDER && text != CONTINUE && !text.trim().is_empty() => {
            Some(text.clone())
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_iso_8601() {
        let at = |secs| rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_496_479), "2026-11-24T05:01:19Z");
    }

    #[test]
    fn titles_are_the_first_line_cut_short() {
        assert_eq!(title("  fix the parser\nand more"), "fix the parser");
        let long = "x".repeat(100);
        assert_eq!(title(&long), format!("{}…", "x".repeat(80)));
        assert_eq!(title(&"é".repeat(80)), "é".repeat(80));
    }

    #[test]
    fn only_the_first_prompt_is_read() {
        let json = r#"{"format":1,"folder":"/p","session":{"plan":{"items":[]},"messages":[
            {"role":"user","content":[{"type":"text","text":"first task"}]},
            {"role":"assistant","content":[{"type":"text","text":"ok"}]},
            {"role":"user","content":[{"type":"text","text":"second"}]}]}}"#;
        let head: Head = serde_json::from_str(json).unwrap();
        assert_eq!(head.folder, Path::new("/p"));
        assert_eq!(head.session.messages.0.as_deref(), Some("first task"));
        // A prompt of an image alone, saved by reference, is passed over for the next one's text.
        let json = r#"{"folder":"/p","session":{"messages":[
            {"role":"user","content":[{"type":"image","source":{"type":"file","media_type":"image/png","sha256":"ab"}}]},
            {"role":"user","content":[{"type":"image","source":{"type":"file"}},{"type":"text","text":"what is it?"}]}]}}"#;
        let head: Head = serde_json::from_str(json).unwrap();
        assert_eq!(head.session.messages.0.as_deref(), Some("what is it?"));
    }
}
