//! The adapter's event sink, wrapped so the workspace saves as the run goes: the conversation at every
//! consistent point, the plan whenever the model changes it (mid-round too: an editor that vanishes
//! while a command runs must not take the plan it was shown with it).

use super::Workspace;
use crate::events::{Event, EventSink};
use crate::llm::Message;

pub(super) struct Saving<'a, E: EventSink + ?Sized> {
    pub ws: &'a Workspace,
    pub inner: &'a E,
}

impl<E: EventSink + ?Sized> EventSink for Saving<'_, E> {
    fn emit(&self, event: Event<'_>) {
        match &event {
            Event::PlanChanged { state } => self.ws.save_plan(state),
            // A child that ended is saved with the session, its conversation and all.
            Event::Subagent { state, .. } if *state != crate::subagents::State::Running => self.ws.save_children(),
            _ => {}
        }
        self.inner.emit(event);
    }

    fn checkpoint(&self, messages: &[Message]) {
        self.ws.save_messages(messages);
        self.inner.checkpoint(messages);
    }
}
