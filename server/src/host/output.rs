//! Bounded text: what a tool keeps of output that may be endless (`yes`) or huge (a log file).

use std::collections::VecDeque;

/// The first `max` characters of `s`.
pub fn truncate_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Keeps the head and the tail of a byte stream, each up to `4 * chars` bytes (enough for `chars`
/// characters of UTF-8), and counts everything; memory stays bounded however much arrives.
pub struct Bounded {
    cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Bounded {
    pub fn new(chars: usize) -> Bounded {
        let cap = chars.saturating_mul(4).max(4);
        Bounded { cap, head: Vec::new(), tail: VecDeque::new(), total: 0 }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.cap - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.cap {
            self.tail.clear();
            bytes = &bytes[bytes.len() - self.cap..];
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Head and tail as text (invalid UTF-8 replaced), with a note of the bytes left out between them.
    pub fn into_text(self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        let kept = (self.head.len() + self.tail.len()) as u64;
        if self.total > kept {
            text.push_str(&format!("\n... [{} bytes elided] ...\n", self.total - kept));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_tail_of_an_endless_stream() {
        let mut b = Bounded::new(10); // 40 bytes each side
        for i in 0..10_000u32 {
            b.push(format!("{i:05}\n").as_bytes());
        }
        assert_eq!(b.total(), 60_000);
        let text = b.into_text();
        assert!(text.starts_with("00000\n00001\n"), "{text}");
        assert!(text.ends_with("09999\n"), "{text}");
        assert!(text.contains("[59920 bytes elided]"), "{text}");
        assert!(text.len() < 200);
    }

    #[test]
    fn short_streams_are_kept_whole() {
        let mut b = Bounded::new(10);
        b.push(b"hello ");
        b.push(b"world");
        assert_eq!(b.into_text(), "hello world");
    }
}
