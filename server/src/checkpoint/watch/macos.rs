//! FSEvents through `notify`: one stream for the workspace, events collected by its thread. A scan first
//! writes a marker file in the checkpoints' own folder (watched too) and waits for its event: the stream
//! delivers in order, so every change made before the marker has arrived by then.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::{trusted_fs, Pending};
use crate::locks;

/// How long a marker may take to come back before the events are not trusted.
const FLUSH: Duration = Duration::from_secs(2);

pub struct Watch {
    root: PathBuf,
    markers: PathBuf,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    seq: AtomicU64,
    broken: Mutex<Option<String>>,
    _watcher: notify::FsEventWatcher,
}

#[derive(Default)]
struct Shared {
    pending: Pending,
    /// The newest marker seen.
    marker: u64,
}

impl Watch {
    pub fn start(root: &Path, state: &Path) -> Result<Watch, String> {
        trusted_fs(root)?;
        let markers = state.join("watch");
        std::fs::create_dir_all(&markers).map_err(|e| format!("{}: {e}", markers.display()))?;
        let markers = std::fs::canonicalize(&markers).map_err(|e| format!("{}: {e}", markers.display()))?;
        let shared: Arc<(Mutex<Shared>, Condvar)> = Arc::default();
        let (r, m, s) = (root.to_path_buf(), markers.clone(), shared.clone());
        let handler = move |res: notify::Result<notify::Event>| {
            let mut sh = locks::lock(&s.0);
            match res {
                Err(e) => sh.pending.lose(&format!("FSEvents: {e}")),
                Ok(ev) if ev.need_rescan() => sh.pending.lose("FSEvents dropped events"),
                Ok(ev) => {
                    for p in &ev.paths {
                        if let Ok(rest) = p.strip_prefix(&m) {
                            let n = rest.to_str().and_then(|n| n.strip_prefix("marker-")?.parse::<u64>().ok());
                            if let Some(n) = n {
                                sh.marker = sh.marker.max(n);
                            }
                        } else if let Ok(rel) = p.strip_prefix(&r) {
                            if let Some(key) = super::super::state::key_of(rel) {
                                sh.pending.add(key);
                            }
                        }
                    }
                }
            }
            drop(sh);
            s.1.notify_all();
        };
        let mut watcher =
            notify::FsEventWatcher::new(handler, notify::Config::default()).map_err(|e| format!("FSEvents: {e}"))?;
        {
            let mut paths = watcher.paths_mut();
            paths.add(root, RecursiveMode::Recursive).map_err(|e| format!("FSEvents: {e}"))?;
            if !markers.starts_with(root) {
                paths.add(&markers, RecursiveMode::Recursive).map_err(|e| format!("FSEvents: {e}"))?;
            }
            paths.commit().map_err(|e| format!("FSEvents: {e}"))?;
        }
        Ok(Watch {
            root: root.to_path_buf(),
            markers,
            shared,
            seq: AtomicU64::new(0),
            broken: Mutex::new(None),
            _watcher: watcher,
        })
    }

    /// The stream covers the whole workspace; only checks the folder's file system.
    pub fn add_dir(&self, _key: &str, path: &Path) {
        if let Err(e) = trusted_fs(path) {
            locks::lock(&self.broken).get_or_insert(e);
        }
    }

    /// The stream covers the workspace whatever is in it.
    pub fn forget(&self, _keys: &[String]) {}

    pub fn broken(&self) -> Option<String> {
        locks::lock(&self.broken).clone()
    }

    /// The stream is one for the whole workspace.
    pub fn watched(&self) -> usize {
        usize::from(self.root.exists())
    }

    pub fn take(&self) -> Result<Vec<String>, String> {
        if let Some(b) = self.broken() {
            return Err(b);
        }
        let n = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let marker = self.markers.join(format!("marker-{n}"));
        std::fs::write(&marker, b"").map_err(|e| format!("{}: {e}", marker.display()))?;
        let (lock, cv) = &*self.shared;
        let deadline = std::time::Instant::now() + FLUSH;
        let mut sh = locks::lock(lock);
        while sh.marker < n {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                sh.pending.lose("no event arrived for the marker file (FSEvents may not cover this folder)");
                break;
            }
            sh = cv.wait_timeout(sh, left).map_or_else(|e| e.into_inner().0, |(g, _)| g);
        }
        let out = sh.pending.take();
        drop(sh);
        let _ = std::fs::remove_file(&marker);
        out
    }
}
