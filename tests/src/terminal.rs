//! `stepwise` started as a person at a terminal starts it: the real binary, nothing of the test's
//! environment but `PATH` (and the scripted model, when given), on a pseudo-terminal ([`Pty`]).

use std::ffi::OsStr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::lsp_client::stepwise_binary;
use crate::mock::MockModel;
use crate::pty::Pty;
use crate::TempDir;

/// A `stepwise` command line: say its environment and arguments, then start it on a terminal
/// ([`Stepwise::on_pty`]) or without one ([`Stepwise::command`]).
pub struct Stepwise {
    cmd: Command,
    stdout_on_pty: bool,
}

impl Stepwise {
    /// `stepwise` with an empty environment but `PATH`: the test says where the model is.
    pub fn bare() -> Stepwise {
        let mut cmd = Command::new(stepwise_binary(false));
        cmd.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
        Stepwise { cmd, stdout_on_pty: true }
    }

    /// `stepwise` talking to `mock` (Anthropic's wire, key `k`, model `m`).
    pub fn with_model(mock: &MockModel) -> Stepwise {
        Stepwise::bare().env("ANTHROPIC_BASE_URL", mock.url()).env("ANTHROPIC_API_KEY", "k").env("MODEL_ID", "m")
    }

    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Stepwise {
        self.cmd.env(key, value);
        self
    }

    pub fn envs(mut self, vars: &[(&str, &str)]) -> Stepwise {
        self.cmd.envs(vars.iter().copied());
        self
    }

    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Stepwise {
        self.cmd.args(args);
        self
    }

    /// `--workspace WS`.
    pub fn workspace(self, ws: &TempDir) -> Stepwise {
        self.arg("--workspace").arg(ws.path())
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Stepwise {
        self.cmd.arg(arg);
        self
    }

    /// Its stdout goes nowhere: the terminal shows only what it writes to stderr (its questions).
    pub fn stdout_off_the_terminal(mut self) -> Stepwise {
        self.stdout_on_pty = false;
        self
    }

    /// Starts it on a new pseudo-terminal whose waits last `timeout`; the terminal and the program.
    pub fn on_pty(mut self, timeout: Duration) -> (Pty, Child) {
        let (pty, end) = Pty::open(timeout);
        let end = || Stdio::from(end.try_clone().expect("a copy of the pty's program end"));
        let stdout = if self.stdout_on_pty { end() } else { Stdio::null() };
        let child = self.cmd.stdin(end()).stdout(stdout).stderr(end()).spawn().expect("cannot start stepwise");
        // The program's end is dropped here: the terminal sees end of file when the program exits.
        (pty, child)
    }

    /// The command, to run without a terminal.
    pub fn command(self) -> Command {
        self.cmd
    }
}

/// Its exit code (-1 for a signal), waited for on a thread of its own; panics after `timeout`.
pub fn exit_code(mut child: Child, timeout: Duration) -> i32 {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait().map(|s| s.code().unwrap_or(-1))));
    rx.recv_timeout(timeout).expect("stepwise did not exit").expect("waiting for stepwise")
}
