//! The terminal's input: one thread reads stdin lines (stdin blocks, so it cannot live on the async
//! workers), and the chat prompt and approval questions take lines from it in order.
//!
//! Waiting for a line can be abandoned (Ctrl-C, a cancelled task) without losing one: the line then goes
//! to whoever asks next, so a line typed after a cancelled approval question is the next task, not an
//! answer to a question nobody asks any more. The reading thread is a plain thread, so an unanswered
//! prompt never holds up the process's exit.

use std::io::BufRead;
use std::sync::Arc;

use tokio::sync::{mpsc, Mutex};

#[derive(Clone)]
pub struct Input {
    lines: Arc<Mutex<mpsc::UnboundedReceiver<String>>>,
}

impl Input {
    /// Starts reading stdin.
    pub fn stdin() -> Input {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { return };
                if tx.send(line.trim_end_matches('\r').to_string()).is_err() {
                    return;
                }
            }
        });
        Input { lines: Arc::new(Mutex::new(rx)) }
    }

    /// The next line; `None` at the end of input. Cancel-safe: dropping the future loses no line.
    pub async fn next_line(&self) -> Option<String> {
        self.lines.lock().await.recv().await
    }
}
