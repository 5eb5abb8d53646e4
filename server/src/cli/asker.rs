//! The command line's answers to the questions only it can ask (`workspace::Asker`), on the terminal:
//! whether to trust a workspace `.mcp.json` and a `.env` endpoint for a key from elsewhere. `--yes` covers
//! neither: they are about what runs and where the key goes, before anything is asked. Without a
//! terminal the answer is no, said on stderr.

use std::io::Write;
use std::sync::Arc;

use super::bold;
use super::input::Input;
use crate::config::ForeignEndpoint;
use crate::mcp::config::ConfigFile;
use crate::mcp::{trust, Report};
use crate::workspace::{Asker, Trust};

pub(super) struct TerminalAsker {
    pub interactive: bool,
    pub input: Input,
}

impl TerminalAsker {
    /// The answer to `question` (already shown): yes only for `y` or `yes`.
    async fn yes(&self) -> bool {
        let _ = std::io::stderr().flush();
        let answer = self.input.next_line().await.unwrap_or_default();
        matches!(answer.trim(), "y" | "Y" | "yes")
    }
}

impl Asker for TerminalAsker {
    fn reporter(&self) -> Report {
        Arc::new(|line: &str| eprintln!("stepwise: {line}"))
    }

    async fn trust_mcp(&self, file: &ConfigFile) -> Trust {
        if !self.interactive {
            eprintln!(
                "stepwise: not starting the MCP servers of {}: the file is not trusted yet (run stepwise chat on a terminal to trust it)",
                file.path.display()
            );
            return Trust::Now(false);
        }
        anstream::eprint!("{}\n[y/N]: ", bold(&trust::question(file)));
        Trust::Now(self.yes().await)
    }

    async fn trust_language_servers(&self, root: &std::path::Path, names: &[String]) -> Trust {
        if !self.interactive {
            eprintln!(
                "stepwise: not starting language servers in {}: no sandbox holds them and the workspace is not trusted yet (run stepwise chat on a terminal to trust it)",
                root.display()
            );
            return Trust::Now(false);
        }
        let q = crate::intel::servers::trust_question(root, names);
        anstream::eprint!("{}\n[y/N]: ", bold(&q));
        Trust::Now(self.yes().await)
    }

    async fn trust_endpoint(&self, f: &ForeignEndpoint) -> bool {
        if !self.interactive {
            return false;
        }
        let warning = format!("{} in {} sends your API key ({}) to {}.", f.var, f.file.display(), f.key_var, f.url);
        anstream::eprint!("{}\nAllow this endpoint? [y/N]: ", bold(&warning));
        self.yes().await
    }
}
