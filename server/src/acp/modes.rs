//! Plan first over ACP: the session modes `default` and `plan` (`modes` in `session/new`,
//! `session/set_mode`, `current_mode_update`), and the question asked when a plan is ready:
//! `session/request_permission` with approve / approve with fresh context / keep planning.

use agent_client_protocol::v1::schema::{
    CurrentModeUpdate, PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionMode, SessionModeState, SessionUpdate, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::{Error, ErrorCode};

use super::events;
use super::sessions::AcpSession;
use super::Conn;
use crate::plan::Mode;

pub(crate) const APPROVE: &str = "approve";
pub(crate) const APPROVE_FRESH: &str = "approve-fresh";
pub(crate) const KEEP_PLANNING: &str = "keep-planning";

/// The modes a session offers, `current` selected.
pub(crate) fn state(current: Mode) -> SessionModeState {
    SessionModeState::new(
        current.as_str(),
        vec![
            SessionMode::new(Mode::Default.as_str(), "Default")
                .description("Acts: edits files and runs commands (asking as configured).".to_string()),
            SessionMode::new(Mode::Plan.as_str(), "Plan")
                .description("Plans first, read-only; nothing changes until you approve the plan.".to_string()),
        ],
    )
}

/// `session/set_mode`: an unknown mode id is an invalid-params error.
pub(crate) fn set(session: &AcpSession, mode_id: &str) -> Result<(), Error> {
    let mode = Mode::parse(mode_id).filter(|m| m.as_str() == mode_id).ok_or_else(|| {
        Error::new(ErrorCode::INVALID_PARAMS, format!("unknown mode '{mode_id}': use 'default' or 'plan'"))
    })?;
    session.set_mode(mode);
    Ok(())
}

/// The agent changed the mode itself (an approved plan acts in `default`): the client hears of it.
pub(crate) fn switch(session: &AcpSession, conn: &Conn, mode: Mode) {
    session.set_mode(mode);
    events::send(conn, &session.id, SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str())));
}

/// What the user answered about a ready plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Approve { fresh: bool },
    KeepPlanning,
}

/// Asks whether to carry out the plan; anything but an approval (a refusal, a cancelled or failed
/// request) keeps planning.
pub(crate) async fn ask(session: &AcpSession, conn: &Conn) -> Answer {
    let plan = session.ws.plan().plan.render();
    let fields = ToolCallUpdateFields::new()
        .title("Approve the plan and carry it out?".to_string())
        .content(vec![ToolCallContent::from(plan)]);
    let options = vec![
        PermissionOption::new(APPROVE, "Approve", PermissionOptionKind::AllowOnce),
        PermissionOption::new(APPROVE_FRESH, "Approve with fresh context", PermissionOptionKind::AllowOnce),
        PermissionOption::new(KEEP_PLANNING, "Keep planning", PermissionOptionKind::RejectOnce),
    ];
    let req = RequestPermissionRequest::new(
        session.id.clone(),
        ToolCallUpdate::new("stepwise-plan-approval", fields),
        options,
    );
    match conn.send_request(req).block_task().await {
        Ok(r) => match r.outcome {
            RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == APPROVE => Answer::Approve { fresh: false },
            RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == APPROVE_FRESH => {
                Answer::Approve { fresh: true }
            }
            _ => Answer::KeepPlanning,
        },
        Err(e) => {
            tracing::warn!("session/request_permission failed: {}", e.message);
            Answer::KeepPlanning
        }
    }
}
