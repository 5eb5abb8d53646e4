//! `mock-model --script FILE.json [--routes FILE.json] [--port N] [--record FILE.jsonl] [--exit-on-stdin-eof] [--quiet] [--simulate-usage] [--timing FILE]`
//!
//! Serves the scripted mock LLM on 127.0.0.1, prints `listening http://127.0.0.1:PORT` once bound,
//! and runs until killed (or until stdin reaches EOF with `--exit-on-stdin-eof`).
//!
//! `--routes` gives conversations scripts of their own (`MockModel::route`), for several at once (sessions
//! side by side): `[{"key": "alpha", "steps": [...]}, ...]`, a conversation whose first user message holds
//! `key` answered from its `steps` in order, the first key that matches winning; the rest take `--script`'s.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use stepwise_tests::mock::{MockModel, MockOptions, Script};
use tokio::io::AsyncReadExt;

const USAGE: &str =
    "usage: mock-model --script FILE.json [--routes FILE.json] [--port N] [--record FILE.jsonl] [--exit-on-stdin-eof] [--quiet] [--simulate-usage] [--timing FILE]";

struct Args {
    script: PathBuf,
    routes: Option<PathBuf>,
    port: u16,
    record: Option<PathBuf>,
    exit_on_stdin_eof: bool,
    quiet: bool,
    simulate_usage: bool,
    timing: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut script = None;
    let mut routes = None;
    let mut port = 0;
    let mut record = None;
    let mut exit_on_stdin_eof = false;
    let mut quiet = false;
    let mut simulate_usage = false;
    let mut timing = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| inline.clone().or_else(|| args.next()).ok_or(format!("{what} needs a value"));
        match name.as_str() {
            "--script" => script = Some(PathBuf::from(value("--script")?)),
            "--routes" => routes = Some(PathBuf::from(value("--routes")?)),
            "--port" => port = value("--port")?.parse().map_err(|_| "--port needs a number".to_owned())?,
            "--record" => record = Some(PathBuf::from(value("--record")?)),
            "--exit-on-stdin-eof" => exit_on_stdin_eof = true,
            "--quiet" | "-q" => quiet = true,
            "--simulate-usage" => simulate_usage = true,
            "--timing" => timing = Some(PathBuf::from(value("--timing")?)),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    let script = script.ok_or("--script is required")?;
    Ok(Args { script, routes, port, record, exit_on_stdin_eof, quiet, simulate_usage, timing })
}

/// One conversation's own script (`--routes`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Route {
    key: String,
    steps: Script,
}

fn load_routes(path: &std::path::Path) -> Result<Vec<Route>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let routes: Vec<Route> = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    match routes.iter().find(|r| r.key.is_empty()) {
        // An empty key is in every conversation: it would take them all.
        Some(_) => Err(format!("{}: a route's key is empty", path.display())),
        None => Ok(routes),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mock-model: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let script = match Script::load(&args.script) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mock-model: cannot load script: {e}");
            return ExitCode::from(2);
        }
    };
    let routes = match args.routes.as_deref().map(load_routes).transpose() {
        Ok(r) => r.unwrap_or_default(),
        Err(e) => {
            eprintln!("mock-model: cannot load routes: {e}");
            return ExitCode::from(2);
        }
    };
    let options = MockOptions {
        port: args.port,
        record: args.record,
        log: !args.quiet,
        simulate_usage: args.simulate_usage,
        timing: args.timing,
    };
    let mock = match MockModel::start_with(script, options).await {
        Ok(m) => m,
        Err(e) => {
            eprintln!("mock-model: cannot start: {e}");
            return ExitCode::from(1);
        }
    };
    for route in routes {
        mock.route(route.key, route.steps.0);
    }
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening {}", mock.url());
        let _ = out.flush();
    }

    let stdin_eof = async {
        if args.exit_on_stdin_eof {
            let mut stdin = tokio::io::stdin();
            let mut buf = [0u8; 1024];
            while let Ok(n) = stdin.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = stdin_eof => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    mock.shutdown();
    // Exit at once: a pending blocking stdin read would otherwise delay runtime shutdown.
    std::process::exit(0)
}
