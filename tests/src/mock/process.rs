//! The mock model in a process of its own (`mock-model`), for the benchmarks: their own process's time and
//! memory are then the engine's alone. The binary's path is the caller's `env!("CARGO_BIN_EXE_mock-model")`
//! (Cargo gives it to benches and tests, not to this library).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `mock-model`, killed when dropped.
pub struct MockProcess {
    child: Child,
    /// Where it listens (`http://127.0.0.1:PORT`).
    pub url: String,
}

impl MockProcess {
    /// Starts `bin` with `args` and waits for the line saying where it listens.
    pub fn start<I, S>(bin: &Path, args: I) -> MockProcess
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot start mock-model");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("mock-model's stdout")).read_line(&mut line).unwrap();
        let url =
            line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("mock-model said: {line:?}")).to_string();
        MockProcess { child, url }
    }

    /// Ends it by closing its stdin (it was started with `--exit-on-stdin-eof`), so that what it writes at
    /// its end (`--timing`) is written, and waits for it.
    pub fn finish(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for MockProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
