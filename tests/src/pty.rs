//! A pseudo-terminal for tests that drive stepwise as a person at a terminal would: what the program
//! wrote, read on a thread, and the keyboard.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct Pty {
    keyboard: std::fs::File,
    screen: mpsc::Receiver<u8>,
    seen: String,
    /// How long `expect` waits for a text.
    timeout: Duration,
}

impl Pty {
    /// Opens a pseudo-terminal; returns it and the program's end (its stdin, stdout, stderr).
    pub fn open(timeout: Duration) -> (Pty, OwnedFd) {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty fills two fds; null name/termios/winsize are allowed.
        let rc =
            unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(rc, 0, "openpty failed");
        // SAFETY: fresh fds we own.
        let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut reader = std::fs::File::from(master.try_clone().expect("a copy of the pty's master"));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || buf[..n].iter().any(|b| tx.send(*b).is_err()) {
                    return;
                }
            }
        });
        (Pty { keyboard: std::fs::File::from(master), screen: rx, seen: String::new(), timeout }, slave)
    }

    /// Waits until the terminal shows `text` (after what was already matched); returns what came before.
    pub fn expect(&mut self, text: &str) -> String {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(i) = self.seen.find(text) {
                let before = self.seen[..i].to_string();
                self.seen.drain(..i + text.len());
                return before;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.screen.recv_timeout(left) {
                Ok(b) => self.seen.push(b as char),
                Err(_) => panic!("the terminal never showed {text:?}; it showed: {:?}", self.seen),
            }
        }
    }

    /// What the terminal showed after the last text `expect` matched (and nothing more: it does not wait).
    pub fn unmatched(&self) -> &str {
        &self.seen
    }

    /// Types a line and Enter.
    pub fn type_line(&mut self, line: &str) {
        self.keyboard.write_all(format!("{line}\n").as_bytes()).expect("typing on the pty");
    }
}
