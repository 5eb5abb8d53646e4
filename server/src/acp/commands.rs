//! Slash commands the agent handles itself: advertised with `available_commands_update` once a session
//! is ready (`session/new`, `session/load`, `session/resume`), and a prompt that is one of them
//! (`/compact`) is run here and never reaches the model. Any other text starting with `/` is a prompt.
//!
//! Adding a command: a row in `COMMANDS` and an arm in `run`. Only commands that work are listed; the
//! plan, checkpoint and rewind commands join once the engine offers their operations (docs/acp.md).

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, PromptResponse, SessionUpdate, StopReason,
    UnstructuredCommandInput,
};
use agent_client_protocol::{Error, ErrorCode};
use tokio_util::sync::CancellationToken;

use super::events::{self, AcpEvents, RunState};
use super::sessions::AcpSession;
use super::Conn;
use crate::config::{self, Env, Overrides};

/// One command as the client lists it.
pub(crate) struct SlashCommand {
    pub name: &'static str,
    pub description: &'static str,
    /// What to type after the name, for commands that take text.
    pub hint: Option<&'static str>,
}

const COMMANDS: &[SlashCommand] = &[SlashCommand {
    name: "compact",
    description: "Summarise the conversation now to free context; the plan is kept",
    hint: None,
}];

/// Sends the session's commands; the client offers them when the user types `/`.
pub(crate) fn advertise(conn: &Conn, session_id: &str) {
    let commands = COMMANDS
        .iter()
        .map(|c| {
            let input = c.hint.map(|h| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(h)));
            AvailableCommand::new(c.name, c.description).input(input)
        })
        .collect();
    events::send(conn, session_id, SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)));
}

/// The command a prompt invokes and the text after its name: `/name` alone or followed by whitespace.
pub(crate) fn parse(prompt: &str) -> Option<(&'static SlashCommand, &str)> {
    let rest = prompt.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let command = COMMANDS.iter().find(|c| c.name == &rest[..end])?;
    Some((command, rest[end..].trim()))
}

/// Runs a command in place of a model turn; the prompt answers as a turn would.
pub(crate) async fn run(
    command: &SlashCommand,
    _args: &str,
    session: &Arc<AcpSession>,
    conn: &Conn,
    cancel: CancellationToken,
) -> Result<PromptResponse, Error> {
    match command.name {
        "compact" => compact(session, conn, cancel).await,
        other => Err(Error::new(ErrorCode::INTERNAL_ERROR, format!("/{other} is listed but not handled"))),
    }
}

fn say(conn: &Conn, session: &AcpSession, text: String) {
    events::send(conn, &session.id, SessionUpdate::AgentMessageChunk(events::text_block(text)));
}

/// `/compact`: the conversation summarised now (`agent::compact`), reported as the loop reports it.
async fn compact(session: &Arc<AcpSession>, conn: &Conn, cancel: CancellationToken) -> Result<PromptResponse, Error> {
    let (env, overrides) = (Env::for_workspace(&session.root), Overrides::default());
    let configured = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Ok(PromptResponse::new(StopReason::Cancelled)),
        c = config::agent_and_model(&env, &overrides) => c,
    };
    let llm = match configured {
        Ok((_, llm)) => llm,
        Err(e) => {
            say(conn, session, format!("stepwise: {e}"));
            return Err(Error::new(ErrorCode::INTERNAL_ERROR, e));
        }
    };
    let sink = AcpEvents { session: session.clone(), conn: conn.clone(), state: Arc::new(RunState::default()) };
    let mut convo = session.session.lock().await;
    let outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        o = crate::agent::compact(&mut convo, &llm, &sink) => Some(o),
    };
    session.save(&convo);
    match outcome {
        Some(o) => {
            say(conn, session, o.final_text);
            Ok(PromptResponse::new(StopReason::EndTurn))
        }
        None => Ok(PromptResponse::new(StopReason::Cancelled)),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn only_our_commands_are_commands() {
        assert_eq!(parse("/compact").map(|(c, a)| (c.name, a)), Some(("compact", "")));
        assert_eq!(parse("  /compact  now\n").map(|(c, a)| (c.name, a)), Some(("compact", "now")));
        for prompt in ["/compacted", "compact", "/usr/bin is odd", "please /compact", "/", ""] {
            assert!(parse(prompt).is_none(), "{prompt:?}");
        }
    }
}
