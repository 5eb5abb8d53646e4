//! `/plan edit` and plan first's `e(dit)`: the plan in `$VISUAL` / `$EDITOR`.

use std::io::Write;
use std::sync::Arc;

use super::input::Input;
use crate::workspace::Workspace;

/// Opens `$VISUAL` / `$EDITOR` on the plan's render form and applies what is saved; on an error the
/// text is offered again, so nothing typed is lost.
pub(super) async fn edit_plan(ws: &Arc<Workspace>, input: &Input) {
    let editor = ["VISUAL", "EDITOR"].iter().find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()));
    let editor = editor.unwrap_or_else(|| "vi".into());
    let file = std::env::temp_dir().join(format!("stepwise-plan-{}.txt", std::process::id()));
    let state = ws.plan();
    let mut text = state.plan.render();
    loop {
        if let Err(e) = std::fs::write(&file, format!("{text}\n")) {
            eprintln!("stepwise: cannot write {}: {e}", file.display());
            return;
        }
        let status = {
            let _paused = input.pause();
            // Through the shell, as git does: `$EDITOR` may carry arguments (`code --wait`).
            tokio::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{editor} \"$1\""))
                .arg("sh")
                .arg(&file)
                .status()
                .await
        };
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("stepwise: {editor} exited with {s}; the plan is unchanged");
                break;
            }
            Err(e) => {
                eprintln!("stepwise: cannot start {editor}: {e}");
                break;
            }
        }
        text = std::fs::read_to_string(&file).unwrap_or_default();
        match ws.edit_plan_text(&text, Some(state.revision)) {
            Ok(new) => {
                println!("{}", new.plan.render());
                break;
            }
            Err(e) => {
                eprint!("stepwise: {e}\nEdit again? [Y/n]: ");
                let _ = std::io::stderr().flush();
                let again = input.next_line().await.unwrap_or_default();
                if matches!(again.trim(), "n" | "N" | "no") {
                    break;
                }
            }
        }
    }
    let _ = std::fs::remove_file(&file);
}
