//! The command line: `run`, `chat`, `demo` and `lsp`.

mod demo;
mod input;
mod render;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::{self, FinishReason, Session};
use crate::config::{self, Env, Overrides};
use crate::host::{Approval, Ask, DiskHost};
use crate::llm::{Llm, Replay};
use input::Input;

pub use render::Terminal;

const USAGE: &str = "\
stepwise: a coding agent that keeps its plan in sight

Usage:
  stepwise run [--workspace DIR] [--yes] [--record FILE] [--replay FILE] TASK
  stepwise chat [--workspace DIR] [--yes] [--record FILE] [--replay FILE]
  stepwise demo
  stepwise lsp [--stdio]
  stepwise --version

Options:
  --workspace DIR  the folder the agent works in (default: the current directory)
  --yes            approve shell commands without asking
  --record FILE    save every model response of the session to FILE (JSON lines)
  --replay FILE    play a recorded session back instead of calling a model

In chat, /compact compacts the conversation now (the plan is kept); q or exit quits.

The model is configured by the environment or a .env file: STEPWISE_PROVIDER (anthropic | openai),
MODEL_ID, ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, OPENAI_API_KEY / OPENAI_BASE_URL.
";

struct Options {
    workspace: PathBuf,
    yes: bool,
    record: Option<PathBuf>,
    replay: Option<PathBuf>,
    rest: Vec<String>,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options { workspace: PathBuf::from("."), yes: false, record: None, replay: None, rest: Vec::new() };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--workspace" | "-w" => o.workspace = PathBuf::from(value(a)?),
            "--yes" | "-y" => o.yes = true,
            "--record" => o.record = Some(PathBuf::from(value(a)?)),
            "--replay" => o.replay = Some(PathBuf::from(value(a)?)),
            "--" => o.rest.extend(it.by_ref().cloned()),
            s if s.starts_with("--workspace=") => o.workspace = PathBuf::from(&s["--workspace=".len()..]),
            s if s.starts_with('-') && s.len() > 1 => return Err(format!("unknown option {s}")),
            s => o.rest.push(s.to_string()),
        }
    }
    Ok(o)
}

/// Entry point of the binary; returns the process exit code.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprint!("{USAGE}");
        return 2;
    };
    let rest = &args[1..];
    // CONTRACT: every subcommand answers --help with its usage and exit 0.
    if rest.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return 0;
    }
    match cmd.as_str() {
        "--version" | "-V" | "version" => {
            println!("stepwise {}", env!("CARGO_PKG_VERSION"));
            0
        }
        "--help" | "-h" | "help" => {
            print!("{USAGE}");
            0
        }
        "lsp" | "--stdio" => {
            init_logging("info");
            runtime().block_on(crate::lsp::serve_stdio());
            0
        }
        "run" | "chat" | "demo" => {
            init_logging("warn");
            let opts = match parse_options(rest) {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("stepwise: {e}\n\n{USAGE}");
                    return 2;
                }
            };
            let rt = runtime();
            match cmd.as_str() {
                "run" => rt.block_on(run_once(opts)),
                "chat" => rt.block_on(chat(opts)),
                _ => rt.block_on(demo::run()),
            }
        }
        other => {
            eprintln!("stepwise: unknown command '{other}'\n\n{USAGE}");
            2
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("cannot start the async runtime")
}

/// Logs go to stderr only: stdout belongs to the plan (CLI) or to LSP messages (sidecar).
pub fn init_logging(default_level: &str) {
    let level = std::env::var("STEPWISE_LOG").unwrap_or_else(|_| default_level.to_string());
    let level = level.parse::<tracing::Level>().unwrap_or(tracing::Level::WARN);
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}

struct Setup {
    llm: Llm,
    host: DiskHost,
    cfg: agent::AgentConfig,
    term: Terminal,
}

async fn setup(opts: &Options, input: &Input) -> Result<Setup, String> {
    let ws = &opts.workspace;
    if !ws.is_dir() {
        return Err(format!("workspace {} is not a folder", ws.display()));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let env = Env::load(&[ws.as_path(), cwd.as_path()]);
    let overrides = Overrides::default();
    let cfg = config::agent(&env, &overrides)?;
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if opts.replay.is_none() && interactive {
        ask_about_foreign_endpoint(&env, &overrides, input).await;
    }
    let llm = match &opts.replay {
        Some(path) => Llm::replay(Replay::load(path)?),
        None => {
            let p = config::provider(&env, &overrides)?;
            Llm::new(p)?.learn_window().await
        }
    };
    let llm = match &opts.record {
        Some(path) => llm.record_to(path.clone()).map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => llm,
    };
    let approver = if opts.yes { None } else { Some(terminal_approver(interactive, input.clone())) };
    let host = DiskHost::new(ws, approver).map_err(|e| format!("workspace {}: {e}", ws.display()))?;
    let stdout_tty = std::io::stdout().is_terminal();
    let term = Terminal::new(color(stdout_tty), std::io::stderr().is_terminal());
    Ok(Setup { llm, host, cfg, term })
}

/// Asks on the terminal before each shell command; without a terminal, refuses (use `--yes`).
/// A base URL from a `.env` file that would receive a key from elsewhere: ask once on the terminal
/// (`--yes` does not cover it: it is about where the key goes, not what the agent does).
async fn ask_about_foreign_endpoint(env: &Env, overrides: &Overrides, input: &Input) {
    let Some(f) = config::foreign_endpoint(env, overrides) else { return };
    if crate::trust::is_trusted(&f.file, &f.url) {
        return;
    }
    let warning = format!("{} in {} sends your API key ({}) to {}.", f.var, f.file.display(), f.key_var, f.url);
    eprint!("{}\nAllow this endpoint? [y/N]: ", bold(&warning));
    let _ = std::io::stderr().flush();
    let answer = input.next_line().await.unwrap_or_default();
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        if let Err(e) = crate::trust::remember(&f.file, &f.url) {
            eprintln!("stepwise: could not remember the approval: {e}");
        }
    }
}

