//! The LSP sidecar.

pub async fn serve_stdio() {}
