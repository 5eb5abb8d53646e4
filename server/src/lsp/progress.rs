//! A run's work-done progress. It is asked of the editor alongside the run, not before it (a client slow
//! to answer, eglot 1.9 in batch, would hold the run up); reports made before the editor agrees wait and
//! follow the `begin`, so none is lost, and a run that ends first ends only what began.

use std::sync::Mutex;

use tower_lsp_server::ls_types::{
    ProgressToken, WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressEnd, WorkDoneProgressReport,
};

use super::notify::{Notifier, Outgoing};
use crate::locks;

#[derive(Default)]
pub struct Progress {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    token: Option<ProgressToken>,
    /// Reports made before `begin` (at most one per plan change of the run).
    waiting: Vec<WorkDoneProgressReport>,
    /// The editor refused, or the run ended: nothing more is sent.
    over: bool,
}

impl Progress {
    /// The editor agreed: `begin`, then the reports that waited.
    pub fn begin(&self, notifier: &Notifier, token: ProgressToken, begin: WorkDoneProgressBegin) {
        let mut st = locks::lock(&self.state);
        if st.over {
            return;
        }
        notifier.send(Outgoing::Progress(token.clone(), WorkDoneProgress::Begin(begin)));
        for r in std::mem::take(&mut st.waiting) {
            notifier.send(Outgoing::Progress(token.clone(), WorkDoneProgress::Report(r)));
        }
        st.token = Some(token);
    }

    /// The editor refused (or does not do progress): the reports are dropped.
    pub fn refused(&self) {
        let mut st = locks::lock(&self.state);
        st.over = true;
        st.waiting.clear();
    }

    pub fn report(&self, notifier: &Notifier, report: WorkDoneProgressReport) {
        let mut st = locks::lock(&self.state);
        match (&st.token, st.over) {
            (Some(token), _) => notifier.send(Outgoing::Progress(token.clone(), WorkDoneProgress::Report(report))),
            (None, false) => st.waiting.push(report),
            (None, true) => {}
        }
    }

    /// The run ended: `end` if the progress began.
    pub fn end(&self, notifier: &Notifier, message: &str) {
        let mut st = locks::lock(&self.state);
        st.over = true;
        st.waiting.clear();
        if let Some(token) = st.token.take() {
            let end = WorkDoneProgressEnd { message: Some(message.to_string()) };
            notifier.send(Outgoing::Progress(token, WorkDoneProgress::End(end)));
        }
    }
}
