//! A conversation and its plan, and how a run ended: the data the loop, the events and the adapters share.

use serde::{Deserialize, Serialize};

use crate::llm::{Block, Message, Role, Usage};
use crate::plan::Plan;

/// A conversation and its plan as saved: what a follow-up prompt continues after a restart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub messages: Vec<Message>,
    pub plan: Plan,
    /// The plan's revision (raised by every change, the model's and the user's).
    #[serde(default)]
    pub revision: u64,
    /// The children of its runs (`task`), their conversations kept apart from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<SubagentRecord>,
}

impl Session {
    /// Adds the user's prompt (see `push_user_text`).
    pub fn push_prompt(&mut self, prompt: &str) {
        push_user_text(&mut self.messages, prompt.to_string());
    }
}

/// Adds a text block to the user's turn. After a cut-short run the last message may already be a user
/// turn (tool results); the text joins it, so roles keep alternating.
pub fn push_user_text(messages: &mut Vec<Message>, text: String) {
    let block = Block::Text { text };
    match messages.last_mut() {
        Some(m) if m.role == Role::User => m.content.push(block),
        _ => messages.push(Message { role: Role::User, content: vec![block].into() }),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    EndTurn,
    Cancelled,
    Error,
    LoopDetected,
    MaxRounds,
    /// The model's replies kept hitting the output limit.
    MaxTokens,
    /// Plan first: the model ended its turn in plan mode; its plan waits for the user's approval.
    PlanReady,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::EndTurn => "end_turn",
            FinishReason::Cancelled => "cancelled",
            FinishReason::Error => "error",
            FinishReason::LoopDetected => "loop_detected",
            FinishReason::MaxRounds => "max_rounds",
            FinishReason::MaxTokens => "max_tokens",
            FinishReason::PlanReady => "plan_ready",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    pub reason: FinishReason,
    /// The model's text of its last turn.
    pub final_text: String,
    pub error: Option<String>,
    pub rounds: u32,
    pub usage: Usage,
}

/// What a panicked run said, for the error that ends it (the sidecar's run guard, the ACP prompt).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Where a child is (`stepwise/subagent`'s `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SubagentState {
    Running,
    Done,
    Failed,
    Cancelled,
}

impl SubagentState {
    pub fn as_str(self) -> &'static str {
        match self {
            SubagentState::Running => "running",
            SubagentState::Done => "done",
            SubagentState::Failed => "failed",
            SubagentState::Cancelled => "cancelled",
        }
    }
}

/// One child as saved: which call made it, what it was asked, how it went, its conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentRecord {
    pub id: String,
    pub tool_call_id: String,
    pub description: String,
    pub agent: String,
    pub state: SubagentState,
    pub rounds: u32,
    pub tokens: u64,
    pub messages: Vec<Message>,
}
