//! The LSP sidecar: one agent session per workspace folder, its plan shown in the editor.
//! Custom methods are documented in docs/protocol.md.

mod documents;
mod events;
mod folder;
mod host;
mod notify;
mod server;
mod state;

pub use documents::{offset_of, position_of, Encoding};
pub use server::{Backend, COMMANDS};

use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::{LspService, Server};

/// Serves one client over any byte streams (stdio in production, in-memory pipes in tests).
pub async fn serve<I, O>(input: I, output: O)
where
    I: AsyncRead + Unpin,
    O: AsyncWrite,
{
    let (service, socket) = LspService::build(Backend::new)
        .custom_method("window/workDoneProgress/cancel", Backend::progress_cancel)
        .finish();
    Server::new(input, output, socket).serve(service).await;
}

pub async fn serve_stdio() {
    tracing::info!("stepwise {} serving LSP on stdio", env!("CARGO_PKG_VERSION"));
    serve(tokio::io::stdin(), tokio::io::stdout()).await;
}
