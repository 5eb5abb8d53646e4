//! Saved sessions nobody used for a while go, and their checkpoints with them (a checkpoint store holds
//! a copy of the workspace, and an ACP client starts a session per thread). A session's age is the
//! newest change to its file or to its checkpoint store, so one still being rewound is kept.
//! `STEPWISE_SESSION_DAYS` (default 30, as Claude Code's transcripts; 0 keeps them for ever).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub const DEFAULT_DAYS: u64 = 30;
const SESSION: &str = "json";
const CHECKPOINTS: &str = "checkpoints";

/// How long an unused session is kept; `None`: for ever.
pub fn max_age(env: &crate::config::Env) -> Option<Duration> {
    let days = match env.get("STEPWISE_SESSION_DAYS") {
        None => DEFAULT_DAYS,
        Some(v) => v.trim().parse::<u64>().unwrap_or_else(|_| {
            tracing::warn!(
                "STEPWISE_SESSION_DAYS must be a number of days, not {v:?}; keeping sessions {DEFAULT_DAYS} days"
            );
            DEFAULT_DAYS
        }),
    };
    (days > 0).then(|| Duration::from_secs(days * 86_400))
}

/// Prunes `dir` (the sidecar's sessions, or the ACP agent's: each adapter its own, since only it knows
/// which are open); the sessions whose files are in `open` are in use, however old. A directory read, a
/// `stat` per entry and a few removals (a store is two files and a folder).
pub fn sessions(dir: Option<&Path>, open: &[PathBuf]) {
    let (Some(age), Some(dir)) = (max_age(&crate::config::Env::load(&[])), dir) else { return };
    let gone = prune(dir, age, SystemTime::now(), open).len();
    if gone > 0 {
        tracing::info!("removed {gone} saved sessions unused for {} days", age.as_secs() / 86_400);
    }
}

/// Removes the sessions in `dir` (not below) unused for `age`, but for those in `open`; returns what
/// was removed.
pub fn prune(dir: &Path, age: Duration, now: SystemTime, open: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut stems: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == SESSION || x == CHECKPOINTS))
        .map(|p| p.with_extension(""))
        .collect();
    stems.sort();
    stems.dedup();
    let mut gone = Vec::new();
    for stem in stems {
        let (file, store) = (stem.with_extension(SESSION), stem.with_extension(CHECKPOINTS));
        if open.contains(&file) {
            continue;
        }
        let file_meta = std::fs::symlink_metadata(&file).ok();
        // Only plain files and directories are removed: a symlink planted here is left as it is.
        let store_meta = std::fs::symlink_metadata(&store).ok().filter(|m| m.is_dir());
        let newest = [
            file_meta.as_ref().and_then(|m| m.modified().ok()),
            store_meta.as_ref().and_then(|m| newest_in(&store, m)),
        ]
        .into_iter()
        .flatten()
        .max();
        let stale = newest.is_some_and(|t| now.duration_since(t).is_ok_and(|d| d > age));
        if !stale {
            continue;
        }
        if file_meta.is_some_and(|m| m.is_file()) && std::fs::remove_file(&file).is_ok() {
            gone.push(file);
        }
        if store_meta.is_some() {
            match std::fs::remove_dir_all(&store) {
                Ok(()) => gone.push(store),
                Err(e) => tracing::warn!("could not remove {}: {e}", store.display()),
            }
        }
        // The session's images (`images::saved`) go with it.
        let images = crate::images::saved::dir_for(&stem.with_extension(SESSION));
        if std::fs::symlink_metadata(&images).is_ok_and(|m| m.is_dir()) {
            match std::fs::remove_dir_all(&images) {
                Ok(()) => gone.push(images),
                Err(e) => tracing::warn!("could not remove {}: {e}", images.display()),
            }
        }
    }
    gone
}

