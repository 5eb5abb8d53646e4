//! Chat's `/checkpoints` and `/rewind ID [both|files|conversation]` (issue 20).

use crate::checkpoint::text;
use crate::workspace::Workspace;

/// `/checkpoints`: one line each, oldest first.
pub(super) fn list(ws: &Workspace) {
    println!("{}", text::listing(&ws.checkpoints()));
}

/// `/rewind ID [both|files|conversation]`: puts it back on disk and says what it did and did not.
pub(super) fn rewind(ws: &std::sync::Arc<Workspace>, args: &str) {
    let done = text::parse_args(args).and_then(|(id, restore)| ws.rewind_on_disk(id, restore));
    match done {
        Ok(done) => println!("{}", text::rewound(&done)),
        Err(e) => eprintln!("stepwise: {e}"),
    }
}
