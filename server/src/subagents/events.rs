//! A child's events, told as its own: each goes to the parent's sink wrapped in `Event::Child` (the
//! adapters show it under the `task` call; the workspace's own sinks, which save the parent's conversation
//! and take its checkpoints, let it pass), and its state as `Event::Subagent` when it changes.

use std::sync::Mutex;

use super::{Record, Subagents};
use crate::events::{Event, EventSink};
use crate::llm::Message;
use crate::locks;

pub use crate::session::SubagentState as State;

/// Who a child is: the call that made it and what it was asked.
pub struct Who<'a> {
    pub id: &'a str,
    pub call_id: &'a str,
    pub description: &'a str,
    pub agent: &'a str,
}

pub struct ChildEvents<'a, E: EventSink + ?Sized> {
    pub parent: &'a E,
    pub register: &'a Subagents,
    pub who: Who<'a>,
    pub status: Mutex<Status>,
}

#[derive(Default)]
pub struct Status {
    pub rounds: u32,
    pub last_tool: Option<String>,
    pub tokens: u64,
    pub messages: Vec<Message>,
}

impl<E: EventSink + ?Sized> ChildEvents<'_, E> {
    /// The child's state as the parent's sink hears it.
    pub fn tell(&self, state: State) {
        let s = locks::lock(&self.status);
        self.parent.emit(Event::Subagent {
            tool_call_id: self.who.call_id,
            id: self.who.id,
            description: self.who.description,
            agent: self.who.agent,
            state,
            rounds: s.rounds,
            last_tool: s.last_tool.as_deref(),
            tokens: s.tokens,
        });
    }

    /// The child as saved, in `state`.
    pub fn record(&self, state: State) -> Record {
        let s = locks::lock(&self.status);
        Record {
            id: self.who.id.into(),
            tool_call_id: self.who.call_id.into(),
            description: self.who.description.into(),
            agent: self.who.agent.into(),
            state,
            rounds: s.rounds,
            tokens: s.tokens,
            messages: s.messages.clone(),
        }
    }
}

impl<E: EventSink + ?Sized> EventSink for ChildEvents<'_, E> {
    fn emit(&self, event: Event<'_>) {
        let changed = {
            let mut s = locks::lock(&self.status);
            match &event {
                Event::Thinking { round } => {
                    s.rounds = *round;
                    true
                }
                Event::ToolStarted { id, name, .. } => {
                    s.last_tool = Some(name.to_string());
                    self.register.called(self.who.id, id);
                    true
                }
                Event::Usage { run, .. } => {
                    s.tokens = run.input_tokens + run.output_tokens;
                    false
                }
                _ => false,
            }
        };
        match event {
            // The child's end is the `task` call's to tell; it takes no checkpoints of its own.
            Event::RunFinished { .. } | Event::Checkpoint { .. } => return,
            _ => self.parent.emit(Event::Child { id: self.who.id, inner: &event }),
        }
        if changed {
            self.tell(State::Running);
        }
    }

    fn checkpoint(&self, messages: &[Message]) {
        locks::lock(&self.status).messages = messages.to_vec();
        self.register.progress(self.record(State::Running));
    }
}