/// The store's own time and its top-level files' (the journal is appended to at every checkpoint).
fn newest_in(store: &Path, own: &std::fs::Metadata) -> Option<SystemTime> {
    let inner = std::fs::read_dir(store).ok()?.flatten().filter_map(|e| e.metadata().and_then(|m| m.modified()).ok());
    inner.chain(own.modified().ok()).max()
}

#[cfg(test)]
mod tests {
    use std::fs::{self, File};

    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    fn age(p: &Path, by: Duration) {
        let t = SystemTime::now() - by;
        File::options().read(true).open(p).and_then(|f| f.set_modified(t)).unwrap();
    }

    #[test]
    fn unused_sessions_go_with_their_checkpoints_and_used_ones_stay() {
        let dir = std::env::temp_dir().join(format!("stepwise-prune-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let make = |stem: &str, days: u32, journal_days: u32| {
            fs::write(dir.join(format!("{stem}.json")), "{}").unwrap();
            let store = dir.join(format!("{stem}.checkpoints"));
            fs::create_dir_all(store.join("objects")).unwrap();
            fs::write(store.join("journal"), "x").unwrap();
            age(&dir.join(format!("{stem}.json")), days * DAY);
            age(&store.join("journal"), journal_days * DAY);
            age(&store.join("objects"), journal_days * DAY);
            age(&store, journal_days * DAY);
        };
        make("old", 40, 40);
        fs::create_dir_all(dir.join("old.images")).unwrap();
        fs::write(dir.join("old.images").join("ab.png"), "png").unwrap();
        fs::create_dir_all(dir.join("fresh.images")).unwrap();
        make("open-now", 40, 40);
        make("fresh", 1, 1);
        make("rewound-lately", 40, 2);
        // A store whose session was never saved, and a session without a store.
        make("orphan", 40, 40);
        fs::remove_file(dir.join("orphan.json")).unwrap();
        fs::write(dir.join("plain.json"), "{}").unwrap();
        age(&dir.join("plain.json"), 45 * DAY);
        fs::write(dir.join("trusted-mcp"), "keep").unwrap();
        age(&dir.join("trusted-mcp"), 400 * DAY);

        let mut gone = prune(&dir, 30 * DAY, SystemTime::now(), &[dir.join("open-now.json")]);
        gone.sort();
        let names: Vec<String> = gone.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["old.checkpoints", "old.images", "old.json", "orphan.checkpoints", "plain.json"]);
        for kept in [
            "fresh.json",
            "fresh.checkpoints",
            "fresh.images",
            "rewound-lately.json",
            "rewound-lately.checkpoints",
            "trusted-mcp",
            "open-now.json",
            "open-now.checkpoints",
        ] {
            assert!(dir.join(kept).exists(), "{kept} was removed");
        }
        assert!(!dir.join("old.checkpoints").exists() && !dir.join("old.json").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_not_followed() {
        let dir = std::env::temp_dir().join(format!("stepwise-prune-link-{}", std::process::id()));
        let target = std::env::temp_dir().join(format!("stepwise-prune-target-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let _ = fs::remove_dir_all(&target);
        fs::create_dir_all(&dir).unwrap();
        fs::create_dir_all(&target).unwrap();
        fs::write(target.join("precious"), "x").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("evil.checkpoints")).unwrap();
        fs::write(dir.join("evil.json"), "{}").unwrap();
        age(&dir.join("evil.json"), 90 * DAY);
        age(&target.join("precious"), 90 * DAY);
        age(&target, 90 * DAY);
        let gone = prune(&dir, 30 * DAY, SystemTime::now(), &[]);
        assert_eq!(gone, [dir.join("evil.json")]);
        assert!(target.join("precious").exists(), "pruning followed a symlink");
        assert!(fs::symlink_metadata(dir.join("evil.checkpoints")).is_ok(), "the link itself is left as it is");
        fs::remove_dir_all(&dir).unwrap();
        fs::remove_dir_all(&target).unwrap();
    }
}
