//! Lines the user sends to a run while it goes (`stepwise.steer`): each reaches the model in its next
//! request, verbatim. The inbox is open only while a run can still read it, so a line is either queued
//! for a request or answered "no run" and starts one: never left unread.

use std::sync::Mutex;

use crate::locks;

#[derive(Default)]
struct State {
    open: bool,
    lines: Vec<String>,
}

#[derive(Default)]
pub struct Inbox {
    state: Mutex<State>,
}

impl Inbox {
    /// A run starts reading.
    pub fn open(&self) {
        locks::lock(&self.state).open = true;
    }

    /// Queues a line for the running model; `false` when no run reads the inbox.
    pub fn push(&self, line: String) -> bool {
        let mut s = locks::lock(&self.state);
        if s.open {
            s.lines.push(line);
        }
        s.open
    }

    /// The lines queued since the last call, for the next request.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut locks::lock(&self.state).lines)
    }

    /// The run is about to end: lines that came in meanwhile keep it going (returned); otherwise the
    /// inbox closes in the same step, so a later line starts a run of its own.
    pub fn close_unless_pending(&self) -> Option<Vec<String>> {
        let mut s = locks::lock(&self.state);
        if s.lines.is_empty() {
            s.open = false;
            None
        } else {
            Some(std::mem::take(&mut s.lines))
        }
    }

    /// The run ended some other way (cancelled, failed): unread lines are dropped with it.
    pub fn close(&self) -> Vec<String> {
        let mut s = locks::lock(&self.state);
        s.open = false;
        std::mem::take(&mut s.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::Inbox;

    #[test]
    fn lines_queue_only_while_a_run_reads() {
        let inbox = Inbox::default();
        assert!(!inbox.push("early".into()));
        inbox.open();
        assert!(inbox.push("a".into()));
        assert_eq!(inbox.take(), ["a"]);
        assert!(inbox.push("b".into()));
        assert_eq!(inbox.close_unless_pending(), Some(vec!["b".to_string()]));
        assert_eq!(inbox.close_unless_pending(), None);
        assert!(!inbox.push("late".into()));
    }
}
