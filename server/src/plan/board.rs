//! The plan as a shared document: the model (through its planning tools) and the user (through the
//! editors) both change it, every change raises the revision, and readers (code lenses, the plan view)
//! take a snapshot without waiting on a run. A `watch` channel holds it: one short lock per change.

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::{EditItem, Plan};

/// Who made the latest change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum By {
    #[default]
    Model,
    User,
}

/// What the latest change was, so an editor can say it truthfully (`by` says only who).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "PlanChange")]
pub enum Change {
    /// The model's planning tools.
    Update,
    /// The user's edit (`stepwise.editPlan`, ACP's and the CLI's `/plan`).
    Edit,
    /// The user approved the plan (plan first): its first open step went in progress.
    Approved,
    /// A rewind put back the plan of its checkpoint, with the conversation.
    Rewind,
    /// A reset (a new session): the plan is empty.
    Reset,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanState {
    pub plan: Plan,
    /// Raised by every change, the model's and the user's.
    pub revision: u64,
    pub by: By,
    /// `None` until the first change since the session opened (a restored plan).
    pub change: Option<Change>,
    /// The user changed the plan and the model has not been told yet.
    unseen_edit: bool,
}

pub struct PlanBoard {
    tx: watch::Sender<PlanState>,
}

/// The text block the model gets after the user changed the plan (docs/protocol.md, "The plan as a shared document").
pub fn edit_notice(plan: &Plan) -> String {
    format!("<plan-edit>The user changed the plan. It is now:\n{}</plan-edit>", plan.render())
}

impl PlanBoard {
    pub fn new(plan: Plan, revision: u64) -> PlanBoard {
        PlanBoard { tx: watch::Sender::new(PlanState { plan, revision, ..Default::default() }) }
    }

    pub fn snapshot(&self) -> PlanState {
        self.tx.borrow().clone()
    }

    /// Reads the current state without copying it.
    pub fn read<R>(&self, f: impl FnOnce(&PlanState) -> R) -> R {
        f(&self.tx.borrow())
    }

    /// Wakes on every change.
    pub fn subscribe(&self) -> watch::Receiver<PlanState> {
        self.tx.subscribe()
    }

    /// A planning tool's call, applied to a copy and kept only when it succeeds. A call that rewrites
    /// the whole list (`replaces_all`) while the user's edit is unseen would drop that edit without the
    /// model ever reading it: it is refused with the edited plan in its text, and counts as told.
    pub fn model_change(
        &self,
        replaces_all: bool,
        f: impl FnOnce(&mut Plan) -> Result<String, String>,
    ) -> Result<String, String> {
        let mut out = Err(String::new());
        self.tx.send_if_modified(|s| {
            if replaces_all && s.unseen_edit {
                s.unseen_edit = false;
                out = Err(format!(
                    "The user changed the plan while you were working, so this update was not applied. The plan is now:\n{}\nMake your next update from this plan.",
                    s.plan.render()
                ));
                return false;
            }
            let mut plan = s.plan.clone();
            out = f(&mut plan);
            if out.is_err() {
                return false;
            }
            s.plan = plan;
            s.revision += 1;
            s.by = By::Model;
            s.change = Some(Change::Update);
            true
        });
        out
    }

    /// The user's edit: the whole list, checked by the plan's rules. `base` older than the current
    /// revision means the plan changed since the user saw it: nothing changes.
    pub fn user_edit(&self, items: &[EditItem], base: Option<u64>) -> Result<PlanState, String> {
        let mut out = Err(String::new());
        self.tx.send_if_modified(|s| {
            if let Some(base) = base.filter(|b| *b < s.revision) {
                out = Err(format!(
                    "The plan changed since revision {base} (it is at revision {}); reload it and edit again",
                    s.revision
                ));
                return false;
            }
            match s.plan.edited(items) {
                Ok(plan) => {
                    s.plan = plan;
                    s.revision += 1;
                    s.by = By::User;
                    s.change = Some(Change::Edit);
                    s.unseen_edit = true;
                    out = Ok(s.clone());
                    true
                }
                Err(e) => {
                    out = Err(format!("Error: {e}"));
                    false
                }
            }
        });
        out
    }

    /// The `<plan-edit>` block, once, if the user changed the plan since the model last heard of it.
    pub fn take_unseen_edit(&self) -> Option<String> {
        let mut notice = None;
        self.tx.send_if_modified(|s| {
            if s.unseen_edit {
                s.unseen_edit = false;
                notice = Some(edit_notice(&s.plan));
            }
            false
        });
        notice
    }