/// Colour only on a terminal, and never when `NO_COLOR` is set (no-color.org).
pub(crate) fn color(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Bold on a terminal that wants colour.
fn bold(text: &str) -> String {
    if color(std::io::stderr().is_terminal()) {
        format!("\x1b[1m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

fn terminal_approver(interactive: bool, input: Input) -> crate::host::disk::Approver {
    let always = Arc::new(AtomicBool::new(false));
    Arc::new(move |ask: &Ask<'_>| {
        let (refused, question) = match ask {
            Ask::Command(command) => {
                (format!("shell command refused: {command}"), format!("{} {command}", bold("Run shell command?")))
            }
            Ask::Write { path, why } => {
                (format!("write to {path} refused ({why})"), format!("{} ({why})", bold(&format!("Write {path}?"))))
            }
        };
        let (always, input) = (always.clone(), input.clone());
        Box::pin(async move {
            if always.load(Ordering::Relaxed) {
                return Approval::Allow;
            }
            if !interactive {
                eprintln!("stepwise: {refused} (no terminal to ask; pass --yes to allow)");
                return Approval::Deny;
            }
            {
                // Written and released before waiting: nothing else that prints may be held up.
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\n{question}\n[y]es / [a]lways / [N]o: ");
                let _ = err.flush();
            }
            match input.next_line().await.unwrap_or_default().trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Approval::Allow,
                "a" | "always" => {
                    always.store(true, Ordering::Relaxed);
                    Approval::Allow
                }
                _ => Approval::Deny,
            }
        })
    })
}

/// Cancels `token` on Ctrl-C until the returned guard is dropped.
fn cancel_on_ctrl_c(token: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            token.cancel();
        }
    })
}

fn exit_code(reason: FinishReason) -> i32 {
    match reason {
        FinishReason::EndTurn => 0,
        FinishReason::Cancelled => 130,
        _ => 1,
    }
}

async fn run_once(opts: Options) -> i32 {
    let task = opts.rest.join(" ");
    if task.trim().is_empty() {
        eprintln!("stepwise run: no task given\n\n{USAGE}");
        return 2;
    }
    let input = Input::stdin();
    let s = match setup(&opts, &input).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("stepwise: {e}");
            return 1;
        }
    };
    let mut session = Session::default();
    let token = CancellationToken::new();
    let watcher = cancel_on_ctrl_c(token.clone());
    let outcome = agent::run(&mut session, &task, &s.llm, &s.host, &s.term, &s.cfg, &token).await;
    watcher.abort();
    exit_code(outcome.reason)
}

async fn chat(opts: Options) -> i32 {
    let input = Input::stdin();
    let s = match setup(&opts, &input).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("stepwise: {e}");
            return 1;
        }
    };
    let tty = std::io::stdin().is_terminal();
    let prompt = if color(std::io::stdout().is_terminal()) { "\x1b[36mstepwise >> \x1b[0m" } else { "stepwise >> " };
    let mut session = Session::default();
    loop {
        print!("{prompt}");
        let _ = std::io::stdout().flush();
        let line = tokio::select! {
            l = input.next_line() => l,
            _ = tokio::signal::ctrl_c() => { println!(); return 130; }
        };
        let Some(line) = line else {
            if tty {
                println!();
            }
            return 0;
        };
        let task = line.trim();
        if matches!(task, "q" | "exit") {
            return 0;
        }
        if task.is_empty() {
            continue;
        }
        if task == "/compact" {
            let outcome = agent::compact(&mut session, &s.llm, &s.term).await;
            println!("{}", outcome.final_text);
            continue;
        }
        let token = CancellationToken::new();
        let watcher = cancel_on_ctrl_c(token.clone());
        let outcome = agent::run(&mut session, task, &s.llm, &s.host, &s.term, &s.cfg, &token).await;
        watcher.abort();
        if outcome.reason == FinishReason::Cancelled {
            eprintln!("(cancelled: the conversation and plan are kept)");
        }
        println!();
    }
}
