//! The terminal's input: one thread reads stdin lines (stdin blocks, so it cannot live on the async
//! workers), and the chat prompt and approval questions take lines from it in order.
//!
//! Waiting for a line can be abandoned (Ctrl-C, a cancelled task) without losing one: the line then goes
//! to whoever asks next, so a line typed after a cancelled approval question is the next task, not an
//! answer to a question nobody asks any more. The reading thread is a plain thread, so an unanswered
//! prompt never holds up the process's exit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, Mutex};

#[derive(Clone)]
pub struct Input {
    lines: Arc<Mutex<mpsc::UnboundedReceiver<String>>>,
    /// While set, the thread leaves the terminal alone (an editor started for `/plan edit` reads it).
    paused: Arc<AtomicBool>,
}

/// Input resumes when this goes.
pub struct Paused(Arc<AtomicBool>);

impl Drop for Paused {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Whether stdin has something to read within `ms` milliseconds.
fn readable(ms: i32) -> bool {
    let mut fd = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, for the duration of the call.
    unsafe { libc::poll(&mut fd, 1, ms) > 0 }
}

impl Input {
    /// Starts reading stdin.
    pub fn stdin() -> Input {
        let (tx, rx) = mpsc::unbounded_channel();
        let paused = Arc::new(AtomicBool::new(false));
        let pause = paused.clone();
        std::thread::spawn(move || {
            // Bytes are read here, not through a buffered reader: lines it had buffered would wait unseen
            // while `poll` says the descriptor is empty.
            let mut pending: Vec<u8> = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                if let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let text = String::from_utf8_lossy(&line[..end]).trim_end_matches('\r').to_string();
                    if tx.send(text).is_err() {
                        return;
                    }
                    continue;
                }
                // Polled rather than read blindly, so a paused reader takes nothing from the terminal.
                if pause.load(Ordering::SeqCst) {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                }
                if !readable(100) {
                    continue;
                }
                // SAFETY: reads into a buffer we own, at most its length.
                let n = unsafe { libc::read(0, chunk.as_mut_ptr().cast(), chunk.len()) };
                if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                let Ok(got @ 1..) = usize::try_from(n) else {
                    // End of input (or a read error): a last line without its newline still counts.
                    if !pending.is_empty() {
                        let _ = tx.send(String::from_utf8_lossy(&pending).trim_end_matches('\r').to_string());
                    }
                    return;
                };
                pending.extend_from_slice(&chunk[..got]);
            }
        });
        Input { lines: Arc::new(Mutex::new(rx)), paused }
    }

    /// Leaves the terminal to another program until the guard goes.
    pub fn pause(&self) -> Paused {
        self.paused.store(true, Ordering::SeqCst);
        Paused(self.paused.clone())
    }

    /// The next line; `None` at the end of input. Cancel-safe: dropping the future loses no line.
    pub async fn next_line(&self) -> Option<String> {
        self.lines.lock().await.recv().await
    }
}
