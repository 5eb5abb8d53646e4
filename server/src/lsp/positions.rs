//! Positions in a document's text as LSP counts them: lines, and characters in the negotiated encoding.

use tower_lsp_server::ls_types::{Position, PositionEncodingKind, Range};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// UTF-8 when the client offers it (no conversion needed), else UTF-16 as LSP requires.
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Encoding {
        let offered = offered.unwrap_or(&[]);
        if offered.contains(&PositionEncodingKind::UTF8) {
            Encoding::Utf8
        } else if offered.is_empty() || offered.contains(&PositionEncodingKind::UTF16) {
            Encoding::Utf16
        } else if offered.contains(&PositionEncodingKind::UTF32) {
            Encoding::Utf32
        } else {
            Encoding::Utf16
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
            Encoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    fn width(self, c: char) -> usize {
        match self {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
            Encoding::Utf32 => 1,
        }
    }
}

/// Byte offset of an LSP position; positions past a line's end clamp to it, past the text to its end.
pub fn offset_of(text: &str, pos: Position, enc: Encoding) -> usize {
    let mut line_start = 0;
    for _ in 0..pos.line {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    let line_end = text[line_start..].find('\n').map(|i| line_start + i).unwrap_or(text.len());
    let line = text[line_start..line_end].strip_suffix('\r').unwrap_or(&text[line_start..line_end]);
    let mut units = 0usize;
    for (i, c) in line.char_indices() {
        if units >= pos.character as usize {
            return line_start + i;
        }
        units += enc.width(c);
    }
    line_start + line.len()
}

/// LSP position of a byte offset (which must fall on a char boundary).
pub fn position_of(text: &str, offset: usize, enc: Encoding) -> Position {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let character = before[line_start..].chars().map(|c| enc.width(c)).sum::<usize>() as u32;
    Position { line, character }
}

pub fn range_of(text: &str, bytes: std::ops::Range<usize>, enc: Encoding) -> Range {
    Range { start: position_of(text, bytes.start, enc), end: position_of(text, bytes.end, enc) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_in_each_encoding() {
        let text = "a😀b\r\nsecond ünïcode\nlast";
        for enc in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            for (off, _) in text.char_indices().filter(|(i, _)| text.is_char_boundary(*i)) {
                if text[..off].ends_with('\r') {
                    continue; // inside a CRLF pair
                }
                let pos = position_of(text, off, enc);
                assert_eq!(offset_of(text, pos, enc), off, "{enc:?} {off} {pos:?}");
            }
        }
        assert_eq!(position_of(text, text.find('b').unwrap(), Encoding::Utf16).character, 3);
        assert_eq!(position_of(text, text.find('b').unwrap(), Encoding::Utf8).character, 5);
        assert_eq!(position_of(text, text.find('b').unwrap(), Encoding::Utf32).character, 2);
        // Past the end of a line clamps to it (before the CR).
        assert_eq!(offset_of(text, Position { line: 0, character: 99 }, Encoding::Utf16), text.find('\r').unwrap());
        assert_eq!(offset_of(text, Position { line: 9, character: 0 }, Encoding::Utf16), text.len());
    }
}