    /// The user approves the plan as of `base` (plan first): its first open step goes in progress, and
    /// an unseen edit counts as told (the approval carries the whole plan). Stale or empty: nothing changes.
    pub fn approve(&self, base: Option<u64>) -> Result<PlanState, String> {
        let mut out = Err(String::new());
        self.tx.send_if_modified(|s| {
            if let Some(base) = base.filter(|b| *b < s.revision) {
                out = Err(format!(
                    "The plan changed since revision {base} (it is at revision {}); reload it and approve again",
                    s.revision
                ));
                return false;
            }
            if s.plan.is_empty() {
                out = Err("there is no plan to approve: comment to ask the model for one".into());
                return false;
            }
            if s.plan.in_progress().is_none() {
                if let Some(first) = s.plan.items.iter_mut().find(|i| i.status == super::Status::Pending) {
                    first.status = super::Status::InProgress;
                }
            }
            s.revision += 1;
            s.by = By::User;
            s.change = Some(Change::Approved);
            s.unseen_edit = false;
            out = Ok(s.clone());
            true
        });
        out
    }

    /// Puts a plan in place as a whole (`change`: a reset, a rewind): a change by the user the model need
    /// not be told of (its conversation is replaced with it).
    pub fn replace(&self, plan: Plan, change: Change) -> PlanState {
        let mut out = PlanState::default();
        self.tx.send_modify(|s| {
            s.plan = plan;
            s.revision += 1;
            s.by = By::User;
            s.change = Some(change);
            s.unseen_edit = false;
            out = s.clone();
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(id: Option<&str>, text: &str, status: &str) -> EditItem {
        EditItem { id: id.map(Into::into), text: text.into(), status: status.into(), active_form: None }
    }

    #[test]
    fn revisions_rise_and_stale_edits_change_nothing() {
        let board = PlanBoard::new(Plan::default(), 0);
        board.model_change(true, |p| p.update(&json!([{"text": "a"}]))).unwrap();
        let s = board.user_edit(&[item(Some("1"), "a", "completed"), item(None, "b", "pending")], Some(1)).unwrap();
        assert_eq!((s.revision, s.by, s.plan.items.len()), (2, By::User, 2));
        let err = board.user_edit(&[item(None, "c", "pending")], Some(1)).unwrap_err();
        assert!(err.contains("changed"), "{err}");
        let err = board.user_edit(&[item(None, "x", "in_progress"), item(None, "y", "in_progress")], None);
        assert_eq!(err.unwrap_err(), "Error: Only one task can be in_progress at a time");
        assert_eq!(board.snapshot().revision, 2);
    }

    #[test]
    fn the_model_hears_of_an_edit_once_and_cannot_overwrite_it_unseen() {
        let board = PlanBoard::new(Plan::default(), 0);
        board.user_edit(&[item(None, "mine", "pending")], None).unwrap();
        let refused = board.model_change(true, |p| p.update(&json!([{"text": "theirs"}]))).unwrap_err();
        assert!(refused.contains("[ ] #1: mine"), "{refused}");
        assert_eq!(board.take_unseen_edit(), None, "the refusal told the model");
        board.model_change(true, |p| p.update(&json!([{"text": "theirs"}]))).unwrap();
        // A new item's id is never one the plan had (the model's #1 is gone, its id is not reused).
        board.user_edit(&[item(None, "again", "pending")], None).unwrap();
        let notice = board.take_unseen_edit().unwrap();
        assert_eq!(
            notice,
            "<plan-edit>The user changed the plan. It is now:\n[ ] #2: again\n\n(0/1 completed)</plan-edit>"
        );
        assert_eq!(board.take_unseen_edit(), None);
    }

    #[test]
    fn every_change_says_what_it_was() {
        let board = PlanBoard::new(Plan::default(), 0);
        assert_eq!(board.snapshot().change, None, "nothing changed since the session opened");
        board.model_change(true, |p| p.update(&json!([{"text": "a"}, {"text": "b"}]))).unwrap();
        assert_eq!((board.snapshot().by, board.snapshot().change), (By::Model, Some(Change::Update)));
        let s = board.user_edit(&[item(Some("1"), "a", "pending"), item(Some("2"), "b c", "pending")], None).unwrap();
        assert_eq!((s.by, s.change), (By::User, Some(Change::Edit)));
        let s = board.approve(None).unwrap();
        assert_eq!((s.by, s.change), (By::User, Some(Change::Approved)));
        let s = board.replace(Plan::default(), Change::Rewind);
        assert_eq!((s.by, s.change), (By::User, Some(Change::Rewind)));
        assert_eq!(board.replace(Plan::default(), Change::Reset).change, Some(Change::Reset));
        // A refused change leaves the last one's word standing.
        board.approve(None).unwrap_err();
        assert_eq!(board.snapshot().change, Some(Change::Reset));
    }
}
