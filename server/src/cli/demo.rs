//! `stepwise demo`: a complete, clearly labelled scripted session on a scratch copy of a small project.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use super::{exit_code, Terminal};
use crate::agent::AgentConfig;
use crate::host::DiskHost;
use crate::host::Host;
use crate::llm::{Llm, Replay};
use crate::workspace::Workspace;

const SESSION: &str = include_str!("../../demo/session.jsonl");
const FILES: &[(&str, &str)] = &[
    ("hello.py", include_str!("../../demo/project/hello.py")),
    ("README.md", include_str!("../../demo/project/README.md")),
];
pub const TASK: &str = "Refactor hello.py: add type hints, docstrings, and a main guard";

pub async fn run() -> i32 {
    let dir = std::env::temp_dir().join(format!("stepwise-demo-{}", std::process::id()));
    let prepared = std::fs::create_dir_all(&dir)
        .and_then(|_| FILES.iter().try_for_each(|(name, text)| std::fs::write(dir.join(name), text)));
    if let Err(e) = prepared {
        eprintln!("stepwise demo: cannot prepare {}: {e}", dir.display());
        return 1;
    }
    let replay = match Replay::parse(SESSION) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("stepwise demo: the shipped session is broken: {e}");
            return 1;
        }
    };
    let tty = std::io::stdout().is_terminal();
    let llm = Llm::replay(replay.with_pace(if tty { Duration::from_millis(25) } else { Duration::ZERO }));
    let host = match DiskHost::new(&dir, None) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("stepwise demo: {e}");
            return 1;
        }
    };
    let term = Terminal::new();
    println!("== stepwise demo: a SCRIPTED session. No model is called; the responses are recorded. ==");
    println!("workspace: {} (a scratch copy, removed afterwards)", dir.display());
    println!("task: {TASK}\n");
    let _ = std::io::stdout().flush();
    let (ws, _) = Workspace::open(host.root().to_path_buf(), None, false);
    let cfg = AgentConfig::default();
    let outcome = match ws.begin() {
        Ok(ticket) => ws.prompt(&ticket, TASK, &llm, &host, &term, &cfg).await,
        Err(e) => {
            eprintln!("stepwise demo: {e}");
            return 1;
        }
    };
    if let Ok(text) = std::fs::read_to_string(dir.join("hello.py")) {
        println!("--- hello.py after the session ---\n{text}--- end (scripted demo) ---");
    }
    // The scratch copy has served its purpose; demos must not pile up in the temp folder.
    let _ = std::fs::remove_dir_all(&dir);
    exit_code(outcome.reason)
}
