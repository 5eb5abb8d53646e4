//! A saved session's bytes, kept between saves: saving after every round encodes only the messages that
//! are new or changed, not the whole conversation. The bytes are exactly `store::encode`'s.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::llm::KeptMessages;
use crate::session::Session;

/// The saved session file's format number.
pub(crate) const FORMAT: u32 = 1;

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
            let mut head = serde_json::to_vec(&Head { format: FORMAT, folder })?;
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
