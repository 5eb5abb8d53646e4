//! The conversation and plan at a checkpoint, kept without growing with the square of its length: each
//! message is stored once in the object store (by the hash of its JSON), the rest of the session (the
//! plan, its revision, whatever else it carries) as one object, and a checkpoint records its message list
//! as the previous checkpoint's first `keep` messages plus its own `tail`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::store::{Hash, Pack};
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

/// Stores `session`: the object of the rest and the message hashes, in order.
pub fn store(pack: &mut Pack, session: &Session) -> Result<(Hash, Vec<Hash>), String> {
    let bytes = serde_json::to_vec(session).map_err(|e| e.to_string())?;
    // Split without building values: each message stays the bytes it was written as.
    let mut top: BTreeMap<String, &RawValue> = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let messages: Vec<&RawValue> = match top.remove("messages") {
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| e.to_string())?,
        None => Vec::new(),
    };
    let mut list = Vec::with_capacity(messages.len());
    for m in messages {
        list.push(pack.put(m.get().as_bytes()).map_err(|e| e.to_string())?);
    }
    let rest = serde_json::to_vec(&top).map_err(|e| e.to_string())?;
    Ok((pack.put(&rest).map_err(|e| e.to_string())?, list))
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
        let mut pack = Pack::open(&dir.join("p")).unwrap();
        let mut s = Session::default();
        s.push_prompt("first");
        s.plan.update(&serde_json::json!([{"id": "1", "text": "Do it", "status": "in_progress"}])).unwrap();
        let (rest, list) = store(&mut pack, &s).unwrap();
        assert_eq!(load(&pack, &rest, &list).unwrap(), s);
        let size = pack.size();
        s.messages.push(crate::llm::Message { role: crate::llm::Role::Assistant, content: vec![] });
        let (rest2, list2) = store(&mut pack, &s).unwrap();
        let d = delta(rest2, &list2, Some((7, &list)));
        assert_eq!((d.base, d.keep, d.tail.len()), (Some(7), 1, 1));
        assert!(pack.size() - size < 100, "only the new message was stored");
        assert_eq!(load(&pack, &rest2, &list2).unwrap(), s);
        assert_eq!(load(&pack, &rest, &[]).unwrap().messages.len(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
