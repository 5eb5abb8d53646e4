//! The conversation and plan at a checkpoint, kept without growing with the square of its length: each
//! message is stored once in the object store (by the hash of its JSON), the rest of the session (the
//! plan, its revision, whatever else it carries) as one object, and a checkpoint records its message list
//! as the previous checkpoint's first `keep` messages plus its own `tail`.

use serde::{Deserialize, Serialize};

use super::store::{Hash, Pack};
use crate::llm::Message;
use crate::plan::Plan;
use crate::session::Session;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRef {
    /// The session without its messages.
    pub rest: Hash,
    /// The checkpoint whose message list this one starts from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<u64>,
    #[serde(default)]
    pub keep: usize,
    pub tail: Vec<Hash>,
}

/// The messages stored last, with their hashes: a conversation that only grew is encoded and hashed only
/// where it grew (encoding and hashing the whole history every round grew with it).
#[derive(Default)]
pub struct Stored {
    mirror: Vec<Message>,
    hashes: Vec<Hash>,
}

impl Stored {
    /// The conversation as last stored (a consistent point of the run going on).
    pub fn messages(&self) -> &[Message] {
        &self.mirror
    }

    /// The hashes `messages` are stored under, without storing them (those stored last are not encoded
    /// again).
    pub fn hashes_of(&self, messages: &[Message]) -> Vec<Hash> {
        let same = self.mirror.iter().zip(messages).take_while(|(a, b)| a.same(b)).count();
        let mut out = self.hashes[..same].to_vec();
        for m in &messages[same..] {
            out.push(Hash::of(&serde_json::to_vec(m).unwrap_or_default()));
        }
        out
    }
}

/// Stores `session`: the object of the rest and the message hashes, in order.
pub fn store(pack: &Pack, stored: &mut Stored, session: &Session) -> Result<(Hash, Vec<Hash>), String> {
    // Every field of the session is stored; a field added to `Session` fails to compile here.
    let Session { messages, plan, revision, children: _ } = session;
    store_parts(pack, stored, messages, plan, *revision)
}

/// The same from the session's parts (the loop's messages and the plan board's state, not copied).
pub fn store_parts(
    pack: &Pack,
    stored: &mut Stored,
    messages: &[Message],
    plan: &Plan,
    revision: u64,
) -> Result<(Hash, Vec<Hash>), String> {
    // Every field of the session but its messages, as `load` puts them back (in their JSON key order).
    #[derive(Serialize)]
    struct Rest<'a> {
        plan: &'a Plan,
        revision: u64,
    }
    // Kept hashes stand while their messages are unchanged and still stored (a compaction drops objects).
    let same = stored
        .mirror
        .iter()
        .zip(messages)
        .zip(&stored.hashes)
        .take_while(|((a, b), h)| a.same(b) && pack.contains(h))
        .count();
    stored.mirror.truncate(same);
    stored.hashes.truncate(same);
    for m in &messages[same..] {
        let bytes = serde_json::to_vec(m).map_err(|e| e.to_string())?;
        stored.hashes.push(pack.put(&bytes).map_err(|e| e.to_string())?);
        stored.mirror.push(m.clone());
    }
    let rest = serde_json::to_vec(&Rest { plan, revision }).map_err(|e| e.to_string())?;
    Ok((pack.put(&rest).map_err(|e| e.to_string())?, stored.hashes.clone()))
}

/// A checkpoint's reference, given the previous checkpoint's message list.
pub fn delta(rest: Hash, list: &[Hash], prev: Option<(u64, &[Hash])>) -> SessionRef {
    match prev {
        Some((id, old)) => {
            let keep = old.iter().zip(list).take_while(|(a, b)| a == b).count();
            SessionRef { rest, base: (keep > 0).then_some(id), keep, tail: list[keep..].to_vec() }
        }
        None => SessionRef { rest, base: None, keep: 0, tail: list.to_vec() },
    }
}

/// The session back from its objects.
pub fn load(pack: &Pack, rest: &Hash, list: &[Hash]) -> Result<Session, String> {
    let mut json = b"{\"messages\":[".to_vec();
    for (i, h) in list.iter().enumerate() {
        if i > 0 {
            json.push(b',');
        }
        json.extend(pack.get(h).map_err(|e| e.to_string())?);
    }
    json.push(b']');
    let rest = pack.get(rest).map_err(|e| e.to_string())?;
    let inner = rest.strip_prefix(b"{").and_then(|r| r.strip_suffix(b"}")).ok_or("the saved session is damaged")?;
    if !inner.is_empty() {
        json.push(b',');
        json.extend_from_slice(inner);
    }
    json.push(b'}');
    serde_json::from_slice(&json).map_err(|e| format!("the saved conversation cannot be read: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_comes_back_whole_and_shares_its_messages() {
        let dir = std::env::temp_dir().join(format!("stepwise-conv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pack = Pack::open(&dir.join("p")).unwrap();
        let mut s = Session::default();
        s.push_prompt("first");
        s.plan.update(&serde_json::json!([{"id": "1", "text": "Do it", "status": "in_progress"}])).unwrap();
        let mut stored = Stored::default();
        let (rest, list) = store(&pack, &mut stored, &s).unwrap();
        assert_eq!(load(&pack, &rest, &list).unwrap(), s);
        let size = pack.size();
        s.messages.push(crate::llm::Message { role: crate::llm::Role::Assistant, content: vec![].into() });
        let (rest2, list2) = store(&pack, &mut stored, &s).unwrap();
        let d = delta(rest2, &list2, Some((7, &list)));
        assert_eq!((d.base, d.keep, d.tail.len()), (Some(7), 1, 1));
        assert!(pack.size() - size < 100, "only the new message was stored");
        assert_eq!(load(&pack, &rest2, &list2).unwrap(), s);
        assert_eq!(load(&pack, &rest, &[]).unwrap().messages.len(), 0);
        // A changed earlier message (a rewind, a compaction) is stored again, not taken for the kept one.
        s.messages[0] = crate::llm::Message { role: crate::llm::Role::User, content: vec![].into() };
        let (rest3, list3) = store(&pack, &mut stored, &s).unwrap();
        assert_ne!(list3[0], list2[0]);
        assert_eq!(list3[1], list2[1]);
        assert_eq!(load(&pack, &rest3, &list3).unwrap(), s);
        // The same as hashing each message of the session's whole encoding (the way it was first done).
        let whole: serde_json::Value = serde_json::to_value(&s).unwrap();
        let fresh: Vec<Hash> = whole["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| Hash::of(serde_json::to_string(m).unwrap().as_bytes()))
            .collect();
        assert_eq!(list3, fresh);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
