//! The LSP sidecar: one agent session per workspace folder, its plan shown in the editor.
//! Custom methods are documented in docs/protocol.md.

mod ask;
mod asker;
mod background;
mod caps;
mod commands;
mod events;
pub mod ext;
mod folder;
mod frames;
mod host;
mod notify;
mod positions;
mod progress;
mod put_back;
mod query;
mod review;
mod review_state;
mod rewind;
mod run;
mod server;
mod session;
mod sessions;
mod settings;
mod shared;
mod texts;

pub use ext::COMMANDS;
pub use positions::{offset_of, position_of, Encoding};
pub use server::Backend;

use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::{LspService, Server};

/// Serves one client over any byte streams (stdio in production, in-memory pipes in tests).
pub async fn serve<I, O>(input: I, output: O)
where
    I: AsyncRead + Unpin,
    O: AsyncWrite,
{
    // Kept to wrap up after the editor is gone (see below).
    let shared = std::sync::Arc::new(std::sync::OnceLock::new());
    let slot = shared.clone();
    let (service, socket) = LspService::build(move |client| {
        let backend = Backend::new(client);
        let _ = slot.set(backend.shared());
        backend
    })
    .custom_method("window/workDoneProgress/cancel", Backend::progress_cancel)
    .custom_method(frames::INVALID_MESSAGE, Backend::invalid_message)
    .finish();
    // Frames pass a check on the way in (tower-lsp would stop reading at the first malformed one), and
    // answers to malformed frames get their `null` id back on the way out.
    let (mut checked, server_input) = tokio::io::duplex(64 * 1024);
    let (server_output, delivered) = tokio::io::duplex(64 * 1024);
    let server = Server::new(server_input, server_output, socket).serve(service);
    let pump = async move {
        if let Err(e) = frames::forward(input, &mut checked).await {
            tracing::debug!("input ended: {e}");
        }
        // Dropping `checked` ends the server's input.
    };
    let serving = async {
        tokio::pin!(server);
        tokio::pin!(pump);
        tokio::select! {
            _ = &mut server => {}
            _ = &mut pump => server.await,
        }
    };
    // The server's output ends with `serve`; everything it wrote is delivered before returning.
    let (_, delivered) = tokio::join!(serving, frames::deliver(delivered, output));
    if let Err(e) = delivered {
        tracing::debug!("output ended: {e}");
    }
    // The editor is gone (or said exit): stop what runs and write every folder's latest state, so an
    // editor that vanished mid-run loses at most the round in flight.
    if let Some(shared) = shared.get() {
        shared.wrap_up(std::time::Duration::from_secs(2)).await;
    }
}

pub async fn serve_stdio() {
    tracing::info!("stepwise {} serving LSP on stdio", env!("CARGO_PKG_VERSION"));
    serve(stdin_reader(), tokio::io::stdout()).await;
}

/// Stdin, read on a thread of its own. `tokio::io::stdin()` reads on the runtime's blocking pool, and a
/// read still waiting when `exit` arrives (clients need not close stdin) would keep the runtime, and so
/// the process, from ending.
fn stdin_reader() -> tokio::io::DuplexStream {
    let (mut tx, rx) = tokio::io::duplex(64 * 1024);
    let handle = tokio::runtime::Handle::current();
    let spawned = std::thread::Builder::new().name("stepwise-stdin".into()).spawn(move || {
        use std::io::Read;
        use tokio::io::AsyncWriteExt;
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if handle.block_on(tx.write_all(&buf[..n])).is_err() {
                break;
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!("cannot start the stdin reader: {e}");
    }
    rx
}
