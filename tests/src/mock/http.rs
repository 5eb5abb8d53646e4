//! HTTP/1.1 by hand: reading requests (keep-alive, chunked bodies, `Expect: 100-continue`), JSON answers, SSE.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub(crate) const MAX_HEAD: usize = 1 << 20;

pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) target: String,
    version: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub(crate) fn keep_alive(&self) -> bool {
        let conn = self.header("connection").unwrap_or("").to_ascii_lowercase();
        if self.version == "HTTP/1.0" {
            conn.contains("keep-alive")
        } else {
            !conn.contains("close")
        }
    }
}

pub(crate) fn bad(msg: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.to_owned())
}

pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Reads more bytes into `buf`; errors on EOF.
pub(crate) async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let mut tmp = [0u8; 16 * 1024];
    let n = stream.read(&mut tmp).await?;
    if n == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    buf.extend_from_slice(&tmp[..n]);
    Ok(())
}

/// Reads one request; `Ok(None)` when the client closed the connection between requests.
/// Bytes after the request stay in `buf` for the next one.
pub(crate) async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<Option<Request>> {
    // Head.
    let head_end = loop {
        // Tolerate stray CRLFs between requests.
        while buf.starts_with(b"\r\n") {
            buf.drain(..2);
        }
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("request head too large"));
        }
        let mut tmp = [0u8; 16 * 1024];
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "eof in request head"))
            };
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    buf.drain(..head_end + 4);

    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split_whitespace();
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if v.starts_with("HTTP/1.") => (m.to_owned(), t.to_owned(), v.to_owned()),
        _ => return Err(bad("bad request line")),
    };
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':').ok_or_else(|| bad("bad header line"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let mut req = Request { method, target, version, headers, body: Vec::new() };

    let chunked = req.header("transfer-encoding").is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    let length = match req.header("content-length") {
        Some(v) if !chunked => Some(v.parse::<usize>().map_err(|_| bad("bad content-length"))?),
        _ => None,
    };
    let has_body = chunked || length.is_some_and(|n| n > 0);
    if has_body && buf.is_empty() && req.header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }

    if chunked {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = find(buf, b"\r\n") {
                    break i;
                }
                read_more(stream, buf).await?;
            };
            let size_line = String::from_utf8_lossy(&buf[..line_end]).into_owned();
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16).map_err(|_| bad("bad chunk size"))?;
            buf.drain(..line_end + 2);
            if size == 0 {
                // Trailers, up to an empty line.
                loop {
                    let end = loop {
                        if let Some(i) = find(buf, b"\r\n") {
                            break i;
                        }
                        read_more(stream, buf).await?;
                    };
                    buf.drain(..end + 2);
                    if end == 0 {
                        break;
                    }
                }
                break;
            }
            while buf.len() < size + 2 {
                read_more(stream, buf).await?;
            }
            body.extend_from_slice(&buf[..size]);
            buf.drain(..size + 2);
        }
        req.body = body;
    } else if let Some(n) = length {
        // Straight into room for the whole body, as much as the socket holds per read: the time a request
        // takes to arrive is what the harness benchmark measures, not 16 KiB reads and a copy.
        buf.reserve(n.saturating_sub(buf.len()));
        while buf.len() < n {
            if stream.read_buf(buf).await? == 0 {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed"));
            }
        }
        req.body = if buf.len() == n { std::mem::take(buf) } else { buf.drain(..n).collect() };
    }
    Ok(Some(req))
}

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

pub(crate) async fn write_json(
    stream: &mut TcpStream,
    status: u16,
    extra: &[(String, String)],
    body: &Value,
) -> std::io::Result<()> {
    let body = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body.as_bytes());
    stream.write_all(&out).await?;
    stream.flush().await
}

/// Writes SSE events as HTTP chunks, with an optional delay between events.
pub(crate) struct Sse<'a> {
    stream: &'a mut TcpStream,
    delay: Duration,
    sent: usize,
}

impl<'a> Sse<'a> {
    pub(crate) async fn start(
        stream: &'a mut TcpStream,
        delay: Duration,
        extra: &[(String, String)],
    ) -> std::io::Result<Sse<'a>> {
        let mut head = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n",
        );
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await?;
        stream.flush().await?;
        Ok(Sse { stream, delay, sent: 0 })
    }

    async fn raw(&mut self, data: &str) -> std::io::Result<()> {
        if self.sent > 0 && !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.sent += 1;
        let chunk = format!("{:x}\r\n{data}\r\n", data.len());
        self.stream.write_all(chunk.as_bytes()).await?;
        self.stream.flush().await
    }

    /// `event: NAME\ndata: JSON\n\n`
    pub(crate) async fn event(&mut self, name: &str, data: &Value) -> std::io::Result<()> {
        self.raw(&format!("event: {name}\ndata: {data}\n\n")).await
    }

    /// `data: JSON\n\n`
    pub(crate) async fn data(&mut self, data: &str) -> std::io::Result<()> {
        self.raw(&format!("data: {data}\n\n")).await
    }

    pub(crate) async fn finish(self) -> std::io::Result<()> {
        self.stream.write_all(b"0\r\n\r\n").await?;
        self.stream.flush().await
    }
}
