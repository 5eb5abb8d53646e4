//! Reading the model's answer: what of it runs, and what ends the run or asks for more.

use serde_json::Value;

use super::{push_user_text, Run, CANCELLED, CONTINUE, CUT_CALL};
use crate::events::{Event, EventSink};
use crate::host::Host;
use crate::llm::{Block, Message, ModelResponse, Role};
use crate::session::FinishReason;

/// How many times a cut text reply is continued before the run ends with `max_tokens`.
const MAX_CONTINUATIONS: u32 = 2;
/// Stop reasons the loop understands (OpenAI's are normalised to these by the client).
const KNOWN_STOPS: [&str; 4] = ["end_turn", "tool_use", "stop_sequence", "max_tokens"];

pub(super) enum Answer {
    /// Tool calls to run, in order (id, name, input), and the answer's text.
    Calls { calls: Vec<(String, String, Value)>, text: String },
    /// Nothing to run; another round follows (below the round cap).
    Again { text: String },
    /// The run ends.
    End { reason: FinishReason, text: String, error: Option<String> },
}

/// Reads an answer into the conversation; `continuations` counts cut text replies in a row.
pub(super) fn read<H: Host + ?Sized, E: EventSink + ?Sized>(
    continuations: &mut u32,
    messages: &mut Vec<Message>,
    r: &Run<'_, H, E>,
    resp: ModelResponse,
) -> Answer {
    let calls: Vec<(String, String, Value)> = resp
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect();
    let text = resp.text();
    let stop_reason = resp.stop_reason;
    if !resp.content.is_empty() {
        messages.push(Message { role: Role::Assistant, content: resp.content.into() });
    }
    let cut = stop_reason == "max_tokens";
    if !cut && !KNOWN_STOPS.contains(&stop_reason.as_str()) {
        // Nothing of an answer we do not understand is run; each call still gets its one result.
        let why = format!("the model stopped for a reason stepwise does not know: '{stop_reason}'");
        answer_unrun(messages, &calls, &format!("Error: Not run: {why}"));
        r.events.checkpoint(messages);
        return Answer::End { reason: FinishReason::Error, text, error: Some(why) };
    }
    if cut && !calls.is_empty() {
        // A cut call may carry cut input (half a file): never run it; the model retries smaller.
        for (id, name, input) in &calls {
            r.events.emit(Event::ToolFinished {
                id,
                name,
                input,
                output: CUT_CALL,
                is_error: true,
                change: None,
                step: None,
            });
        }
        answer_unrun(messages, &calls, CUT_CALL);
        r.events.checkpoint(messages);
        return Answer::Again { text };
    }
    if cut {
        if *continuations >= MAX_CONTINUATIONS {
            r.events.checkpoint(messages);
            let why = format!(
                "the model's reply hit the output limit ({} times in a row); raise STEPWISE_MAX_TOKENS or ask for less",
                *continuations + 1
            );
            return Answer::End { reason: FinishReason::MaxTokens, text, error: Some(why) };
        }
        *continuations += 1;
        push_user_text(messages, CONTINUE.into());
        r.events.checkpoint(messages);
        return Answer::Again { text };
    }
    if calls.is_empty() {
        // Also a `tool_use` stop with no calls: the turn ends, no empty results message is sent; unless
        // the user steered meanwhile, which the model answers before the run ends.
        if let Some(lines) = r.shared.inbox.close_unless_pending() {
            for line in lines {
                push_user_text(messages, line);
            }
            r.events.checkpoint(messages);
            return Answer::Again { text };
        }
        r.events.checkpoint(messages);
        return Answer::End { reason: FinishReason::EndTurn, text, error: None };
    }
    Answer::Calls { calls, text }
}

/// One error result per call, none of them run, so the conversation stays valid.
fn answer_unrun(messages: &mut Vec<Message>, calls: &[(String, String, Value)], text: &str) {
    let results = calls.iter().map(|(id, _, _)| Block::result(id.clone(), text, true)).collect::<Vec<_>>();
    if !results.is_empty() {
        messages.push(Message { role: Role::User, content: results.into() });
    }
}

pub(super) fn skipped(reason: FinishReason) -> String {
    match reason {
        FinishReason::Cancelled => CANCELLED.into(),
        other => format!("Error: Not run: the run stopped ({})", other.as_str()),
    }
}
