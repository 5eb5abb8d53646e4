//! Server-sent events: splits a byte stream into `(event, data)` pairs.

use futures_util::StreamExt;

use super::LlmError;

pub struct SseEvent {
    pub event: String,
    pub data: String,
}

pub struct SseStream {
    inner: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: Vec<u8>,
    provider: &'static str,
    done: bool,
    /// The longest the server may stay silent between two pieces of the stream.
    silence: std::time::Duration,
}

/// One event larger than this is not a model's answer but a broken or hostile server.
const MAX_EVENT: usize = 16 * 1024 * 1024;

impl SseStream {
    pub fn new(resp: reqwest::Response, provider: &'static str, silence: std::time::Duration) -> Self {
        SseStream { inner: resp.bytes_stream().boxed(), buf: Vec::new(), provider, done: false, silence }
    }

    /// The next event, `None` at the end of the stream.
    pub async fn next(&mut self) -> Result<Option<SseEvent>, LlmError> {
        loop {
            if let Some(ev) = self.take_event() {
                return Ok(Some(ev));
            }
            if self.done {
                return Ok(None);
            }
            if self.buf.len() > MAX_EVENT {
                return Err(LlmError::Protocol {
                    provider: self.provider,
                    message: format!("an event of the stream passed {} MB", MAX_EVENT / (1024 * 1024)),
                });
            }
            let next = tokio::time::timeout(self.silence, self.inner.next())
                .await
                .map_err(|_| super::error::silent(self.provider, self.silence))?;
            match next {
                Some(Ok(chunk)) => self.buf.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    return Err(LlmError::Interrupted {
                        provider: self.provider,
                        status: None,
                        message: format!("stream interrupted: {}", super::error::describe(&e)),
                        retryable: true,
                    })
                }
                None => {
                    self.done = true;
                    // A last event without its blank line still counts.
                    if !self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                        self.buf.extend_from_slice(b"\n\n");
                    }
                }
            }
        }
    }

    fn take_event(&mut self) -> Option<SseEvent> {
        loop {
            let end = find_blank_line(&self.buf)?;
            let raw: Vec<u8> = self.buf.drain(..end.1).collect();
            let text = String::from_utf8_lossy(&raw[..end.0]);
            let mut event = String::new();
            let mut data = String::new();
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim().to_string();
                } else if let Some(v) = line.strip_prefix("data:") {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            if !data.is_empty() || !event.is_empty() {
                return Some(SseEvent { event, data });
            }
        }
    }
}

/// Position of the first event terminator: (end of event text, end of terminator).
fn find_blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < buf.len() {
        if buf[i] == b'\n' {
            if buf.get(i + 1) == Some(&b'\n') {
                return Some((i, i + 2));
            }
            if buf.get(i + 1) == Some(&b'\r') && buf.get(i + 2) == Some(&b'\n') {
                return Some((i, i + 3));
            }
        }
        i += 1;
    }
    None
}
