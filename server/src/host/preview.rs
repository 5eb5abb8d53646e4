//! `read_file` on disk without reading more than it shows: the seed's output (the first `limit` lines
//! and a count of the rest, at most `READ_CAP` characters) from a stream. The kept part is bounded by
//! the cap; the rest of the file is only counted, so a 512 MB log costs a scan, not 512 MB.

use std::io::Read;

use super::output::truncate_chars;

/// What read_file shows at most (the seed's cap).
pub const READ_CAP: usize = 50_000;

/// What `read_file` shows, and a fingerprint of the whole text it was read from, where the read saw all of
/// it (`text_hash`): a session remembers it, so `write_file` can tell the file changed since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub text: String,
    pub whole: Option<u64>,
}

impl Preview {
    /// The preview of a text in memory (an editor buffer), which is whole.
    pub fn of(text: &str, limit: Option<u64>) -> Preview {
        Preview { text: read_with_limit(text, limit), whole: Some(text_hash(text.as_bytes())) }
    }
}

/// A fingerprint of a text's bytes (SipHash with fixed keys: the same bytes, the same number, for this
/// process's life; written in pieces or at once alike). It tells a changed file from an unchanged one; it
/// is no defence against a chosen collision.
pub fn text_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    h.write(bytes);
    h.finish()
}

/// The seed's `read_file` over text already in memory (an editor buffer).
pub fn read_with_limit(text: &str, limit: Option<u64>) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let out = match limit {
        Some(limit) if limit > 0 && (limit as usize) < lines.len() => {
            let limit = limit as usize;
            let mut s = lines[..limit].join("\n");
            s.push_str(&format!("\n... ({} more lines)", lines.len() - limit));
            s
        }
        _ => lines.join("\n"),
    };
    truncate_chars(&out, READ_CAP).to_string()
}

/// The same from a reader, with the whole text's fingerprint when the stream was read to its end. `Err`
/// names only the problem (the caller adds the path).
pub fn read_stream(mut r: impl Read, limit: Option<u64>) -> Result<Preview, PreviewError> {
    use std::hash::Hasher;
    let mut whole = std::hash::DefaultHasher::new();
    let mut ended = false;
    // Enough bytes for READ_CAP characters of UTF-8, and a line ending past them.
    let keep_max = READ_CAP * 4 + 4;
    let want_lines = limit.filter(|l| *l > 0);
    let mut kept: Vec<u8> = Vec::new();
    let mut kept_lines = 0u64;
    let mut keeping = true;
    let mut newlines = 0u64;
    let mut last = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => {
                ended = true;
                break;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(PreviewError::Io(e)),
        };
        let chunk = &buf[..n];
        whole.write(chunk);
        last = chunk.last().copied();
        newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        if keeping {
            for (i, b) in chunk.iter().enumerate() {
                if *b == b'\n' {
                    kept_lines += 1;
                    if want_lines.is_some_and(|l| kept_lines >= l) {
                        kept.extend_from_slice(&chunk[..=i]);
                        keeping = false;
                        break;
                    }
                }
                if kept.len() + i >= keep_max {
                    kept.extend_from_slice(&chunk[..i]);
                    keeping = false;
                    break;
                }
            }
            if keeping {
                kept.extend_from_slice(chunk);
            }
        }
        // Without a limit nothing after the cap is shown or counted: stop reading.
        if !keeping && want_lines.is_none() {
            break;
        }
    }
    let total = newlines + u64::from(last.is_some_and(|b| b != b'\n'));
    let text = match std::str::from_utf8(&kept) {
        Ok(t) => t,
        // Cut inside a character at the keep limit: drop the partial character.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&kept[..e.valid_up_to()]).unwrap_or_default(),
        Err(_) => return Err(PreviewError::NotUtf8),
    };
    let shown: Vec<&str> = match want_lines {
        Some(l) => text.lines().take(l as usize).collect(),
        None => text.lines().collect(),
    };
    let mut out = shown.join("\n");
    if let Some(l) = want_lines.filter(|l| *l < total) {
        out.push_str(&format!("\n... ({} more lines)", total - l));
    }
    let text = truncate_chars(&out, READ_CAP).to_string();
    Ok(Preview { text, whole: ended.then(|| whole.finish()) })
}

#[derive(Debug)]
pub enum PreviewError {
    Io(std::io::Error),
    NotUtf8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_limit_marker() {
        assert_eq!(read_with_limit("a\nb\nc\nd\n", Some(2)), "a\nb\n... (2 more lines)");
        assert_eq!(read_with_limit("a\nb\n", Some(5)), "a\nb");
        assert_eq!(read_with_limit("a\nb\n", Some(0)), "a\nb");
    }

    #[test]
    fn a_stream_reads_like_the_seed() {
        for text in ["a\nb\nc\nd\n", "a\nb", "", "x\r\ny\r\n", "one line", "\n\n\n", "héllo\nwörld\n"] {
            for limit in [None, Some(0), Some(1), Some(2), Some(3), Some(10)] {
                let streamed = read_stream(text.as_bytes(), limit).unwrap();
                assert_eq!(streamed, Preview::of(text, limit), "{text:?} {limit:?}");
            }
        }
    }

    #[test]
    fn a_huge_stream_is_counted_not_kept() {
        // 2 million lines, through a reader that would make memory obvious if it were all kept.
        let lines = 2_000_000u64;
        let reader = std::io::repeat(b'\n').take(lines);
        assert_eq!(read_stream(reader, Some(3)).unwrap().text, format!("\n\n\n... ({} more lines)", lines - 3));
        let long = std::io::repeat(b'x').take(10 * 1024 * 1024);
        let cut = read_stream(long, None).unwrap();
        assert_eq!((cut.text.len(), cut.whole), (READ_CAP, None), "not read to the end: no fingerprint");
    }

    #[test]
    fn not_utf8_is_an_error() {
        assert!(matches!(read_stream(&b"ok\n\xff\xfe\n"[..], None), Err(PreviewError::NotUtf8)));
    }
}
