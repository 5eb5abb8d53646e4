//! The user's side of a run at the engine's level: a line steered in as the model ends its turn keeps the
//! run going, and a plan edit the model has just been told of is not nagged about in the same request.

mod common;

use std::sync::{Arc, OnceLock};

use common::*;
use serde_json::json;
use stepwise::agent::AgentConfig;
use stepwise::events::{Event, EventSink};
use stepwise::llm::Message;
use stepwise::plan::EditItem;
use stepwise::workspace::{Steered, Workspace};
use stepwise_tests::mock::{Step, Turn};

/// Steers a line into the workspace when the model starts streaming its answer (the one that ends the
/// turn: it calls no tool), and forwards to `Collect`.
struct SteerOn {
    line: &'static str,
    ws: OnceLock<Arc<Workspace>>,
    answer: OnceLock<Steered>,
    inner: Collect,
}

impl EventSink for SteerOn {
    fn emit(&self, event: Event<'_>) {
        if let Event::AssistantText { .. } = &event {
            if self.answer.get().is_none() {
                let _ = self.answer.set(self.ws.get().unwrap().steer(self.line));
            }
        }
        self.inner.emit(event);
    }
    fn checkpoint(&self, messages: &[Message]) {
        self.inner.checkpoint(messages);
    }
}

#[tokio::test]
async fn a_line_steered_as_the_model_ends_its_turn_keeps_the_run_going() {
    let h = Harness::new(vec![Step::text("All done."), Step::text("Checked b.txt too.")]).await;
    let sink =
        SteerOn { line: "Also check b.txt.", ws: OnceLock::new(), answer: OnceLock::new(), inner: Collect::default() };
    let _ = sink.ws.set(h.work.clone());
    let out = h.work.run_prompt("do it", &h.llm, &h.host, &sink, &h.cfg).await.unwrap();
    assert_eq!(sink.answer.get(), Some(&Steered::Queued), "the run was still reading");
    assert_eq!(out.reason, FinishReason::EndTurn);
    assert_eq!(out.final_text, "Checked b.txt too.");
    let second = h.body(1);
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs[msgs.len() - 2]["content"][0]["text"], "All done.");
    assert_eq!(msgs[msgs.len() - 1]["content"], json!([{"type": "text", "text": "Also check b.txt."}]));
    // After the run, the inbox is closed: a steer starts a run of its own.
    assert_eq!(h.work.steer("later"), Steered::NoRun);
}

/// Edits the plan as the user would when the first command finishes, and forwards to `Collect`.
struct EditAfterFirstCommand {
    ws: Arc<Workspace>,
    done: OnceLock<()>,
    inner: Collect,
}

impl EventSink for EditAfterFirstCommand {
    fn emit(&self, event: Event<'_>) {
        if let Event::ToolFinished { name: "bash", .. } = &event {
            if self.done.set(()).is_ok() {
                let items =
                    [EditItem { id: None, text: "Mine".into(), status: "in_progress".into(), active_form: None }];
                self.ws.edit_plan(&items, None).unwrap();
            }
        }
        self.inner.emit(event);
    }
}

#[tokio::test]
async fn a_plan_edit_counts_as_the_plan_being_in_mind_for_the_nag() {
    // Nagged after two rounds without a planning call; the round whose request tells the model of the
    // user's edit starts the count again.
    let cfg = AgentConfig { reminder_rounds: 2, ..AgentConfig::default() };
    let bash = |c: &str| Step::Turn(Turn::default().with_tool("bash", json!({"command": c})));
    let h =
        Harness::with_cfg(vec![bash("echo one"), bash("echo two"), bash("echo three"), Step::text("done")], cfg).await;
    let sink = EditAfterFirstCommand { ws: h.work.clone(), done: OnceLock::new(), inner: Collect::default() };
    let out = h.work.run_prompt("go", &h.llm, &h.host, &sink, &h.cfg).await.unwrap();
    assert_eq!(out.reason, FinishReason::EndTurn);
    let body = |i: usize| serde_json::to_string(&h.body(i)).unwrap();
    // Request 1 carries the edit (after round 1's results); round 2's results are not nagged (without
    // the edit they would be: two rounds without planning); round 3's are.
    assert_eq!(body(1).matches("<plan-edit>").count(), 1);
    assert!(!body(2).contains(REMINDER), "{}", body(2));
    assert!(body(3).contains(REMINDER), "{}", body(3));
    assert_eq!(sink.inner.reminders(), 1);
}
