//! A saved session's bytes, kept between saves: saving after every round encodes only the messages that
//! are new or changed, not the whole conversation. The bytes are exactly `store::encode`'s. Images are
//! named by reference (`images::saved`); those of newly encoded messages wait in `images` until the
//! writer puts them beside the file.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::images::saved::{Pending, SavedMessage};
use crate::llm::{KeptMessages, Message};
use crate::plan::Plan;
use crate::session::Session;

/// The saved session file's format number.
pub(crate) const FORMAT: u32 = 1;

#[derive(Default)]
pub struct Snapshot {
    /// The folder the head was written for, and `{"format":…,"folder":…,"session":{"messages":[`.
    head: Option<(PathBuf, Vec<u8>)>,
    messages: KeptMessages,
    /// `],"plan":…,"revision":…`.
    tail: Vec<u8>,
    /// `,"children":[…]` when the session has any.
    children: Vec<u8>,
    /// Images of the messages encoded since the writer last took them.
    images: Vec<Pending>,
}

impl Snapshot {
    /// A snapshot of `folder`'s session file, starting from nothing saved.
    pub fn new(folder: &Path) -> serde_json::Result<Snapshot> {
        #[derive(Serialize)]
        struct Head<'a> {
            format: u32,
            folder: &'a Path,
        }
        let mut head = serde_json::to_vec(&Head { format: FORMAT, folder })?;
        head.pop();
        head.extend_from_slice(br#","session":{"messages":["#);
        let mut s = Snapshot { head: Some((folder.to_path_buf(), head)), ..Snapshot::default() };
        s.update_plan(&Default::default(), 0)?;
        Ok(s)
    }

    /// Brings the bytes up to date with `session` (all of it).
    pub fn update(&mut self, session: &Session) -> serde_json::Result<()> {
        // Every field of the session is written below; a field added to `Session` fails to compile here.
        let Session { messages, plan, revision, children } = session;
        self.update_messages(messages)?;
        self.update_children(children)?;
        self.update_plan(plan, *revision)
    }

    /// The children of the session's runs, as they are now.
    pub fn update_children(&mut self, children: &[crate::subagents::Record]) -> serde_json::Result<()> {
        self.children.clear();
        if !children.is_empty() {
            self.children.extend_from_slice(br#","children":"#);
            serde_json::to_writer(&mut self.children, children)?;
        }
        Ok(())
    }

    /// The conversation as of its latest consistent point: only new or changed messages are encoded.
    pub fn update_messages(&mut self, messages: &[Message]) -> serde_json::Result<()> {
        let images = &mut self.images;
        self.messages
            .update(messages, messages.len(), |i, m, out| {
                if i > 0 {
                    out.push(b',');
                }
                let (saved, pending) = SavedMessage::new(m);
                images.extend(pending);
                serde_json::to_writer(out, &saved)
            })
            .map(|_| ())
    }

    /// The images to write before the file that names them; they stay here until `images_written`.
    pub fn images(&self) -> Vec<Pending> {
        self.images.clone()
    }

    /// These images are beside the file now.
    pub fn images_written(&mut self, written: &[Pending]) {
        self.images.retain(|(name, _)| !written.iter().any(|(w, _)| w == name));
    }

    /// The plan as it is now, with its revision.
    pub fn update_plan(&mut self, plan: &Plan, revision: u64) -> serde_json::Result<()> {
        self.tail.clear();
        self.tail.extend_from_slice(br#"],"plan":"#);
        serde_json::to_writer(&mut self.tail, plan)?;
        self.tail.extend_from_slice(br#","revision":"#);
        serde_json::to_writer(&mut self.tail, &revision)?;
        Ok(())
    }

    /// The whole file; empty before the first update.
    pub fn bytes(&self) -> Vec<u8> {
        let Some((_, head)) = &self.head else { return Vec::new() };
        let kept = self.messages.encoded();
        let mut out = Vec::with_capacity(head.len() + kept.len() + self.tail.len() + self.children.len() + 2);
        out.extend_from_slice(head);
        out.extend_from_slice(kept);
        out.extend_from_slice(&self.tail);
        out.extend_from_slice(&self.children);
        out.extend_from_slice(b"}}");
        out
    }
}
