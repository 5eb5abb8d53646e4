//! Real image files for the tests: a PNG of any size in one colour (stored, not compressed: no codec
//! needed to make one, and every viewer reads it), and base64 as the wire formats carry it.

use base64::Engine;

/// A `w` x `h` PNG filled with `rgb`.
pub fn png(w: u32, h: u32, rgb: [u8; 3]) -> Vec<u8> {
    // Each row: its filter (none), then the pixels.
    let row: Vec<u8> = std::iter::once(0).chain(rgb.iter().copied().cycle().take(3 * w as usize)).collect();
    let raw = row.repeat(h as usize);
    let mut ihdr = Vec::new();
    ihdr.extend(w.to_be_bytes());
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]); // 8-bit RGB
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &zlib_stored(&raw));
    chunk(&mut out, b"IEND", &[]);
    out
}

/// `bytes` in standard base64.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend(crc.to_be_bytes());
}

/// A zlib stream of stored (uncompressed) deflate blocks.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = if data.is_empty() { vec![&[]] } else { data.chunks(65_535).collect() };
    for (i, block) in blocks.iter().enumerate() {
        out.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + byte as u32) % 65_521;
        b = (b + a) % 65_521;
    }
    out.extend(((b << 16) | a).to_be_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &byte in data {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_classic_one_pixel_png() {
        // The well-known 1x1 red PNG differs only in its compressed IDAT; the header and IEND are standard.
        let p = super::png(1, 1, [255, 0, 0]);
        assert_eq!(&p[..16], b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR");
        assert_eq!(&p[p.len() - 12..], b"\0\0\0\0IEND\xae\x42\x60\x82", "IEND with its CRC");
        assert_eq!(super::crc32(b"IHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0"), 0x9077_53de);
    }
}
