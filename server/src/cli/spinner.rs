//! The terminal's spinner while the model is asked: a turning frame and "thinking…", dimmed, on stderr.
//!
//! Its own thread turns it every 90 ms, so it keeps turning while the runtime is busy; it is cleared
//! before anything else prints. A few lines of our own where indicatif (with `console` and
//! `unicode-width`) was 46 KB of the binary (issue 39).

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::locks;

/// indicatif's default spinner, which this replaces.
const FRAMES: [&str; 8] = ["⠁", "⠂", "⠄", "⡀", "⢀", "⠠", "⠐", "⠈"];
const TICK: Duration = Duration::from_millis(90);
/// Back to the line's start, the line erased.
const CLEAR: &str = "\r\x1b[2K";

struct State {
    /// Where it is drawn (stderr).
    out: Box<dyn Write + Send>,
    stop: bool,
    /// Off the screen for a while (`hide`, `show`).
    hidden: bool,
    /// Drawn and not cleared since.
    shown: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// A spinner on the screen until dropped.
pub struct Spinner {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A spinner's handle to take it off the screen for a while.
pub struct Hidden(Arc<Shared>);

impl Spinner {
    /// Starts turning on stderr, `message` beside it (dimmed unless `NO_COLOR` is set).
    pub fn start(message: &str) -> Spinner {
        Spinner::start_on(message, Box::new(std::io::stderr()))
    }

    fn start_on(message: &str, out: Box<dyn Write + Send>) -> Spinner {
        let plain = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let (dim, reset) = if plain { ("", "") } else { ("\x1b[2m", "\x1b[0m") };
        let message = message.to_string();
        let state = State { out, stop: false, hidden: false, shown: false };
        let shared = Arc::new(Shared { state: Mutex::new(state), wake: Condvar::new() });
        let turning = shared.clone();
        let thread = std::thread::Builder::new()
            .name("spinner".into())
            .spawn(move || {
                let mut frame = 0;
                let mut state = locks::lock(&turning.state);
                while !state.stop {
                    if !state.hidden {
                        let f = FRAMES[frame % FRAMES.len()];
                        let _ = write!(state.out, "{CLEAR}{dim}{f} {message}{reset}");
                        let _ = state.out.flush();
                        state.shown = true;
                        frame += 1;
                    }
                    state = match turning.wake.wait_timeout(state, TICK) {
                        Ok((s, _)) => s,
                        Err(poisoned) => poisoned.into_inner().0,
                    };
                }
                if state.shown {
                    let _ = write!(state.out, "{CLEAR}");
                    let _ = state.out.flush();
                }
            })
            // No thread: no spinner, the run goes on.
            .ok();
        Spinner { shared, thread }
    }

    /// Takes the spinner off the screen until `Hidden::show`.
    pub fn hide(&self) -> Hidden {
        let mut state = locks::lock(&self.shared.state);
        state.hidden = true;
        if std::mem::take(&mut state.shown) {
            let _ = write!(state.out, "{CLEAR}");
            let _ = state.out.flush();
        }
        Hidden(self.shared.clone())
    }
}

impl Hidden {
    /// Back on the screen at its next turn (unless it was stopped meanwhile).
    pub fn show(self) {
        locks::lock(&self.0.state).hidden = false;
        self.0.wake.notify_all();
    }
}

impl Drop for Spinner {
    /// Stops it and clears its line before anything else prints.
    fn drop(&mut self) {
        locks::lock(&self.shared.state).stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the spinner wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl Write for Screen {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            locks::lock(&self.0).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Screen {
        fn text(&self) -> String {
            String::from_utf8_lossy(&locks::lock(&self.0)).into_owned()
        }
    }

    #[test]
    fn the_spinner_turns_and_is_cleared_when_hidden_and_when_stopped() {
        let screen = Screen::default();
        let spinner = Spinner::start_on("thinking…", Box::new(screen.clone()));
        // It draws at once (its first turn), then every tick; its line is erased before each frame.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !screen.text().contains("thinking…") {
            assert!(std::time::Instant::now() < deadline, "the spinner never drew: {:?}", screen.text());
            std::thread::yield_now();
        }
        assert!(screen.text().starts_with(CLEAR), "{:?}", screen.text());
        let hidden = spinner.hide();
        let at_hide = screen.text();
        assert!(at_hide.ends_with(CLEAR), "hiding it leaves its line clear: {at_hide:?}");
        hidden.show();
        drop(spinner);
        // Stopped: the thread is gone (joined by the drop) and the line is clear.
        let end = screen.text();
        assert!(end.ends_with(CLEAR), "{end:?}");
    }
}
