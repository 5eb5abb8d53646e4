//! Server-sent events: splits a byte stream into `(event, data)` pairs.

use futures_util::StreamExt;

use super::LlmError;

pub struct SseEvent {
    pub event: String,
    pub data: String,
}

pub struct SseStream {
    inner: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    /// What has arrived and is not yet taken: `buf[start..]`, of which `buf[start..scanned]` holds no
    /// event's end. Taken events only move `start` (a chunk often holds many events; moving the rest of
    /// the buffer down for each one cost more than reading them); the buffer is moved down once per chunk.
    buf: Vec<u8>,
    start: usize,
    scanned: usize,
    provider: &'static str,
    done: bool,
    /// The longest the server may stay silent between two pieces of the stream.
    silence: std::time::Duration,
}

/// One event larger than this is not a model's answer but a broken or hostile server.
const MAX_EVENT: usize = 16 * 1024 * 1024;

impl SseStream {
    pub fn new(resp: reqwest::Response, provider: &'static str, silence: std::time::Duration) -> Self {
        SseStream {
            inner: resp.bytes_stream().boxed(),
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            provider,
            done: false,
            silence,
        }
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
            if self.buf.len() - self.start > MAX_EVENT {
                return Err(LlmError::Protocol {
                    provider: self.provider,
                    message: format!("an event of the stream passed {} MB", MAX_EVENT / (1024 * 1024)),
                });
            }
            let next = tokio::time::timeout(self.silence, self.inner.next())
                .await
                .map_err(|_| super::error::silent(self.provider, self.silence))?;
            match next {
                Some(Ok(chunk)) => {
                    self.buf.drain(..self.start);
                    self.scanned -= self.start;
                    self.start = 0;
                    self.buf.extend_from_slice(&chunk);
                }
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
                    if !self.buf[self.start..].iter().all(|b| b.is_ascii_whitespace()) {
                        self.buf.extend_from_slice(b"\n\n");
                    }
                }
            }
        }
    }

    fn take_event(&mut self) -> Option<SseEvent> {
        loop {
            let Some((text_end, next)) = find_blank_line(&self.buf[self.scanned..]) else {
                // The last byte may begin a terminator the next chunk completes: looked at again.
                self.scanned = self.buf.len().saturating_sub(2).max(self.start);
                return None;
            };
            let (text_end, next) = (self.scanned + text_end, self.scanned + next);
            let event = parse_event(&self.buf[self.start..text_end]);
            (self.start, self.scanned) = (next, next);
            if let Some(event) = event {
                return Some(event);
            }
        }
    }
}

/// One event's lines; `None` for an event with neither data nor a name (comments only).
fn parse_event(raw: &[u8]) -> Option<SseEvent> {
    let text = String::from_utf8_lossy(raw);
    let mut event = String::new();
    let mut data = String::new();
    for line in text.lines() {
        // `lines` leaves the `\r` of an event's last CRLF line (the blank line is found at its `\n`).
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(v) = line.strip_prefix("event:") {
            event = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    (!data.is_empty() || !event.is_empty()).then_some(SseEvent { event, data })
}

/// Position of the first event terminator: (end of event text, end of terminator).
fn find_blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    memchr::memchr_iter(b'\n', buf).find_map(|i| match (buf.get(i + 1), buf.get(i + 2)) {
        (Some(b'\n'), _) => Some((i, i + 2)),
        (Some(b'\r'), Some(b'\n')) => Some((i, i + 3)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(chunks: Vec<&'static [u8]>) -> SseStream {
        let items = chunks.into_iter().map(|c| Ok(bytes::Bytes::from_static(c)));
        SseStream {
            inner: futures_util::stream::iter(items.collect::<Vec<_>>()).boxed(),
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            provider: "test",
            done: false,
            silence: std::time::Duration::from_secs(5),
        }
    }

    async fn all(mut s: SseStream) -> Vec<(String, String)> {
        let mut out = Vec::new();
        while let Some(ev) = s.next().await.unwrap() {
            out.push((ev.event, ev.data));
        }
        out
    }

    const TEXT: &[u8] = b": comment only\n\nevent: a\ndata: one\n\ndata: two\ndata:three\r\n\r\nevent: b\n\n\ndata: {\"x\":\"\\n\"}\n\ndata: last";

    fn expected() -> Vec<(String, String)> {
        [("a", "one"), ("", "two\nthree"), ("b", ""), ("", "{\"x\":\"\\n\"}"), ("", "last")]
            .iter()
            .map(|(e, d)| (e.to_string(), d.to_string()))
            .collect()
    }

    #[tokio::test]
    async fn events_are_the_same_however_the_bytes_are_cut() {
        assert_eq!(all(stream(vec![TEXT])).await, expected());
        for cut in 1..TEXT.len() {
            let (a, b) = TEXT.split_at(cut);
            assert_eq!(all(stream(vec![a, b])).await, expected(), "cut at {cut}");
        }
        let bytes: Vec<&'static [u8]> = TEXT.chunks(1).collect();
        assert_eq!(all(stream(bytes)).await, expected());
    }
}
