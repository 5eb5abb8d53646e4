//! A folder's background tasks in the editor: `stepwise/background` on every change (a start, output, an
//! end; runs or no run), and a work-done progress of its own while any task runs, so the editor's
//! status area says `1 background task running` between runs too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tower_lsp_server::ls_types::{
    ProgressToken, WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressEnd, WorkDoneProgressReport,
};
use tower_lsp_server::Client;

use super::ext;
use super::notify::{Notifier, Outgoing};
use super::session::Session;
use crate::workspace::Workspace;

/// At most this often the tasks are sent again while one prints.
const EVERY: Duration = Duration::from_millis(100);
/// How long the editor may take to agree to a progress.
const CREATE_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts both watchers for `folder`, for as long as its workspace lives. `progress`: the client does
/// work-done progress.
pub(super) fn watch(notifier: &Notifier, client: &Client, progress: bool, session: &Session) {
    let ws = Arc::downgrade(&session.ws);
    send_views(notifier.clone(), ws.clone(), session.at());
    if progress {
        report_running(notifier.clone(), client.clone(), ws);
    }
}

/// Sends `stepwise/background` whenever the folder's tasks change, at most about ten times a second;
/// the latest state always goes out (a change during the pause wakes the next pass).
fn send_views(notifier: Notifier, ws: Weak<Workspace>, at: ext::At) {
    let Some(mut rx) = ws.upgrade().map(|ws| ws.background().subscribe()) else { return };
    tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            let Some(ws) = ws.upgrade() else { return };
            let tasks = ws.background().views();
            drop(ws);
            notifier.send(Outgoing::Background(ext::Background { at: at.clone(), tasks }));
            tokio::time::sleep(EVERY).await;
        }
    });
}

/// One progress from the first running task to the last one's end: `begin` (`1 background task
/// running`), a `report` when the count changes, `end` when none runs. A new one for the next task.
fn report_running(notifier: Notifier, client: Client, ws: Weak<Workspace>) {
    let Some(mut rx) = ws.upgrade().map(|ws| ws.background().subscribe()) else { return };
    tokio::spawn(async move {
        // The progress going on (its token), and the count it last said.
        let mut shown: Option<(ProgressToken, usize)> = None;
        while rx.changed().await.is_ok() {
            let Some(running) = ws.upgrade().map(|ws| ws.background().running()) else { return };
            shown = match (shown, running) {
                (None, 0) => None,
                (None, n) => begin(&notifier, &client, n).await,
                (Some((token, _)), 0) => {
                    let end = WorkDoneProgressEnd { message: Some("no background task running".into()) };
                    notifier.send(Outgoing::Progress(token, WorkDoneProgress::End(end)));
                    None
                }
                (Some((token, was)), n) if n != was => {
                    let report = WorkDoneProgressReport { message: Some(said(n)), ..Default::default() };
                    notifier.send(Outgoing::Progress(token.clone(), WorkDoneProgress::Report(report)));
                    Some((token, n))
                }
                (same, _) => same,
            };
            tokio::time::sleep(EVERY).await;
        }
    });
}

/// Asks the editor for a progress and begins it; `None` if it refused or did not answer in time (the
/// next change asks again).
async fn begin(notifier: &Notifier, client: &Client, n: usize) -> Option<(ProgressToken, usize)> {
    static SEQ: AtomicU64 = AtomicU64::new(1);
    let token = ProgressToken::String(format!("stepwise/background/{}", SEQ.fetch_add(1, Ordering::Relaxed)));
    let created = tokio::time::timeout(CREATE_TIMEOUT, client.create_work_done_progress(token.clone())).await;
    if !matches!(created, Ok(Ok(()))) {
        tracing::debug!("the editor did not agree to the background tasks' progress");
        return None;
    }
    let begin = WorkDoneProgressBegin {
        title: "Stepwise".into(),
        cancellable: Some(false),
        message: Some(said(n)),
        percentage: None,
    };
    notifier.send(Outgoing::Progress(token.clone(), WorkDoneProgress::Begin(begin)));
    Some((token, n))
}

/// `1 background task running`, `3 background tasks running`.
fn said(n: usize) -> String {
    format!("{n} background task{} running", if n == 1 { "" } else { "s" })
}
