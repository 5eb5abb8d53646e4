//! The workspace's shadow copy, made in the background from when the workspace opens, so that the first
//! shell command does not wait for it.
//!
//! One low-priority thread (`nice` 19 and the lowest I/O priority on Linux, the background QoS class on
//! macOS) copies one folder at a time, taking the scanner's lock for that folder only. A command that
//! comes before the copy is complete does not use a partial copy: it stops the thread at the next folder
//! and finishes the copy itself, at its own priority (`Scanner::sync`), since what the command will touch
//! cannot be known before it runs, and a file changed before it was copied would be recorded with its
//! new content as its old. Measured in docs/benchmarks.md (checkpoints).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::scan::Scanner;
use super::store::Pack;
use super::Limits;
use crate::locks;

pub struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Starts copying in the background.
pub fn spawn(scan: Arc<Mutex<Scanner>>, pack: Arc<Pack>, limits: Limits) -> std::io::Result<Background> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new().name("stepwise-copy".into()).spawn(move || {
        lower_priority();
        let started = std::time::Instant::now();
        loop {
            if flag.load(Ordering::Relaxed) {
                tracing::debug!("checkpoints: a command finishes the copy");
                return;
            }
            let mut scan = locks::lock(&scan);
            match scan.copy_step(&pack, &limits) {
                Ok(true) => {}
                Ok(false) => {
                    let ms = started.elapsed().as_millis();
                    tracing::debug!("checkpoints: copy of {} files made in the background ({ms} ms)", scan.len());
                    return;
                }
                Err(e) => {
                    tracing::warn!("checkpoints: the copy of the workspace stopped: {e}");
                    return;
                }
            }
        }
    })?;
    Ok(Background { stop, thread: Some(thread) })
}

impl Background {
    /// Stops the thread at the next folder (the caller finishes the copy).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Waits for the thread to end (the copy complete, or stopped).
    pub fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
        self.join();
    }
}

/// This thread yields the processor and the disk to everything else.
#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: plain syscalls on the calling thread.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS as _, tid as libc::id_t, 19);
        // ioprio_set(IOPRIO_WHO_PROCESS, tid, best effort, level 7): the lowest that is never starved.
        libc::syscall(libc::SYS_ioprio_set, 1, tid, (2 << 13) | 7);
    }
}

#[cfg(target_os = "macos")]
fn lower_priority() {
    // SAFETY: sets the calling thread's own QoS class.
    unsafe {
        libc::pthread_set_qos_class_self_np(libc::qos_class_t::QOS_CLASS_BACKGROUND, 0);
    }
}
