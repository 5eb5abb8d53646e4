//! A worktree session's changes brought into its folder: each file the session changed is carried over
//! where the folder still holds what the session started from, and is a conflict (shown, never
//! overwritten) where the folder changed since. The adapter applies the plan through the folder's session
//! (`Workspace::apply_files`), so it lands as the agent's edits: open documents in the editor's undo,
//! checkpointed, reviewable hunk by hunk.

use std::path::Path;

use super::worktree::{read_now, Change, Manifest, Now};
use crate::checkpoint::Hash;

/// What an apply does.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Files to make what the session left (`Now::File` or `Now::Absent`).
    pub files: Vec<(String, Now)>,
    /// Files the folder holds as the session left them already.
    pub same: Vec<(String, Now)>,
    /// Files left alone, with why.
    pub conflicts: Vec<(String, String)>,
}

/// The plan for bringing `changes` (from `Worktree::changes`) into `folder`.
pub fn plan(folder: &Path, changes: Vec<Change>) -> Plan {
    let mut plan = Plan::default();
    for c in changes {
        if let Now::Other(why) = &c.now {
            plan.conflicts.push((c.rel, format!("not carried over: {why} in the session's worktree")));
            continue;
        }
        let here = read_now(folder, &c.rel);
        if here == c.now {
            plan.same.push((c.rel, c.now));
        } else if here.is(c.base) {
            plan.files.push((c.rel, c.now));
        } else {
            plan.conflicts.push((c.rel, "changed in the folder since the session began".to_string()));
        }
    }
    plan
}

/// The manifest after files were applied: what each holds is its start from now on, so the next apply
/// carries only what changed after this one.
pub fn applied(mut manifest: Manifest, files: &[(String, Now)]) -> Manifest {
    for (rel, now) in files {
        let hash = match now {
            Now::File(b) => Some(Hash::of(b)),
            _ => None,
        };
        manifest.insert(rel.clone(), hash);
    }
    manifest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_carried_where_the_folder_holds_the_start_and_is_a_conflict_elsewhere() {
        let dir = std::env::temp_dir().join(format!("stepwise-apply-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("kept.txt"), "start\n").unwrap();
        std::fs::write(dir.join("theirs.txt"), "the user's\n").unwrap();
        std::fs::write(dir.join("done.txt"), "new\n").unwrap();
        let start = Some(Hash::of(b"start\n"));
        let changes = vec![
            Change { rel: "kept.txt".into(), base: start, now: Now::File(b"new\n".to_vec()) },
            Change { rel: "theirs.txt".into(), base: start, now: Now::File(b"new\n".to_vec()) },
            Change { rel: "done.txt".into(), base: start, now: Now::File(b"new\n".to_vec()) },
            Change { rel: "created.txt".into(), base: None, now: Now::File(b"made\n".to_vec()) },
            Change { rel: "link".into(), base: None, now: Now::Other("a symbolic link".into()) },
        ];
        let p = plan(&dir, changes);
        let names = |v: &[(String, Now)]| v.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>();
        assert_eq!(names(&p.files), ["kept.txt", "created.txt"]);
        assert_eq!(names(&p.same), ["done.txt"]);
        let conflicts: Vec<&str> = p.conflicts.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(conflicts, ["theirs.txt", "link"]);
        let m = applied(Manifest::new(), &p.files);
        assert_eq!(m.get("kept.txt"), Some(&Some(Hash::of(b"new\n"))));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
