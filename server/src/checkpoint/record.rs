//! Keeping the checkpoints' state and their journal in step: every change is a `Record`, appended to the
//! journal and applied in memory the same way a restart replays it; the limit drops the oldest checkpoints
//! and compacts the store and the journal.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::conversation::SessionRef;
use super::journal::Record;
use super::scan::Scanner;
use super::state::key_of;
use super::store::Hash;
use super::{Checkpoints, Cp};

pub(super) fn checkpoint(c: &Cp) -> Record {
    Record::Checkpoint {
        id: c.id,
        run_id: c.run_id.clone(),
        round: c.round,
        prompt: c.prompt.clone(),
        step: c.step.clone(),
        time: c.time,
        session: c.session.clone(),
    }
}

/// A key from the journal is used only if it is one `key_of` would make (the journal is a file on disk).
fn valid(path: &str) -> bool {
    key_of(std::path::Path::new(path)).as_deref() == Some(path)
}

impl Checkpoints {
    pub(super) fn replay(&mut self, records: Vec<Record>) {
        for r in records {
            self.apply(r);
        }
    }

    /// Appends `records` to the journal and applies them.
    pub(super) fn record(&mut self, records: Vec<Record>) {
        if records.is_empty() {
            return;
        }
        if let Err(e) = self.journal.append(&records) {
            tracing::warn!("checkpoints: cannot write the journal: {e}");
        }
        for r in records {
            self.apply(r);
        }
    }

    fn apply(&mut self, r: Record) {
        match r {
            Record::Checkpoint { id, run_id, round, prompt, step, time, session } => {
                self.next_id = self.next_id.max(id + 1);
                let (pre, dirs, shared) = (BTreeMap::new(), BTreeSet::new(), BTreeMap::new());
                self.cps.push(Cp { id, run_id, round, prompt, step, time, session, pre, dirs, shared });
            }
            Record::Pre { cp, path, pre } if valid(&path) => {
                if let Some(c) = self.cps.iter_mut().rev().find(|c| c.id == cp) {
                    c.pre.entry(path).or_insert(pre);
                }
            }
            Record::Overlap { cp, path, with } if valid(&path) => {
                if let Some(c) = self.cps.iter_mut().rev().find(|c| c.id == cp) {
                    c.shared.entry(path).or_default().insert(with);
                }
            }
            Record::Dir { cp, path } if valid(&path) => {
                if let Some(c) = self.cps.iter_mut().rev().find(|c| c.id == cp) {
                    c.dirs.insert(path);
                }
            }
            Record::Agent { path, mark } if valid(&path) => {
                self.marks.insert(path, mark);
            }
            Record::Drop { from } => self.cps.retain(|c| c.id < from),
            Record::Kept { hunk } => {
                self.kept.insert(hunk);
            }
            other => tracing::warn!("checkpoint journal: ignored {other:?}"),
        }
    }

    /// The full message list of checkpoint `idx`, following its bases.
    pub(super) fn message_list(&self, idx: usize) -> Result<Vec<Hash>, String> {
        let mut chain = vec![idx];
        let mut cur = idx;
        while let Some(base) = self.cps[cur].session.base {
            match self.cps[..cur].iter().rposition(|c| c.id == base) {
                Some(p) => {
                    chain.push(p);
                    cur = p;
                }
                None => return Err(format!("checkpoint {} lost the conversation it continues", self.cps[cur].id)),
            }
        }
        let mut list: Vec<Hash> = Vec::new();
        for &i in chain.iter().rev() {
            let s = &self.cps[i].session;
            if s.keep > list.len() {
                return Err(format!("checkpoint {}'s conversation is damaged", self.cps[i].id));
            }
            list.truncate(s.keep);
            list.extend_from_slice(&s.tail);
        }
        Ok(list)
    }

    /// Every object still needed: the workspace's copy and what the checkpoints hold.
    fn reachable(&self, scan: &Scanner) -> HashSet<Hash> {
        let mut keep: HashSet<Hash> = scan.objects().collect();
        for c in &self.cps {
            keep.insert(c.session.rest);
            keep.extend(c.session.tail.iter().copied());
            keep.extend(c.pre.values().filter_map(|p| match p {
                super::Pre::File { hash, .. } => Some(*hash),
                _ => None,
            }));
        }
        keep
    }

    fn live_bytes(&self) -> u64 {
        let scan = crate::locks::lock(&self.scan);
        self.reachable(&scan).iter().filter_map(|h| self.pack.len_of(h)).sum()
    }

    fn drop_oldest(&mut self) {
        if self.cps.len() < 2 {
            return;
        }
        let list = self.message_list(1);
        let gone = self.cps.remove(0);
        let next = &mut self.cps[0];
        if next.session.base == Some(gone.id) {
            match list {
                Ok(tail) => next.session = SessionRef { rest: next.session.rest, base: None, keep: 0, tail },
                Err(e) => tracing::warn!("checkpoints: {e}"),
            }
        }
    }

    /// Over the limit: drops the oldest checkpoints until what is left takes three quarters of it (the
    /// newest always stays), then compacts. Not again until the store has grown by an eighth of the limit.
    pub(super) fn enforce_limit(&mut self) {
        let max = self.limits.max_total;
        if self.pack.size() <= max.max(self.compacted_at.saturating_add(max / 8)) {
            return;
        }
        while self.cps.len() > 1 && self.live_bytes() > max / 4 * 3 {
            self.drop_oldest();
        }
        self.compact();
    }

    /// Rewrites the store with only what is needed, and the journal with only what holds.
    pub(super) fn compact(&mut self) {
        // The scanner's lock held throughout: a background copy stores objects under it.
        let scan = crate::locks::lock(&self.scan);
        if let Err(e) = self.pack.retain(&self.reachable(&scan)) {
            tracing::warn!("checkpoints: cannot compact the store: {e}");
        }
        drop(scan);
        self.compacted_at = self.pack.size();
        let followed: HashSet<&String> = self.cps.iter().flat_map(|c| c.pre.keys()).collect();
        self.marks.retain(|k, _| followed.contains(k));
        let mut records = Vec::new();
        for c in &self.cps {
            records.push(checkpoint(c));
            records.extend(c.dirs.iter().map(|d| Record::Dir { cp: c.id, path: d.clone() }));
            records.extend(c.pre.iter().map(|(k, p)| Record::Pre { cp: c.id, path: k.clone(), pre: p.clone() }));
            records.extend(c.shared.iter().flat_map(|(k, with)| {
                with.iter().map(|w| Record::Overlap { cp: c.id, path: k.clone(), with: w.clone() })
            }));
        }
        records.extend(self.marks.iter().map(|(k, m)| Record::Agent { path: k.clone(), mark: m.clone() }));
        records.extend(self.kept.iter().map(|h| Record::Kept { hunk: *h }));
        if let Err(e) = self.journal.rewrite(&records) {
            tracing::warn!("checkpoints: cannot rewrite the journal: {e}");
        }
    }
}

/// Milliseconds since the epoch as RFC 3339 UTC (`2026-11-24T05:01:45Z`).
pub(super) fn rfc3339(ms: u64) -> String {
    crate::time::rfc3339(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_795_496_505_000), "2026-11-24T05:01:45Z");
        assert_eq!(super::rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    }
}
