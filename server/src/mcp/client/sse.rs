//! Server-sent events as they arrive, by the HTML standard's rules (lines end in LF, CRLF or CR; `data:`
//! lines joined by LF; an event ends at a blank line; comments and the fields MCP's answers do not need,
//! `id` and `retry`, passed over). Bounded: an event larger than `max` is refused, not buffered.

/// An event larger than the bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge;

pub struct Events {
    max: usize,
    line: Vec<u8>,
    data: Vec<u8>,
    kind: Vec<u8>,
    /// The event (or a line of it) passed `max`.
    too_big: bool,
    /// The last bytes ended with CR: an LF first in the next ones ends nothing more.
    after_cr: bool,
}

impl Events {
    pub fn new(max: usize) -> Events {
        Events { max, line: Vec::new(), data: Vec::new(), kind: Vec::new(), too_big: false, after_cr: false }
    }

    /// Takes the next bytes; the `message` events they complete: their data, or `TooLarge`.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Vec<Result<String, TooLarge>> {
        let mut out = Vec::new();
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', bytes) {
            self.push(&bytes[..i]);
            self.end_line(&mut out);
            let crlf = bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n');
            self.after_cr = bytes[i] == b'\r' && i + 1 == bytes.len();
            bytes = &bytes[i + if crlf { 2 } else { 1 }..];
        }
        self.push(bytes);
        out
    }

    fn push(&mut self, part: &[u8]) {
        if self.line.len() + part.len() > self.max {
            self.too_big = true;
        } else {
            self.line.extend_from_slice(part);
        }
    }

    fn end_line(&mut self, out: &mut Vec<Result<String, TooLarge>>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
        } else if line[0] != b':' {
            let (field, value) = match memchr::memchr(b':', &line) {
                Some(i) => (&line[..i], line[i + 1..].strip_prefix(b" ").unwrap_or(&line[i + 1..])),
                None => (&line[..], &[][..]),
            };
            match field {
                b"data" if self.data.len() + value.len() < self.max => {
                    self.data.extend_from_slice(value);
                    self.data.push(b'\n');
                }
                b"data" => self.too_big = true,
                b"event" => self.kind = value.to_vec(),
                _ => {}
            }
        }
        self.line = line;
        self.line.clear();
    }

    fn dispatch(&mut self, out: &mut Vec<Result<String, TooLarge>>) {
        let message = self.kind.is_empty() || self.kind == b"message";
        if self.too_big {
            out.push(Err(TooLarge));
        } else if message && !self.data.trim_ascii().is_empty() {
            self.data.pop();
            out.push(Ok(String::from_utf8_lossy(&self.data).into_owned()));
        }
        self.data.clear();
        self.kind.clear();
        self.too_big = false;
    }
}
