//! Slash commands the agent handles itself: advertised with `available_commands_update` once a session
//! is ready (`session/new`, `session/load`, `session/resume`), and a prompt that is one of them
//! (`/compact`) is run here and never reaches the model. Any other text starting with `/` is a prompt;
//! the workspace's skills are listed beside ours (again after a prompt when they changed), and the engine
//! loads the skill a prompt `/<skill> [text]` names.
//!
//! Adding a command: a row in `COMMANDS` and an arm in `run`. Only commands that work are listed.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, PromptResponse, SessionUpdate, StopReason,
    UnstructuredCommandInput,
};
use agent_client_protocol::{Error, ErrorCode};

use super::asker::SessionAsker;
use super::events::{self, AcpEvents, RunState};
use super::sessions::AcpSession;
use super::Conn;
use crate::workspace::{Prepared, RunRequest, RunTicket};

/// One command as the client lists it.
pub(crate) struct SlashCommand {
    pub name: &'static str,
    pub description: &'static str,
    /// What to type after the name, for commands that take text.
    pub hint: Option<&'static str>,
}

const COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        name: "compact",
        description: "Summarise the conversation now to free context; the plan is kept",
        hint: None,
    },
    SlashCommand {
        name: "plan",
        description: "Show the plan, or replace it: one line per step, [ ] #1: text, [>] in progress, [x] done",
        hint: Some("the plan in its render form (empty: show it)"),
    },
    SlashCommand {
        name: "checkpoints",
        description: "List the checkpoints taken before each round, with the files changed since",
        hint: None,
    },
    SlashCommand {
        name: "rewind",
        description: "Put the files, conversation and plan back as they were at a checkpoint",
        hint: Some("ID [both|files|conversation]"),
    },
];

/// What is typed after a skill's name.
const SKILL_HINT: &str = "what the skill is for this time (optional)";

/// Sends the session's commands, ours then the workspace's skills (the engine runs `/<skill> [text]`; a
/// skill named as one of ours is left out: ours win); the client offers them when the user types `/`.
pub(crate) fn advertise(conn: &Conn, session: &AcpSession) {
    let skills = skills(session);
    let mut commands: Vec<AvailableCommand> = COMMANDS
        .iter()
        .map(|c| {
            let input = c.hint.map(|h| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(h)));
            AvailableCommand::new(c.name, c.description).input(input)
        })
        .collect();
    for (name, description) in &skills {
        let input = AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(SKILL_HINT));
        commands.push(AvailableCommand::new(name.clone(), description.clone()).input(input));
    }
    *crate::locks::lock(&session.skills_shown) = skills;
    events::send(conn, &session.id, SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)));
}

/// After a prompt: the commands again when the skills changed since they were sent (each run finds them
/// anew, so a skill added meanwhile works already; this is the client's menu catching up).
pub(crate) fn refresh(conn: &Conn, session: &AcpSession) {
    if skills(session) != *crate::locks::lock(&session.skills_shown) {
        advertise(conn, session);
    }
}

/// The session's skills as commands: name and description, those named as one of ours left out.
fn skills(session: &AcpSession) -> Vec<(String, String)> {
    crate::skills::find(session.root())
        .list
        .into_iter()
        .filter(|s| !COMMANDS.iter().any(|c| c.name == s.name))
        .map(|s| {
            let description = s.one_line();
            (s.name, description)
        })
        .collect()
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
    args: &str,
    session: &Arc<AcpSession>,
    conn: &Conn,
    ticket: &RunTicket,
) -> Result<PromptResponse, Error> {
    match command.name {
        "compact" => compact(session, conn, ticket).await,
        "plan" => plan(session, conn, args),
        "checkpoints" => {
            say(conn, session, crate::checkpoint::text::listing(&session.ws.checkpoints()));
            Ok(PromptResponse::new(StopReason::EndTurn))
        }
        "rewind" => rewind(session, conn, ticket, args),
        other => Err(Error::new(ErrorCode::INTERNAL_ERROR, format!("/{other} is listed but not handled"))),
    }
}

fn say(conn: &Conn, session: &AcpSession, text: String) {
    events::send(conn, &session.id, SessionUpdate::AgentMessageChunk(events::text_block(text)));
}

/// `/plan` shows the plan; `/plan <render text>` replaces it as the user's edit (the protocol's plan is
/// one-way: this is how an ACP client edits it). The model is told at its next request.
fn plan(session: &Arc<AcpSession>, conn: &Conn, text: &str) -> Result<PromptResponse, Error> {
    if text.trim().is_empty() {
        say(conn, session, session.ws.plan().plan.render());
        return Ok(PromptResponse::new(StopReason::EndTurn));
    }
    match session.ws.edit_plan_text(text, None) {
        Ok(state) => {
            events::send(conn, &session.id, SessionUpdate::Plan(super::tool_calls::plan(&state.plan)));
            say(conn, session, state.plan.render());
            Ok(PromptResponse::new(StopReason::EndTurn))
        }
        Err(e) => {
            say(conn, session, e.clone());
            Err(Error::new(ErrorCode::INVALID_PARAMS, e))
        }
    }
}

/// `/rewind ID [both|files|conversation]`: on disk (the prompt holds the run slot, so no run goes on).
fn rewind(session: &Arc<AcpSession>, conn: &Conn, ticket: &RunTicket, args: &str) -> Result<PromptResponse, Error> {
    use crate::checkpoint::text;
    let done = text::parse_args(args).and_then(|(id, restore)| session.ws.rewind_on_disk_holding(ticket, id, restore));
    match done {
        Ok(done) => {
            if done.plan.session.is_some() {
                let plan = session.ws.plan().plan;
                events::send(conn, &session.id, SessionUpdate::Plan(super::tool_calls::plan(&plan)));
            }
            say(conn, session, text::rewound(&done));
            Ok(PromptResponse::new(StopReason::EndTurn))
        }
        Err(e) => {
            say(conn, session, format!("stepwise: {e}"));
            Err(Error::new(ErrorCode::INVALID_PARAMS, e))
        }
    }
}

/// `/compact`: the conversation summarised now (`agent::compact`), reported as the loop reports it.
async fn compact(session: &Arc<AcpSession>, conn: &Conn, ticket: &RunTicket) -> Result<PromptResponse, Error> {
    let cancel = &ticket.cancel;
    let req = RunRequest { compaction: true, ..Default::default() };
    let asker = SessionAsker { conn: conn.clone(), session_id: session.id.clone() };
    let configured = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Ok(PromptResponse::new(StopReason::Cancelled)),
        c = session.ws.prepare_run(req, &asker) => c,
    };
    let llm = match configured {
        Ok(Prepared { llm, .. }) => llm,
        Err(e) => {
            say(conn, session, format!("stepwise: {e}"));
            return Err(Error::new(ErrorCode::INTERNAL_ERROR, e));
        }
    };
    let state = Arc::new(RunState::default());
    let sink = AcpEvents { session: session.clone(), conn: conn.clone(), state, subagents: false };
    let outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        o = session.ws.compact(ticket, &llm, &sink) => Some(o),
    };
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
