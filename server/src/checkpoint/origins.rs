//! Which run and round each message of a conversation came from (the saved session does not say; the
//! checkpoints do): a message first found at its place in a checkpoint's list was added in the round before it.

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
        // By position: a message that differs from the previous checkpoint's at its place (or is past
        // its end) was added in the round before this checkpoint. (Not by content: the same prompt typed
        // twice is two messages of two runs.)
        let mut by_pos: Vec<Option<usize>> = Vec::new();
        let mut prev: Vec<Hash> = Vec::new();
        let extend = |by_pos: &mut Vec<Option<usize>>, prev: &[Hash], list: &[Hash], from: Option<usize>| {
            let same = prev.iter().zip(list).take_while(|(a, b)| a == b).count();
            by_pos.truncate(same);
            by_pos.resize(list.len(), from);
        };
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
            extend(&mut by_pos, &prev, &list, i.checked_sub(1));
            prev = list;
        }
        let hashes = self.stored.hashes_of(messages);
        extend(&mut by_pos, &prev, &hashes, self.cps.len().checked_sub(1));
        by_pos.into_iter().map(|at| at.map(origin)).collect()
    }

    /// The conversation as last stored for a checkpoint: during a run, its latest consistent point.
    pub fn stored_messages(&self) -> Vec<Message> {
        self.stored.messages().to_vec()
    }
}
