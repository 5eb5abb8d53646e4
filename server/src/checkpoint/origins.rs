//! Which run and round each message of a conversation came from (the saved session does not say; the
//! checkpoints do): a message first found in a checkpoint's list was added in the round before it.

use std::collections::HashMap;

use super::store::Hash;
use super::Checkpoints;
use crate::llm::Message;
use crate::transcript::Origin;

impl Checkpoints {
    /// `origins[i]` for `messages[i]`: `None` for a message older than the checkpoints kept.
    pub fn origins(&self, messages: &[Message]) -> Vec<Option<Origin>> {
        let origin = |i: usize| {
            let c = &self.cps[i];
            Origin { run_id: c.run_id.clone(), prompt: c.prompt.clone(), step: c.step.clone(), checkpoint: c.id }
        };
        // Message hash -> the index of the checkpoint before the round that added it (None: older).
        let mut first: HashMap<Hash, Option<usize>> = HashMap::new();
        let mut prev: Vec<Hash> = Vec::new();
        for i in 0..self.cps.len() {
            let s = &self.cps[i].session;
            let list = match s.base {
                Some(b) if i > 0 && self.cps[i - 1].id == b && s.keep <= prev.len() => {
                    let mut l = prev[..s.keep].to_vec();
                    l.extend_from_slice(&s.tail);
                    l
                }
                _ => match self.message_list(i) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!("conversation: {e}");
                        continue;
                    }
                },
            };
            for h in &list {
                first.entry(*h).or_insert(i.checked_sub(1));
            }
            prev = list;
        }
        let newest = self.cps.len().checked_sub(1);
        self.stored.hashes_of(messages).iter().map(|h| first.get(h).copied().unwrap_or(newest).map(origin)).collect()
    }

    /// The conversation as last stored for a checkpoint: during a run, its latest consistent point.
    pub fn stored_messages(&self) -> Vec<Message> {
        self.stored.messages().to_vec()
    }
}
