//! The command line: `run`, `chat`, `demo` and `lsp`.

mod asker;
mod checkpoints;
mod demo;
pub mod doctor;
mod doctor_loads;
mod input;
mod jobs;
mod plan_edit;
mod plan_first;
mod render;
mod review;
mod slash;
mod worktree;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::{self, FinishReason, RunOutcome};
use crate::host::Host;
use crate::host::{Approval, Ask, DiskHost};
use crate::llm::{Image, Llm};
use crate::workspace::{Prepared, RunRequest, Workspace};
use input::Input;

pub use render::Terminal;

/// The model's configuration, shown under `--help`.
pub const MODEL_HELP: &str = "\
The model is configured by the environment or a .env file (in the workspace or the current directory):
STEPWISE_PROVIDER (anthropic | openai), MODEL_ID, ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL,
OPENAI_API_KEY / OPENAI_BASE_URL. See docs/configuration.md for every setting.";

/// What `run` and `chat` take from the command line.
pub struct Options {
    pub workspace: PathBuf,
    pub yes: bool,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    /// `run --plan-first`: plan, show the plan, ask before acting.
    pub plan_first: bool,
    /// `run --worktree`: the task in a worktree of its own (`worktree.rs`).
    pub worktree: bool,
    /// `run --image FILE`: images the task comes with.
    pub images: Vec<PathBuf>,
}

/// `stepwise demo`.
pub async fn demo() -> i32 {
    demo::run().await
}

pub(crate) struct Setup {
    llm: Llm,
    host: DiskHost,
    cfg: agent::AgentConfig,
    term: Terminal,
}

/// The workspace (checkpoints kept for this process when asked for: chat has `/rewind`), and what its
/// runs need, prepared once.
async fn setup(opts: &Options, input: &Input, checkpoints: bool) -> Result<(Arc<Workspace>, Setup), String> {
    setup_in(opts, input, checkpoints, None).await
}

/// `setup` in a worktree of its own: the session saved where an editor finds it, and what git writes for
/// a commit in the worktree writable in its sandbox.
async fn setup_in(
    opts: &Options,
    input: &Input,
    checkpoints: bool,
    made: Option<&worktree::Made>,
) -> Result<(Arc<Workspace>, Setup), String> {
    let dir = &opts.workspace;
    if !dir.is_dir() {
        return Err(format!("workspace {} is not a folder", dir.display()));
    }
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let approver = if opts.yes { None } else { Some(terminal_approver(interactive, input.clone())) };
    let host = DiskHost::new(dir, approver).map_err(|e| format!("workspace {}: {e}", dir.display()))?;
    // Begun before the workspace opens: the skills and instruction files are read while it does and the
    // run is prepared. (Begun sooner, on a thread of its own before the runtime, it cost more: measured.)
    let ahead = crate::agent::Ahead::start(host.root().to_path_buf());
    let state_file = made.and_then(|m| m.state_file.clone());
    let (ws, _) = Workspace::open(host.root().to_path_buf(), state_file, checkpoints);
    if let Some(m) = made {
        ws.allow_writes(m.tree.git_dirs.clone());
    }
    let asker = asker::TerminalAsker { interactive, input: input.clone() };
    let req = RunRequest {
        replay: opts.replay.as_deref(),
        record: opts.record.as_deref(),
        ahead: Some(ahead),
        ..Default::default()
    };
    let Prepared { cfg, llm } = ws.prepare_run(req, &asker).await?;
    Ok((ws, Setup { llm, host, cfg, term: Terminal::new() }))
}

/// Bold (anstream drops it where colour is not wanted).
fn bold(text: &str) -> String {
    format!("\x1b[1m{text}\x1b[0m")
}

/// Asks on the terminal before each shell command; without a terminal, refuses (use `--yes`).
fn terminal_approver(interactive: bool, input: Input) -> crate::host::disk::Approver {
    Arc::new(move |ask: &Ask<'_>| {
        let (refused, question) = match ask {
            Ask::Command(command) => {
                (format!("shell command refused: {command}"), format!("{} {command}", bold("Run shell command?")))
            }
            Ask::Unsandboxed { command, stopped } => (
                format!("running outside the sandbox refused: {command}"),
                format!(
                    "{}\n  {stopped}\n{} {command}",
                    bold("The sandbox stopped this command:"),
                    bold("Run it outside the sandbox?")
                ),
            ),
            Ask::Write { path, why } => {
                (format!("write to {path} refused ({why})"), format!("{} ({why})", bold(&format!("Write {path}?"))))
            }
            Ask::Tool { server, tool } => {
                (format!("MCP tool {tool} of {server} refused"), bold(&format!("Use the MCP tool {tool} of {server}?")))
            }
        };
        let input = input.clone();
        Box::pin(async move {
            if !interactive {
                eprintln!("stepwise: {refused} (no terminal to ask; pass --yes to allow)");
                return Approval::Deny;
            }
            {
                // Written and released before waiting: nothing else that prints may be held up.
                let mut err = anstream::stderr().lock();
                let _ = write!(err, "\n{question}\n[y]es / [a]lways / [N]o: ");
                let _ = err.flush();
            }
            match input.next_line().await.unwrap_or_default().trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Approval::Allow,
                "a" | "always" => Approval::AllowForSession,
                _ => Approval::Deny,
            }
        })
    })
}

