//! `session/prompt`: one task, run to the end of the model's turn, answered with its stop reason.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResourceResource, PromptResponse, SessionUpdate, StopReason,
};
use agent_client_protocol::{Error, ErrorCode};

use super::asker::SessionAsker;
use super::events::{self, AcpEvents, RunState};
use super::host::AcpHost;
use super::modes;
use super::sessions::AcpSession;
use super::{ClientFs, Conn};
use crate::agent::FinishReason;
use crate::images::Given;
use crate::plan::{Mode, PlanComment};
use crate::workspace::{Prepared, RunRequest, RunTicket};

/// The prompt as the model reads it: text as given, a linked file by its URI, an embedded one inline.
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            ContentBlock::ResourceLink(l) => Some(format!("@{}", l.uri)),
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    Some(format!("<file uri=\"{}\">\n{}\n</file>", t.uri, t.text))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    parts.join("\n")
}

/// The prompt's `image` blocks, checked (`images`); `Err` says which cannot be taken and why.
pub(crate) async fn prompt_images(
    root: &std::path::Path,
    blocks: &[ContentBlock],
) -> Result<Vec<crate::llm::Image>, String> {
    let given: Vec<_> = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(Given::Data { media_type: Some(&i.mime_type), data: &i.data }),
            _ => None,
        })
        .collect();
    crate::images::for_prompt(root, &given).await
}

pub(crate) async fn run(
    session: Arc<AcpSession>,
    conn: Conn,
    fs: ClientFs,
    prompt: String,
    blocks: Vec<ContentBlock>,
    mut ticket: RunTicket,
) -> Result<PromptResponse, Error> {
    let images = prompt_images(session.root(), &blocks).await.map_err(|e| Error::new(ErrorCode::INVALID_PARAMS, e))?;
    if prompt.trim().is_empty() && images.is_empty() {
        return Err(Error::new(ErrorCode::INVALID_PARAMS, "the prompt has no text"));
    }
    ticket.images = images;
    let conn = &conn;
    // Our own slash commands (`/compact`, `/plan`, `/checkpoints`, `/rewind`) run here and never reach the model.
    if let Some((command, args)) = super::commands::parse(&prompt) {
        return super::commands::run(command, args, &session, conn, &ticket).await;
    }
    let say =
        |text: String| events::send(conn, &session.id, SessionUpdate::AgentMessageChunk(events::text_block(text)));
    // The environment and `.env` files of the session's folder, as the command line reads them.
    let req = RunRequest { mode: Some(session.mode()), client_mcp: session.mcp.servers(), ..Default::default() };
    let asker = SessionAsker { conn: conn.clone(), session_id: session.id.clone() };
    let configured = tokio::select! {
        biased;
        _ = ticket.cancel.cancelled() => return Ok(PromptResponse::new(StopReason::Cancelled)),
        c = session.ws.prepare_run(req, &asker) => c,
    };
    let Prepared { cfg, llm } = match configured {
        Ok(c) => c,
        Err(e) => {
            say(format!("stepwise: {e}"));
            return Err(Error::new(ErrorCode::INTERNAL_ERROR, e));
        }
    };
    let state = Arc::new(RunState::default());
    let host = AcpHost { session: session.clone(), conn: conn.clone(), fs, state: state.clone() };
    let sink = AcpEvents { session: session.clone(), conn: conn.clone(), state, subagents: fs.subagents };
    let mut prompt = prompt;
    if cfg.mode == Mode::Plan && session.ws.awaiting_approval().is_some() {
        // A plan waits: what the user says now is a comment on it, one more planning round.
        let comment = [PlanComment { id: None, text: prompt.clone() }];
        prompt = session.ws.comment_on(&mut ticket, &comment).map_err(|e| Error::new(ErrorCode::INVALID_PARAMS, e))?;
    }
    let mut outcome = session.ws.prompt(&ticket, &prompt, &llm, &host, &sink, &cfg).await;
    if outcome.reason == FinishReason::PlanReady {
        let answer = tokio::select! {
            biased;
            _ = ticket.cancel.cancelled() => modes::Answer::KeepPlanning,
            a = modes::ask(&session, conn) => a,
        };
        if let modes::Answer::Approve { fresh } = answer {
            let mut approved = session.ws.renew(ticket);
            let prompt = session
                .ws
                .approve_on(&mut approved, None, fresh)
                .map_err(|e| Error::new(ErrorCode::INVALID_REQUEST, e))?;
            modes::switch(&session, conn, Mode::Default);
            events::send(conn, &session.id, SessionUpdate::Plan(super::tool_calls::plan(&session.ws.plan().plan)));
            outcome = session.ws.prompt(&approved, &prompt, &llm, &host, &sink, &cfg).await;
        }
    }
    let stop = match outcome.reason {
        FinishReason::EndTurn | FinishReason::PlanReady => StopReason::EndTurn,
        FinishReason::Cancelled => StopReason::Cancelled,
        FinishReason::MaxTokens => {
            say(format!("\n\nstepwise stopped: {}", outcome.error.as_deref().unwrap_or("the output limit was hit")));
            StopReason::MaxTokens
        }
        FinishReason::MaxRounds => {
            say(format!("\n\nstepwise stopped: the round cap ({}) was reached (STEPWISE_MAX_ROUNDS).", cfg.max_rounds));
            StopReason::MaxTurnRequests
        }
        FinishReason::LoopDetected => {
            say("\n\nstepwise stopped: the model repeated the same tool call, so it may be stuck in a loop.".into());
            StopReason::EndTurn
        }
        FinishReason::Error => {
            let why = outcome.error.unwrap_or_else(|| "the run failed".into());
            say(format!("\n\nstepwise stopped: {why}"));
            return Err(Error::new(ErrorCode::INTERNAL_ERROR, why));
        }
    };
    Ok(PromptResponse::new(stop))
}

#[cfg(test)]
mod tests {
    use super::prompt_text;
    use agent_client_protocol::v1::schema::{ContentBlock, ResourceLink, TextContent};

    #[test]
    fn text_and_linked_files_make_the_prompt() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("fix")),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///p/main.rs")),
        ];
        assert_eq!(prompt_text(&blocks), "fix\n@file:///p/main.rs");
    }
}
