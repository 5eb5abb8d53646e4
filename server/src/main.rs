//! The `stepwise` binary: one engine, three adapters (command line, LSP sidecar, ACP agent).

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use stepwise::cli;

#[derive(Parser)]
#[command(name = "stepwise", version, about = "A coding agent that keeps its plan in sight", after_help = cli::MODEL_HELP)]
struct Stepwise {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One task, headless, on disk; exit 0 when the model ends its turn, 1 on error, 130 on Ctrl-C
    #[command(after_help = cli::MODEL_HELP)]
    Run {
        #[command(flatten)]
        opts: Common,
        /// Plan first: the model plans read-only, the plan is shown and waits for your yes
        #[arg(long)]
        plan_first: bool,
        /// Work in a worktree of its own (a git worktree on the branch stepwise/<session>, or a copy): the
        /// folder is left as it is; its path and branch are printed last
        #[arg(long)]
        worktree: bool,
        /// An image the task comes with (PNG, JPEG, GIF or WebP); may be given several times
        #[arg(long = "image", value_name = "FILE")]
        images: Vec<PathBuf>,
        /// The task (several words are joined)
        #[arg(required = true, num_args = 1.., value_name = "TASK")]
        task: Vec<String>,
    },
    /// The REPL: one task per line, conversation and plan kept; /compact, q or exit
    #[command(after_help = cli::MODEL_HELP)]
    Chat {
        #[command(flatten)]
        opts: Common,
    },
    /// A complete session against a scripted model, on a scratch copy of a small project
    Demo,
    /// The LSP sidecar on stdin/stdout (logs on stderr)
    Lsp {
        /// Accepted for clients that add it; stdio is the only transport
        #[arg(long)]
        stdio: bool,
    },
    /// The Agent Client Protocol (v1) agent on stdin/stdout, for Zed and other ACP clients (logs on stderr)
    #[command(after_help = cli::MODEL_HELP)]
    Acp,
    /// The configuration stepwise sees (each value and where it came from, never the key) and what is missing
    Doctor {
        /// The folder to check (its .env, its saved session)
        #[arg(short, long, value_name = "DIR", default_value = ".")]
        workspace: PathBuf,
        /// An editor's settings as JSON (its initializationOptions), which win over the environment
        #[arg(long, value_name = "JSON")]
        settings: Option<String>,
        /// One JSON object, for editors
        #[arg(long)]
        json: bool,
        /// Do not start the language servers to see whether they start (an editor whose own servers answer)
        #[arg(long)]
        no_language_servers: bool,
    },
}

#[derive(Args)]
struct Common {
    /// The folder the agent works in
    #[arg(short, long, value_name = "DIR", default_value = ".")]
    workspace: PathBuf,
    /// Approve shell commands and protected writes without asking
    #[arg(short, long)]
    yes: bool,
    /// Save every model response of the session to FILE (JSON lines)
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Play a recorded session back instead of calling a model
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
}

impl From<Common> for cli::Options {
    fn from(c: Common) -> cli::Options {
        let (workspace, yes, record, replay) = (c.workspace, c.yes, c.record, c.replay);
        cli::Options { workspace, yes, record, replay, plan_first: false, worktree: false, images: Vec::new() }
    }
}

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `stepwise --stdio`: what clients that only append `--stdio` to the command start.
    if args.get(1).is_some_and(|a| a == "--stdio") {
        args.insert(1, "lsp".into());
    }
    // Usage errors exit 2, `--help` and `--version` exit 0 (clap's own codes).
    let command = Stepwise::parse_from(args).command;
    let code = match command {
        Command::Run { opts, plan_first, worktree, images, task } => {
            init_logging("warn");
            // One run, one task at a time: on one thread, a round's steps (the answer read, the tool, the
            // next request written) never wait for another thread to wake up.
            let opts = cli::Options { plan_first, worktree, images, ..opts.into() };
            one_thread_runtime().block_on(cli::run_once(opts, task.join(" ")))
        }
        Command::Chat { opts } => {
            init_logging("warn");
            runtime().block_on(cli::chat(opts.into()))
        }
        Command::Demo => {
            init_logging("warn");
            runtime().block_on(cli::demo())
        }
        Command::Doctor { workspace, settings, json, no_language_servers } => {
            cli::doctor::run(&workspace, settings.as_deref(), json, no_language_servers)
        }
        Command::Lsp { .. } => {
            init_logging("info");
            runtime().block_on(stepwise::lsp::serve_stdio());
            0
        }
        Command::Acp => {
            init_logging("info");
            runtime().block_on(stepwise::acp::serve_stdio())
        }
    };
    std::process::exit(code);
}

fn runtime() -> tokio::runtime::Runtime {
    let mut two = tokio::runtime::Builder::new_multi_thread();
    build(two.worker_threads(2))
}

fn one_thread_runtime() -> tokio::runtime::Runtime {
    build(&mut tokio::runtime::Builder::new_current_thread())
}

fn build(builder: &mut tokio::runtime::Builder) -> tokio::runtime::Runtime {
    match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("stepwise: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    }
}

/// Logs go to stderr only: stdout belongs to the plan (CLI) or to protocol messages (sidecar).
fn init_logging(default_level: &str) {
    let level = std::env::var("STEPWISE_LOG").unwrap_or_else(|_| default_level.to_string());
    let level = level.parse::<tracing::Level>().unwrap_or(tracing::Level::WARN);
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
        .with_target(false)
        .try_init();
}
