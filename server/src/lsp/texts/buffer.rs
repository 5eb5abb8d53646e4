//! One open document: the text the editor last reported and the agent's edits it applied since.

use tower_lsp_server::ls_types::Uri;

use super::reconcile::Pending;

pub(super) struct Buffer {
    pub uri: Uri,
    /// The text as the editor last reported it, at `version`.
    pub reported: String,
    pub version: i32,
    /// Edits the editor applied that it has not reported yet (reconcile.rs).
    pub pending: Vec<Pending>,
    /// Which opening of the document this is: an answer to an edit made for another one is late.
    pub opened: u64,
}

impl Buffer {
    /// The editor's text, with every edit it applied (reported or not).
    pub fn text(&self) -> &str {
        self.pending.last().map(|p| p.after.as_str()).unwrap_or(&self.reported)
    }

    /// Adds an applied edit of byte `at` from `old` to `new` on top of the text, if `old` is still there.
    pub fn push(&mut self, at: usize, old: &str, new: &str) -> bool {
        let mut after = self.text().to_string();
        if after.get(at..at + old.len()) != Some(old) {
            return false;
        }
        after.replace_range(at..at + old.len(), new);
        self.pending.push(Pending { at, old: old.to_string(), new: new.to_string(), after });
        true
    }
}
