//! The test client's terminals: `terminal/create` really runs the command (its own process group,
//! output kept up to `outputByteLimit`, the newest bytes), and `terminal/wait_for_exit`, `terminal/output`,
//! `terminal/kill` and `terminal/release` act on it, as an editor's terminal would. `wait_for_exit` is
//! answered when the command ends, from a task, so the client keeps reading (a kill may come meanwhile).

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, watch};

use crate::acp_client::{Answer, Out};

/// How a command ended: its exit code, or the signal that killed it.
type Exit = Option<(Option<i32>, Option<String>)>;

struct Term {
    pgid: i32,
    output: Arc<Mutex<Kept>>,
    exit: watch::Receiver<Exit>,
}

#[derive(Default)]
struct Kept {
    bytes: Vec<u8>,
    limit: usize,
    truncated: bool,
}

impl Kept {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > self.limit {
            // The newest bytes, from a character boundary (as the protocol asks of clients).
            let mut start = self.bytes.len() - self.limit;
            while start < self.bytes.len() && (self.bytes[start] & 0xC0) == 0x80 {
                start += 1;
            }
            self.bytes.drain(..start);
            self.truncated = true;
        }
    }
}

#[derive(Default)]
pub struct Terminals {
    next: u64,
    live: HashMap<String, Term>,
    /// Refuse `terminal/create`, as a client does whose user said no (acpx's wording).
    pub refuse: bool,
}

impl Terminals {
    /// Answers one `terminal/*` request: `Some(answer)` now, or `None` when a task answers later.
    pub fn handle(
        &mut self,
        id: &Value,
        method: &str,
        params: &Value,
        out: &mpsc::UnboundedSender<Out>,
    ) -> Option<Answer> {
        let terminal = params["terminalId"].as_str().unwrap_or("").to_string();
        if method == "terminal/create" && self.refuse {
            return Some(Err((-32603, "Permission denied for terminal/create".into())));
        }
        if method == "terminal/create" {
            return Some(self.create(params));
        }
        let Some(term) = self.live.get(&terminal) else {
            return Some(Err((-32002, format!("unknown terminal {terminal}"))));
        };
        match method {
            "terminal/output" => {
                let kept = term.output.lock().unwrap();
                let mut answer = json!({"output": String::from_utf8_lossy(&kept.bytes), "truncated": kept.truncated});
                if let Some(exit) = term.exit.borrow().clone() {
                    answer["exitStatus"] = exit_status(&exit);
                }
                Some(Ok(answer))
            }
            "terminal/wait_for_exit" => {
                let (mut exit, out, id) = (term.exit.clone(), out.clone(), id.clone());
                tokio::spawn(async move {
                    let Ok(done) = exit.wait_for(Option::is_some).await.map(|e| e.clone()) else { return };
                    let Some(exit) = done else { return };
                    let msg = json!({"jsonrpc": "2.0", "id": id, "result": exit_status(&exit)});
                    let _ = out.send(Out::Line(msg.to_string()));
                });
                None
            }
            "terminal/kill" => {
                kill(term.pgid);
                Some(Ok(json!({})))
            }
            "terminal/release" => {
                if let Some(term) = self.live.remove(&terminal) {
                    if term.exit.borrow().is_none() {
                        kill(term.pgid);
                    }
                }
                Some(Ok(json!({})))
            }
            other => Some(Err((-32601, format!("test client does not handle {other}")))),
        }
    }

    fn create(&mut self, params: &Value) -> Answer {
        let Some(command) = params["command"].as_str() else { return Err((-32602, "no command".into())) };
        let args: Vec<&str> = params["args"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(&args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        if let Some(cwd) = params["cwd"].as_str() {
            cmd.current_dir(cwd);
        }
        for var in params["env"].as_array().into_iter().flatten() {
            cmd.env(var["name"].as_str().unwrap_or(""), var["value"].as_str().unwrap_or(""));
        }
        let mut child = cmd.spawn().map_err(|e| (-32603, format!("cannot run {command}: {e}")))?;
        let limit = params["outputByteLimit"].as_u64().map_or(usize::MAX, |l| l as usize);
        let output = Arc::new(Mutex::new(Kept { limit, ..Kept::default() }));
        let (tx, rx) = watch::channel(None);
        // The child leads its own process group (`process_group(0)`), so its pid is the group's id.
        let pgid = child.id().map_or(0, |p| p as i32);
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let kept = output.clone();
        tokio::spawn(async move {
            tokio::join!(drain(stdout, &kept), drain(stderr, &kept));
            let exit = match child.wait().await {
                Ok(s) => (s.code(), s.signal().map(signal_name)),
                Err(_) => (None, None),
            };
            let _ = tx.send(Some(exit));
        });
        self.next += 1;
        let id = format!("term-{}", self.next);
        self.live.insert(id.clone(), Term { pgid, output, exit: rx });
        Ok(json!({"terminalId": id}))
    }
}

async fn drain<R: AsyncRead + Unpin>(pipe: Option<R>, kept: &Mutex<Kept>) {
    let Some(mut pipe) = pipe else { return };
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.lock().unwrap().push(&buf[..n]);
    }
}

fn exit_status((code, signal): &(Option<i32>, Option<String>)) -> Value {
    json!({"exitCode": code, "signal": signal})
}

fn signal_name(n: i32) -> String {
    match n {
        9 => "SIGKILL".into(),
        15 => "SIGTERM".into(),
        other => format!("SIG{other}"),
    }
}

fn kill(pgid: i32) {
    if pgid > 0 {
        // SAFETY: a plain syscall on the process group this client created.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}