/// Cancels `token` on Ctrl-C until the returned guard is dropped. The handler is registered before this
/// returns, so a Ctrl-C right after (during the first model request) cancels rather than kills.
fn cancel_on_ctrl_c(token: CancellationToken) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::interrupt()) {
        Ok(mut sigint) => tokio::spawn(async move {
            if sigint.recv().await.is_some() {
                token.cancel();
            }
        }),
        Err(e) => {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            tokio::spawn(async {})
        }
    }
}

fn exit_code(reason: FinishReason) -> i32 {
    match reason {
        FinishReason::EndTurn | FinishReason::PlanReady => 0,
        FinishReason::Cancelled => 130,
        _ => 1,
    }
}

/// One task in the workspace (with the images it comes with), cancelled by Ctrl-C.
async fn run_task(ws: &Arc<Workspace>, s: &Setup, task: &str, images: Vec<Image>) -> RunOutcome {
    let mut ticket = match ws.begin() {
        Ok(t) => t,
        // The command line runs one task at a time; a slot still held is a bug, said as an error.
        Err(e) => return agent::finish(FinishReason::Error, String::new(), Some(e), 0, Default::default()),
    };
    ticket.images = images;
    run_ticket(ws, s, &ticket, task, &s.cfg).await
}

/// A run on a slot already taken, cancelled by Ctrl-C.
async fn run_ticket(
    ws: &Arc<Workspace>,
    s: &Setup,
    ticket: &crate::workspace::RunTicket,
    prompt: &str,
    cfg: &agent::AgentConfig,
) -> RunOutcome {
    let watcher = cancel_on_ctrl_c(ticket.cancel.clone());
    let outcome = ws.prompt(ticket, prompt, &s.llm, &s.host, &s.term, cfg).await;
    watcher.abort();
    outcome
}

/// `stepwise run TASK`; returns the exit code.
pub async fn run_once(opts: Options, task: String) -> i32 {
    if task.trim().is_empty() {
        eprintln!("stepwise run: the task is empty");
        return 2;
    }
    // Read and checked before anything starts: an image that cannot be sent is a usage error.
    let images = match opts.images.iter().map(|p| crate::images::read_user_file(p).map(|c| c.image)).collect() {
        Ok(images) => images,
        Err(e) => {
            eprintln!("stepwise run: {e}");
            return 2;
        }
    };
    let input = Input::stdin();
    let mut opts = opts;
    let made = match opts.worktree {
        false => None,
        true => match worktree::make(&opts.workspace, &task).await {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("stepwise: {e}");
                return 1;
            }
        },
    };
    if let Some(m) = &made {
        opts.workspace = m.tree.path.clone();
    }
    let (ws, s) = match setup_in(&opts, &input, false, made.as_ref()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("stepwise: {e}");
            return 1;
        }
    };
    let watcher = jobs::watch(&ws);
    let reason = if opts.plan_first || s.cfg.mode == crate::plan::Mode::Plan {
        plan_first::run(&ws, &s, &task, images, &input).await.reason
    } else {
        run_task(&ws, &s, &task, images).await.reason
    };
    watcher.abort();
    jobs::end_all(&ws);
    ws.flush();
    if let Some(m) = &made {
        println!("{}", worktree::said(&m.tree));
    }
    exit_code(reason)
}

/// `stepwise chat`; returns the exit code.
pub async fn chat(opts: Options) -> i32 {
    let input = Input::stdin();
    let (ws, mut s) = match setup(&opts, &input, true).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("stepwise: {e}");
            return 1;
        }
    };
    let _watcher = AbortOnDrop(jobs::watch(&ws));
    let _end = EndJobs(&ws);
    let tty = std::io::stdin().is_terminal();
    let prompt = "\x1b[36mstepwise >> \x1b[0m";
    loop {
        // Listening before the prompt shows, so a Ctrl-C right after it is not missed; made anew each
        // time, so one that cancelled the task before does not count here.
        let mut sigint = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("stepwise: cannot listen for Ctrl-C: {e}");
                return 1;
            }
        };
        anstream::print!("{prompt}");
        let _ = std::io::stdout().flush();
        let line = tokio::select! {
            l = input.next_line() => l,
            _ = sigint.recv() => { println!(); return 130; }
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
        if let Some(command) = task.strip_prefix('/') {
            if slash::run(command, &ws, &mut s, &input).await {
                continue;
            }
        }
        let outcome = run_task(&ws, &s, task, Vec::new()).await;
        if outcome.reason == FinishReason::Cancelled {
            eprintln!("(cancelled: the conversation and plan are kept)");
        }
        if outcome.reason == FinishReason::PlanReady {
            slash::plan_waits(&ws);
        }
        println!();
    }
}

/// Chat's background watcher, stopped however chat returns.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Chat's tasks, ended however chat returns.
struct EndJobs<'a>(&'a Arc<Workspace>);

impl Drop for EndJobs<'_> {
    fn drop(&mut self) {
        jobs::end_all(self.0);
    }
}
