//! A saved session's bytes, kept between saves: saving after every round encodes only the messages that
//! are new or changed, not the whole conversation. The bytes are exactly `store::encode`'s.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::llm::KeptMessages;
use crate::session::Session;

#[derive(Default)]
pub struct Snapshot {
    /// The folder the head was written for, and `{"format":…,"folder":…,"session":{"messages":[`.
    head: Option<(PathBuf, Vec<u8>)>,
    messages: KeptMessages,
    /// `],"plan":…}}`.
    tail: Vec<u8>,
}

impl Snapshot {
    /// Brings the bytes up to date with `session`, worked on in `folder`.
    pub fn update(&mut self, folder: &Path, session: &Session) -> serde_json::Result<()> {
        // Every field of the session is written below; a field added to `Session` fails to compile here.
        let Session { messages, plan } = session;
        if self.head.as_ref().is_none_or(|(f, _)| f != folder) {
            #[derive(Serialize)]
            struct Head<'a> {
                format: u32,
                folder: &'a Path,
            }
            let mut head = serde_json::to_vec(&Head { format: crate::store::FORMAT, folder })?;
            head.pop();
            head.extend_from_slice(br#","session":{"messages":["#);
            self.head = Some((folder.to_path_buf(), head));
        }
        self.messages.update(messages, messages.len(), |i, m, out| {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(out, m)
        })?;
        self.tail.clear();
        self.tail.extend_from_slice(br#"],"plan":"#);
        serde_json::to_writer(&mut self.tail, plan)?;
        self.tail.extend_from_slice(b"}}");
        Ok(())
    }

    /// The whole file; empty before the first update.
    pub fn bytes(&self) -> Vec<u8> {
        let Some((_, head)) = &self.head else { return Vec::new() };
        let kept = self.messages.encoded();
        let mut out = Vec::with_capacity(head.len() + kept.len() + self.tail.len());
        out.extend_from_slice(head);
        out.extend_from_slice(kept);
        out.extend_from_slice(&self.tail);
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::{Block, Message, Role};

    #[test]
    fn the_kept_bytes_are_the_whole_session_encoded_afresh() {
        let mut snap = Snapshot::default();
        let mut session = Session::default();
        let check = |snap: &mut Snapshot, folder: &str, session: &Session| {
            snap.update(Path::new(folder), session).unwrap();
            let want = crate::store::encode(Path::new(folder), session).unwrap();
            assert_eq!(String::from_utf8(snap.bytes()).unwrap(), String::from_utf8(want).unwrap());
        };
        check(&mut snap, "/work/a \"b\"", &session);
        session.push_prompt("the task");
        for i in 0..20 {
            check(&mut snap, "/work/a \"b\"", &session);
            session.messages.push(Message {
                role: Role::Assistant,
                content: vec![Block::ToolUse { id: format!("t{i}"), name: "todo".into(), input: json!({"i": i}) }],
            });
            session.messages.push(Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_use_id: format!("t{i}"),
                    content: "ok é\n".into(),
                    is_error: false,
                }],
            });
            let items = json!([{"id": "1", "text": format!("Step {i}"), "status": "in_progress"}]);
            session.plan.update(&items).unwrap();
        }
        session.push_prompt("more");
        check(&mut snap, "/work/a \"b\"", &session);
        session.messages[3].content[0] = Block::Text { text: "shortened".into() };
        check(&mut snap, "/work/a \"b\"", &session);
        session.messages.drain(..10);
        check(&mut snap, "/elsewhere", &session);
        check(&mut snap, "/elsewhere", &Session::default());
    }
}
