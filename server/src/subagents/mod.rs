//! Subagents (the seeds' s04): the `task` tool hands a sub-task to a child agent with a fresh conversation;
//! only its final text comes back, with a line saying how it ended. Several calls of one response run at
//! the same time (at most `AT_ONCE`), each child stoppable alone (`cancel`), every question it asks named
//! for it (`owner_of`), its tokens and changes the parent's round's.
//!
//! This module is the session's register of its children; the agent loop runs them (`agent/tasks.rs`,
//! `agent/child.rs`), `events.rs` tells a child's events as its own, `agents.rs` knows the agents a call may
//! name. It knows nothing of the loop.

pub mod agents;
mod events;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::locks;

pub use crate::session::SubagentRecord as Record;
pub use events::{ChildEvents, State, Who};

/// Children of one session running at once; the rest wait for a slot.
pub const AT_ONCE: usize = 4;
/// The seed's round limit, for every child.
pub const ROUND_LIMIT: u32 = 30;

/// A question as the user reads it, naming the child that asks (`asking`: its id and description).
pub fn question(text: String, asking: Option<&(String, String)>) -> String {
    match asking {
        Some((id, description)) => format!("[subagent {id}: {description}] {text}"),
        None => text,
    }
}

/// A session's children: those running (to stop one, to name the one asking) and the conversations of
/// all (for the transcript, after a restart too).
pub struct Subagents {
    next: AtomicU32,
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    running: Mutex<HashMap<String, Running>>,
    records: Mutex<Vec<Record>>,
}

struct Running {
    cancel: CancellationToken,
    description: String,
    /// The ids of the child's tool calls so far (a question names the child by them).
    calls: Vec<String>,
}

impl Default for Subagents {
    fn default() -> Self {
        Subagents {
            next: AtomicU32::new(0),
            slots: Arc::new(tokio::sync::Semaphore::new(AT_ONCE)),
            running: Mutex::default(),
            records: Mutex::default(),
        }
    }
}

impl Subagents {
    /// A new child's id (`sa-<n>`, counting on from the saved ones) and its cancellation, a child of the run's.
    pub(crate) fn start(&self, description: &str, run: &CancellationToken) -> (String, CancellationToken) {
        let id = format!("sa-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let cancel = run.child_token();
        let entry = Running { cancel: cancel.clone(), description: description.into(), calls: Vec::new() };
        locks::lock(&self.running).insert(id.clone(), entry);
        (id, cancel)
    }

    pub(crate) fn called(&self, id: &str, call_id: &str) {
        if let Some(r) = locks::lock(&self.running).get_mut(id) {
            r.calls.push(call_id.to_string());
        }
    }

    pub(crate) fn ended(&self, record: Record) {
        locks::lock(&self.running).remove(&record.id);
        self.progress(record);
    }

    /// Keeps a running child's conversation as it goes (what a restart mid-run shows).
    pub(crate) fn progress(&self, record: Record) {
        let mut records = locks::lock(&self.records);
        match records.iter_mut().find(|r| r.id == record.id) {
            Some(r) => *r = record,
            None => records.push(record),
        }
    }

    /// Ends the running child `id` alone (`stepwise.cancelSubagent`); false when none runs by that id.
    pub fn cancel(&self, id: &str) -> bool {
        match locks::lock(&self.running).get(id) {
            Some(r) => {
                r.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// The child that made the tool call `call_id`, if a child did: its id and description (questions name it).
    pub fn owner_of(&self, call_id: &str) -> Option<(String, String)> {
        let running = locks::lock(&self.running);
        running
            .iter()
            .find(|(_, r)| r.calls.iter().any(|c| c == call_id))
            .map(|(id, r)| (id.clone(), r.description.clone()))
    }

    /// The ids of the children running now.
    pub fn running(&self) -> Vec<String> {
        let mut ids: Vec<String> = locks::lock(&self.running).keys().cloned().collect();
        ids.sort();
        ids
    }

    /// The children as saved (every child of the session, oldest first).
    pub fn records(&self) -> Vec<Record> {
        locks::lock(&self.records).clone()
    }

    /// A saved session's children, back after a restart (new ones count on after them).
    pub fn restore(&self, records: Vec<Record>) {
        let n = records.iter().filter_map(|r| r.id.strip_prefix("sa-")?.parse::<u32>().ok()).max().unwrap_or(0);
        self.next.fetch_max(n, Ordering::Relaxed);
        *locks::lock(&self.records) = records;
    }

    /// A reset: the children go with the conversation.
    pub fn clear(&self) {
        locks::lock(&self.records).clear();
    }
}
