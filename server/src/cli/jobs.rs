//! Chat's `/jobs` and `/kill ID`, and the line a background task's end prints on the terminal while the
//! user reads (the model is not started for it; it reads the end before its next request).

use std::collections::HashSet;
use std::sync::Arc;

use crate::background::Killer;
use crate::host::output::truncate_chars;
use crate::workspace::Workspace;

/// `/jobs`: every task of the session, a line each, with the last line of its output.
pub(super) fn list(ws: &Workspace) {
    let tasks = ws.background().views();
    if tasks.is_empty() {
        return println!("no background tasks");
    }
    for t in tasks {
        let last = t.tail.trim_end().lines().last().unwrap_or("").to_string();
        println!("{}  {}  {}", t.id, t.state, truncate_chars(&t.command, 60));
        if !last.is_empty() {
            println!("      {}", truncate_chars(&last, 100));
        }
    }
}

/// `/kill ID`: ends the task's whole process tree.
pub(super) async fn kill(ws: &Workspace, id: &str) {
    match ws.background().kill(id, Killer::User).await {
        Ok(said) => println!("{said}"),
        Err(e) => eprintln!("stepwise: {e}"),
    }
}

/// Prints a line on stderr when a task ends (and what the sandbox stopped, when it stopped it), for as
/// long as the workspace lives.
pub(super) fn watch(ws: &Arc<Workspace>) -> tokio::task::JoinHandle<()> {
    let mut rx = ws.background().subscribe();
    let ws = Arc::downgrade(ws);
    tokio::spawn(async move {
        let mut shown: HashSet<String> = HashSet::new();
        while rx.changed().await.is_ok() {
            let Some(ws) = ws.upgrade() else { return };
            for t in ws.background().views() {
                if !t.running && shown.insert(t.id.clone()) {
                    eprintln!("stepwise: {} {} ({})", t.id, t.state, truncate_chars(&t.command, 60));
                    // What the sandbox stopped, as the model reads it and the editors show it.
                    if let Some(note) = ws.background().find(&t.id).and_then(|t| t.stop_note()) {
                        eprintln!("  {note}");
                    }
                }
            }
        }
    })
}

/// At the end of `stepwise run` / `chat`: what still runs is ended with it, said.
pub(super) fn end_all(ws: &Workspace) {
    let running: Vec<String> = ws.background().views().into_iter().filter(|t| t.running).map(|t| t.id).collect();
    if !running.is_empty() {
        eprintln!("stepwise: stopping background tasks: {}", running.join(", "));
        ws.background().kill_all_now();
    }
}
