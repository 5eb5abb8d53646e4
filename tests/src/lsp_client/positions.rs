//! LSP positions in each encoding and `file://` URIs, computed the editor's way (independent of the server's).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// The position encoding negotiated in `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PosEncoding {
    Utf8,
    Utf16,
    Utf32,
}

impl PosEncoding {
    pub fn parse(s: &str) -> Option<PosEncoding> {
        match s {
            "utf-8" => Some(PosEncoding::Utf8),
            "utf-16" => Some(PosEncoding::Utf16),
            "utf-32" => Some(PosEncoding::Utf32),
            _ => None,
        }
    }

    fn units(self, c: char) -> usize {
        match self {
            PosEncoding::Utf8 => c.len_utf8(),
            PosEncoding::Utf16 => c.len_utf16(),
            PosEncoding::Utf32 => 1,
        }
    }
}

/// Byte offset of an LSP position in `text` (the editor's own arithmetic, independent of the server's).
/// A character past the end of its line clamps to the line end; a line past the end clamps to the text end.
pub fn offset_at(text: &str, line: u32, character: u32, enc: PosEncoding) -> usize {
    let mut start = 0usize;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let content_end = if end > start && text.as_bytes()[end - 1] == b'\r' { end - 1 } else { end };
    let mut units = 0usize;
    for (i, c) in text[start..content_end].char_indices() {
        if units >= character as usize {
            return start + i;
        }
        units += enc.units(c);
    }
    content_end
}

/// LSP position `(line, character)` of a byte offset.
pub fn position_at(text: &str, offset: usize, enc: PosEncoding) -> (u32, u32) {
    let before = &text[..offset];
    let line = before.bytes().filter(|b| *b == b'\n').count() as u32;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let character: usize = before[line_start..].chars().map(|c| enc.units(c)).sum();
    (line, character as u32)
}

/// An LSP range value.
pub fn range(start: (u32, u32), end: (u32, u32)) -> Value {
    json!({"start": {"line": start.0, "character": start.1}, "end": {"line": end.0, "character": end.1}})
}

pub(crate) fn pos_of(v: &Value) -> (u32, u32) {
    (
        v.get("line").and_then(Value::as_u64).unwrap_or(0) as u32,
        v.get("character").and_then(Value::as_u64).unwrap_or(0) as u32,
    )
}

/// `file://` URI of an absolute path, percent-encoding what URIs do not allow.
pub fn file_uri(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of a `file://` URI.
pub fn uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}
