//! What an image is, read from its first bytes (its magic, not its name), and its size in pixels from its
//! header: PNG, JPEG, GIF and WebP, the formats both providers take. No decoding: nothing is scaled.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl Format {
    /// The format `head` (a file's first bytes, 12 are enough) starts like.
    pub fn sniff(head: &[u8]) -> Option<Format> {
        if head.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Format::Png)
        } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(Format::Jpeg)
        } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
            Some(Format::Gif)
        } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
            Some(Format::Webp)
        } else {
            None
        }
    }

    pub fn media_type(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Gif => "image/gif",
            Format::Webp => "image/webp",
        }
    }

    /// Width and height in pixels, from the header; `None` for a header that is cut or damaged.
    pub fn dimensions(self, b: &[u8]) -> Option<(u32, u32)> {
        let le16 = |i: usize| Some(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?]) as u32);
        let le24 = |i: usize| Some(u32::from_le_bytes([*b.get(i)?, *b.get(i + 1)?, *b.get(i + 2)?, 0]));
        let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
        let dims = match self {
            // The IHDR chunk comes first.
            Format::Png if b.get(12..16) == Some(b"IHDR") => (be32(16)?, be32(20)?),
            Format::Png => return None,
            Format::Gif => (le16(6)?, le16(8)?),
            Format::Jpeg => jpeg(b)?,
            Format::Webp => match b.get(12..16)? {
                // Lossy: a key frame's start code, then 14-bit sizes.
                b"VP8 " if b.get(23..26) == Some(&[0x9d, 0x01, 0x2a]) => (le16(26)? & 0x3fff, le16(28)? & 0x3fff),
                // Lossless: a signature byte, then 14-bit sizes less one.
                b"VP8L" if b.get(20) == Some(&0x2f) => {
                    let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
                    ((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1)
                }
                // Extended: the canvas's 24-bit sizes less one.
                b"VP8X" => (le24(24)? + 1, le24(27)? + 1),
                _ => return None,
            },
        };
        (dims.0 > 0 && dims.1 > 0).then_some(dims)
    }
}

/// A JPEG's size: from its first start-of-frame segment, walking the segments before it.
fn jpeg(b: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    loop {
        // Markers may be padded with 0xff.
        while *b.get(i)? == 0xff && *b.get(i + 1)? == 0xff {
            i += 1;
        }
        if *b.get(i)? != 0xff {
            return None;
        }
        let marker = *b.get(i + 1)?;
        // Markers without a length: TEM and the restart markers.
        if marker == 0x01 || (0xd0..=0xd7).contains(&marker) {
            i += 2;
            continue;
        }
        let len = u16::from_be_bytes([*b.get(i + 2)?, *b.get(i + 3)?]) as usize;
        let is_frame = matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
        if is_frame {
            let h = u16::from_be_bytes([*b.get(i + 5)?, *b.get(i + 6)?]) as u32;
            let w = u16::from_be_bytes([*b.get(i + 7)?, *b.get(i + 8)?]) as u32;
            return Some((w, h));
        }
        if marker == 0xd9 || marker == 0xda || len < 2 {
            // The end, or the scan before any frame header: not a JPEG this can read.
            return None;
        }
        i += 2 + len;
    }
}

#[cfg(test)]
pub(crate) mod samples {
    /// A 3x2 PNG's header (the IHDR is all that is read).
    pub fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    /// A JPEG with an APP0 segment before its frame header.
    pub fn jpeg(w: u16, h: u16) -> Vec<u8> {
        let mut b = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
        b.extend(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
        b.extend([0xff, 0xff, 0xc0, 0x00, 0x11, 0x08]);
        b.extend(h.to_be_bytes());
        b.extend(w.to_be_bytes());
        b.extend([0x03, 0x01, 0x22, 0x00]);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_by_its_magic_with_its_size() {
        let png = samples::png(640, 480);
        assert_eq!(Format::sniff(&png), Some(Format::Png));
        assert_eq!(Format::Png.dimensions(&png), Some((640, 480)));
        let jpg = samples::jpeg(1920, 1080);
        assert_eq!(Format::sniff(&jpg), Some(Format::Jpeg));
        assert_eq!(Format::Jpeg.dimensions(&jpg), Some((1920, 1080)));
        let gif = b"GIF89a\x0a\x00\x05\x00\xf0\x00\x00".to_vec();
        assert_eq!((Format::sniff(&gif), Format::Gif.dimensions(&gif)), (Some(Format::Gif), Some((10, 5))));
        // WebP: lossy, lossless and extended.
        let mut lossy = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\x10\x02\x00\x9d\x01\x2a".to_vec();
        lossy.extend([0x20, 0x03, 0x58, 0x02]);
        assert_eq!((Format::sniff(&lossy), Format::Webp.dimensions(&lossy)), (Some(Format::Webp), Some((800, 600))));
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        let bits: u32 = (100 - 1) | ((50 - 1) << 14);
        lossless.extend(bits.to_le_bytes());
        assert_eq!(Format::Webp.dimensions(&lossless), Some((100, 50)));
        let mut extended = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        extended.extend([0x3f, 0x1f, 0x00, 0x0f, 0x00, 0x00]);
        assert_eq!(Format::Webp.dimensions(&extended), Some((8000, 16)));
    }

    #[test]
    fn text_and_cut_headers_are_not_images() {
        assert_eq!(Format::sniff(b"fn main() {}"), None);
        assert_eq!(Format::sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(Format::Png.dimensions(&samples::png(1, 1)[..18]), None);
        assert_eq!(Format::Jpeg.dimensions(&[0xff, 0xd8, 0xff, 0xe0, 0x00]), None);
        assert_eq!(Format::Jpeg.dimensions(&[0xff, 0xd8, 0xff, 0xda, 0x00, 0x02]), None);
        assert_eq!(Format::Png.dimensions(&samples::png(0, 5)), None, "no side of zero");
    }
}
