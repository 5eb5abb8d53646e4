//! The two steps the engine-level checkpoint tests repeat: a checkpoint taken, and a shell command run
//! between `before_command` and `after_command` (the paths it changed, sorted).

use std::path::{Path, PathBuf};
use std::time::Duration;

use stepwise::checkpoint::{Checkpoints, Meta};
use stepwise::host::run_shell;
use stepwise::session::Session;

pub fn take(cp: &mut Checkpoints, round: u32) -> String {
    let meta = Meta { run_id: "r".into(), round, prompt: "p".into(), step: None };
    cp.take(meta, &Session::default()).unwrap()
}

pub async fn shell(cp: &mut Checkpoints, root: &Path, command: &str) -> Vec<PathBuf> {
    cp.before_command();
    let out = run_shell(root, command, Duration::from_secs(60)).await.unwrap();
    assert!(!out.is_error, "{command}: {}", out.text);
    let mut changed = cp.after_command();
    changed.sort();
    changed
}
