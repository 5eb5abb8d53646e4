//! The look at a workspace before the first model request: which language servers would serve a file of it
//! (the tools offered depend on it).

use std::path::PathBuf;

use super::spec;
use crate::intel::walk;
use spec::Specs;

/// How many of the servers serving the workspace the look finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// One: whether any serves it.
    First,
    /// Every one.
    All,
}

/// The look at a workspace: the servers configured or on `PATH`, the problems with the user's file, and
/// the servers serving some file of the workspace (its bounded walk, `intel/walk.rs`). `PATH` is searched only
/// once the walk met a file a server could serve (an extension of a well-known server's or of the
/// user's): a workspace with none costs no look-up (about 80 `statx`, most of the look before the first
/// model request, issue 39). The walk then goes on until a server serves a file (`Serving::First`: the
/// tools are offered then; the rest of a large workspace's walk was 2.5 ms of its start) or, for the
/// question whether to trust them, until it knows them all.
pub fn look(root: PathBuf, serving: Serving) -> (Specs, Vec<String>, Vec<String>) {
    let want = serving;
    let user = spec::UserServers::read();
    let mut walk = walk::files(&root, walk::LOOK).peekable();
    while walk.next_if(|path| !user.may_serve(path)).is_some() {}
    let (mut specs, problems) = user.split();
    let mut serving: Vec<String> = Vec::new();
    for path in walk {
        let path = path.as_path();
        specs.look_up_for(path);
        for s in specs.found.iter().filter(|s| s.startable() && s.serves(path)) {
            if !serving.contains(&s.name) {
                serving.push(s.name.clone());
            }
        }
        let all = specs.all_looked_up() && serving.len() == specs.found.iter().filter(|s| s.startable()).count();
        if all || (want == Serving::First && !serving.is_empty()) {
            break;
        }
    }
    (specs, problems, serving)
}

/// The servers a session would start in `root` (for each file of the look's walk, the one that would serve
/// it: the user's before the well-known ones, in their order), and the problems with the user's file. The
/// whole walk: for `stepwise doctor`, and once a server failed, to know whether any other is left.
pub fn used(root: &std::path::Path) -> (Vec<std::sync::Arc<spec::Spec>>, Vec<String>) {
    let (mut specs, problems) = spec::UserServers::read().split();
    let mut used: Vec<std::sync::Arc<spec::Spec>> = Vec::new();
    for path in walk::files(root, walk::LOOK) {
        if let Some(s) = specs.for_file(&path) {
            if !used.iter().any(|u| u.name == s.name) {
                used.push(s);
            }
        }
    }
    (used, problems)
}
