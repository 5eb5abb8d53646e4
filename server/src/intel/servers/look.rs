//! The look at a workspace before the first model request: which language servers would serve a file of it
//! (the tools offered depend on it).

use std::path::{Path, PathBuf};

use super::{glance, spec};
use spec::Specs;

/// The look at a workspace: the servers configured or on `PATH`, the problems with the user's file, and
/// the servers serving some file of the workspace (its bounded walk). A glance first (`glance.rs`), which
/// spares the rest where no name could be served; then the walk, and `PATH` is
/// searched only once it met a file a server could serve (an extension of a well-known server's or of
/// the user's): a workspace with none costs no look-up (about 80 `statx`, most of the look before the
/// first model request, issue 39). The walk then goes on from that file as it did before.
pub fn look(root: PathBuf) -> (Specs, Vec<String>, Vec<String>) {
    let user = spec::UserServers::read();
    if glance::none_served(&root, |p| user.may_serve(p)) {
        let (specs, problems) = user.split();
        return (specs, problems, Vec::new());
    }
    let mut walk = bounded_walk(&root).peekable();
    while walk.next_if(|e| !user.may_serve(e.path())).is_some() {}
    let (mut specs, problems) = user.split();
    let mut serving: Vec<String> = Vec::new();
    for e in walk {
        let path = e.path();
        specs.look_up_for(path);
        for s in specs.found.iter().filter(|s| s.startable() && s.serves(path)) {
            if !serving.contains(&s.name) {
                serving.push(s.name.clone());
            }
        }
        if specs.all_looked_up() && serving.len() == specs.found.iter().filter(|s| s.startable()).count() {
            break;
        }
    }
    (specs, problems, serving)
}

/// A look at the workspace's files bounded in depth (6) and entries (5,000), honouring its ignore files but
/// not the user's global one (`core.excludesFile`): finding that one means reading git's configuration and
/// compiling a regex, which was half the instructions of `stepwise run`'s start (issue 39), and files
/// only the user's global ignore hides still show which languages a project has.
pub(super) fn bounded_walk(root: &Path) -> impl Iterator<Item = ignore::DirEntry> {
    ignore::WalkBuilder::new(root).max_depth(Some(6)).git_global(false).build().take(5000).flatten()
}
