//! Chat's `/checkpoints` and `/rewind ID [both|files|conversation]` (issue 20).

use crate::checkpoint::Restore;
use crate::workspace::Workspace;

/// `/checkpoints`: one line each, oldest first.
pub(super) fn list(ws: &Workspace) {
    let all = ws.checkpoints();
    if all.is_empty() {
        println!("No checkpoints.");
        return;
    }
    for c in all {
        let prompt: String = c.prompt.lines().next().unwrap_or("").chars().take(60).collect();
        let step = c.step.map(|s| format!(" [{s}]")).unwrap_or_default();
        let files = if c.files.is_empty() {
            "no files changed since".to_string()
        } else {
            let names: Vec<String> = c.files.iter().map(|f| f.display().to_string()).collect();
            format!("files changed since: {}", names.join(", "))
        };
        println!("{}  round {} of \"{prompt}\"{step}  {}  {files}", c.id, c.round, c.time);
    }
}

/// `/rewind ID [both|files|conversation]`: puts it back on disk and says what it did and did not.
pub(super) fn rewind(ws: &Workspace, args: &str) {
    let mut words = args.split_whitespace();
    let id = words.next().unwrap_or_default();
    let restore = match words.next() {
        None => Restore::Both,
        Some(w) => match Restore::parse(w) {
            Some(r) => r,
            None => {
                eprintln!("stepwise: /rewind ID [both|files|conversation], not {w:?}");
                return;
            }
        },
    };
    let done = match ws.rewind_on_disk(id, restore) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("stepwise: {e}");
            return;
        }
    };
    let names = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(", ");
    let put_back = names(&mut done.applied.done.iter().map(|p| p.display().to_string()));
    let mut said = format!("Rewound to checkpoint {}", done.plan.checkpoint);
    if restore.files() {
        said += &if put_back.is_empty() { "; no files to put back".into() } else { format!("; put back: {put_back}") };
    }
    if done.plan.session.is_some() {
        said += "; the conversation and plan are as they were";
    }
    println!("{said}.");
    if !done.plan.conflicts.is_empty() {
        let c = names(&mut done.plan.conflicts.iter().map(|p| p.display().to_string()));
        println!("Left alone (changed by someone else after the agent's last change): {c}");
    }
    for (path, why) in done.plan.unrestorable.iter().chain(&done.applied.failed) {
        println!("Not put back: {} ({why})", path.display());
    }
}
