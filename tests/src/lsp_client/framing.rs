//! LSP framing: the reader that checks every frame strictly, and the writer.

use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::state::*;

/// Reads LSP frames until the stream ends, checking each one strictly.
pub(crate) async fn read_loop<R: AsyncRead + Unpin>(inner: Arc<Inner>, reader: R) {
    let mut r = BufReader::new(reader);
    loop {
        let mut length: Option<usize> = None;
        let mut header_bytes = 0usize;
        let mut first = true;
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line).await {
                Ok(0) => {
                    if !first || header_bytes > 0 {
                        inner.framing_error("stream ended inside a header".into());
                    }
                    finish_reading(&inner);
                    return;
                }
                Ok(n) => header_bytes += n,
                Err(e) => {
                    inner.framing_error(format!("read error: {e}"));
                    finish_reading(&inner);
                    return;
                }
            }
            first = false;
            if !line.ends_with(b"\r\n") {
                inner.framing_error(format!("header line not ended by CRLF: {:?}", String::from_utf8_lossy(&line)));
                continue;
            }
            let text = String::from_utf8_lossy(&line[..line.len() - 2]).into_owned();
            if text.is_empty() {
                break;
            }
            match text.split_once(':') {
                Some((name, value)) if name.eq_ignore_ascii_case("Content-Length") => match value.trim().parse() {
                    Ok(n) => length = Some(n),
                    Err(_) => inner.framing_error(format!("bad Content-Length: {text:?}")),
                },
                Some((name, value)) if name.eq_ignore_ascii_case("Content-Type") => {
                    if !value.contains("utf-8") && !value.contains("utf8") {
                        inner.framing_error(format!("unexpected Content-Type: {text:?}"));
                    }
                }
                _ => inner.framing_error(format!("unexpected header line: {text:?}")),
            }
        }
        let Some(n) = length else {
            inner.framing_error("frame without Content-Length".into());
            continue;
        };
        let mut body = vec![0u8; n];
        if let Err(e) = r.read_exact(&mut body).await {
            inner.framing_error(format!("stream ended inside a {n}-byte body: {e}"));
            finish_reading(&inner);
            return;
        }
        {
            let mut st = lock(&inner.state);
            st.bytes += header_bytes + n;
            st.frames += 1;
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(v) => inner.dispatch(v),
            Err(e) => inner.framing_error(format!("body is not JSON ({e}): {:?}", String::from_utf8_lossy(&body))),
        }
    }
}

pub(crate) fn finish_reading(inner: &Inner) {
    lock(&inner.state).closed = true;
    inner.bump();
}

pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(mut w: W, mut rx: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(bytes) = rx.recv().await {
        // The empty message is `vanish`: the editor is gone, its end of the pipe closes.
        if bytes.is_empty() {
            break;
        }
        if w.write_all(&bytes).await.is_err() || w.flush().await.is_err() {
            return;
        }
    }
    let _ = w.shutdown().await;
}
