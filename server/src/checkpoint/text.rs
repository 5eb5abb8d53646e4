//! Checkpoints and rewinds in words, for chat and ACP clients: one line per checkpoint, and what a rewind
//! did and did not put back.

use super::{Info, Restore, Rewound};

/// One line each, oldest first; `No checkpoints.` when there are none.
pub fn listing(all: &[Info]) -> String {
    if all.is_empty() {
        return "No checkpoints.".into();
    }
    let lines: Vec<String> = all
        .iter()
        .map(|c| {
            let prompt: String = c.prompt.lines().next().unwrap_or("").chars().take(60).collect();
            let step = c.step.as_ref().map(|s| format!(" [{s}]")).unwrap_or_default();
            let files = if c.files.is_empty() {
                "no files changed since".to_string()
            } else {
                let names: Vec<String> = c.files.iter().map(|f| f.display().to_string()).collect();
                format!("files changed since: {}", names.join(", "))
            };
            format!("{}  round {} of \"{prompt}\"{step}  {}  {files}", c.id, c.round, c.time)
        })
        .collect();
    lines.join("\n")
}

/// `ID [both|files|conversation]`.
pub fn parse_args(args: &str) -> Result<(&str, Restore), String> {
    let mut words = args.split_whitespace();
    let usage = || "rewind ID [both|files|conversation]".to_string();
    let id = words.next().ok_or_else(usage)?;
    let restore = match words.next() {
        None => Restore::Both,
        Some(w) => Restore::parse(w).ok_or_else(|| format!("{}, not {w:?}", usage()))?,
    };
    if words.next().is_some() {
        return Err(usage());
    }
    Ok((id, restore))
}

/// What a rewind put back, and what it left alone and why.
pub fn rewound(done: &Rewound) -> String {
    let names = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(", ");
    let put_back = names(&mut done.applied.done.iter().map(|p| p.display().to_string()));
    let mut said = format!("Rewound to checkpoint {}", done.plan.checkpoint);
    if done.plan.restore.files() {
        said += &if put_back.is_empty() { "; no files to put back".into() } else { format!("; put back: {put_back}") };
    }
    if done.plan.session.is_some() {
        said += "; the conversation and plan are as they were";
    }
    said += ".";
    if !done.plan.conflicts.is_empty() {
        let c = names(&mut done.plan.conflicts.iter().map(|p| p.display().to_string()));
        said += &format!("\nLeft alone (changed by someone else after the agent's last change): {c}");
    }
    for (path, why) in done.plan.unrestorable.iter().chain(&done.applied.failed) {
        said += &format!("\nNot put back: {} ({why})", path.display());
    }
    said
}
