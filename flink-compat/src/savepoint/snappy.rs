//! Snappy's framing format, as Flink's `SnappyStreamCompressionDecorator` writes each key
//! group of a keyed state file when snapshot compression is on (xerial's
//! `SnappyFramedOutputStream`): a stream identifier chunk (`0xff`, length 6, `sNaPpY`), then
//! chunks of a type byte, a 3-byte little-endian length and the body: compressed (type 0)
//! or uncompressed (type 1) data behind a masked CRC-32C of the uncompressed bytes; padding
//! and skippable chunks (`0x80..=0xfe`) are skipped.
//!
//! The raw snappy decoder is bounded: a chunk's uncompressed length is capped, a copy never
//! reaches before the start or past the announced length, and the CRC is checked.

use typeinfo::{Error, Result};

/// The most bytes one chunk may uncompress to (the framing format's limit is 65536; some
/// writers use larger blocks).
const MAX_CHUNK: usize = 1 << 20;

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::custom(format!("corrupt snappy stream: {what}"))
}

/// Uncompresses a framed snappy stream.
///
/// # Errors
///
/// A missing stream identifier, a reserved chunk type, a short chunk, a bad CRC, corrupt
/// compressed data.
pub fn decompress_framed(data: &[u8]) -> Result<Vec<u8>> {
    decompress_chunks(data, true)
}

/// Uncompresses the chunks of a framed snappy stream from a chunk boundary inside it (an
/// offset that `CompressibleFSDataOutputStream.getPos` gave: no stream identifier there).
///
/// # Errors
///
/// As [`decompress_framed`], but a stream identifier is not required.
pub fn decompress_chunks_from(data: &[u8]) -> Result<Vec<u8>> {
    decompress_chunks(data, false)
}

fn decompress_chunks(mut data: &[u8], mut first: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        if data.len() < 4 {
            return Err(corrupt("a chunk header is cut short"));
        }
        let kind = data[0];
        let len = usize::from(data[1]) | usize::from(data[2]) << 8 | usize::from(data[3]) << 16;
        let body = data
            .get(4..4 + len)
            .ok_or_else(|| corrupt(format!("a chunk of {len} bytes is cut short")))?;
        data = &data[4 + len..];
        if first && (kind != 0xff || body != b"sNaPpY") {
            return Err(corrupt("no stream identifier"));
        }
        first = false;
        match kind {
            0xff if body == b"sNaPpY" => {}
            0x00 | 0x01 => {
                let crc = body
                    .get(..4)
                    .ok_or_else(|| corrupt("a data chunk without its checksum"))?;
                let start = out.len();
                if kind == 0 {
                    decompress_raw(&body[4..], &mut out)?;
                } else {
                    out.extend_from_slice(&body[4..]);
                }
                let expected = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
                if masked_crc32c(&out[start..]) != expected {
                    return Err(corrupt("a chunk's checksum does not match"));
                }
            }
            0x80..=0xfe => {}
            other => return Err(corrupt(format!("reserved chunk type {other:#04x}"))),
        }
    }
    Ok(out)
}

fn read_varint(data: &[u8], pos: &mut usize) -> Result<usize> {
    let mut value = 0usize;
    for shift in (0..35).step_by(7) {
        let b = *data
            .get(*pos)
            .ok_or_else(|| corrupt("a cut-short length"))?;
        *pos += 1;
        value |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(corrupt("an overlong length"))
}

fn le(data: &[u8], pos: &mut usize, n: usize) -> Result<usize> {
    let bytes = data
        .get(*pos..*pos + n)
        .ok_or_else(|| corrupt("a cut-short tag"))?;
    *pos += n;
    Ok(bytes
        .iter()
        .rev()
        .fold(0usize, |acc, &b| acc << 8 | usize::from(b)))
}

/// Uncompresses one raw snappy block, appending to `out`.
fn decompress_raw(data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let mut pos = 0;
    let len = read_varint(data, &mut pos)?;
    if len > MAX_CHUNK {
        return Err(corrupt(format!("a chunk of {len} uncompressed bytes")));
    }
    let start = out.len();
    let end = start + len;
    out.reserve(len);
    while pos < data.len() {
        let tag = data[pos];
        pos += 1;
        let (length, offset) = match tag & 3 {
            0 => {
                let mut n = usize::from(tag >> 2);
                if n >= 60 {
                    n = le(data, &mut pos, n - 59)?;
                }
                let literal = data
                    .get(pos..pos + n + 1)
                    .ok_or_else(|| corrupt("a cut-short literal"))?;
                pos += n + 1;
                if out.len() + literal.len() > end {
                    return Err(corrupt("more bytes than announced"));
                }
                out.extend_from_slice(literal);
                continue;
            }
            1 => (
                4 + usize::from((tag >> 2) & 7),
                usize::from(tag >> 5) << 8 | le(data, &mut pos, 1)?,
            ),
            2 => (1 + usize::from(tag >> 2), le(data, &mut pos, 2)?),
            _ => (1 + usize::from(tag >> 2), le(data, &mut pos, 4)?),
        };
        if offset == 0 || offset > out.len() - start || out.len() + length > end {
            return Err(corrupt(format!(
                "a copy of {length} bytes from {offset} back"
            )));
        }
        for _ in 0..length {
            out.push(out[out.len() - offset]);
        }
    }
    if out.len() != end {
        return Err(corrupt(format!(
            "{} bytes where {len} were announced",
            out.len() - start
        )));
    }
    Ok(())
}

fn masked_crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    let crc = !crc;
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(chunk_type: u8, body: &[u8], uncompressed: &[u8]) -> Vec<u8> {
        let mut out = vec![0xff, 6, 0, 0];
        out.extend_from_slice(b"sNaPpY");
        let len = body.len() + 4;
        out.extend_from_slice(&[chunk_type, len as u8, (len >> 8) as u8, 0]);
        out.extend_from_slice(&masked_crc32c(uncompressed).to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn crc32c_matches_the_reference() {
        // CRC-32C("123456789") = 0xe3069283.
        let crc = masked_crc32c(b"123456789")
            .wrapping_sub(0xa282_ead8)
            .rotate_left(15);
        assert_eq!(crc, 0xe306_9283);
    }

    #[test]
    fn literals_and_copies_uncompress() -> Result<()> {
        // "abcabcabcabc": 12 bytes; literal "abc", then a copy of 9 bytes 3 back.
        let raw = [12, 2 << 2, b'a', b'b', b'c', (8 << 2) | 2, 3, 0];
        let data = framed(0, &raw, b"abcabcabcabc");
        assert_eq!(decompress_framed(&data)?, b"abcabcabcabc");
        let plain = framed(1, b"xyz", b"xyz");
        assert_eq!(decompress_framed(&plain)?, b"xyz");
        Ok(())
    }

    #[test]
    fn corrupt_streams_are_errors() {
        let raw = [12, 2 << 2, b'a', b'b', b'c', (8 << 2) | 2, 3, 0];
        let good = framed(0, &raw, b"abcabcabcabc");
        // Cut anywhere but at a chunk boundary (0, and 10 after the identifier).
        for cut in (1..good.len()).filter(|&c| c != 10) {
            assert!(decompress_framed(&good[..cut]).is_err(), "{cut}");
        }
        let mut bad_copy = good.clone();
        let n = bad_copy.len();
        bad_copy[n - 2] = 9;
        assert!(decompress_framed(&bad_copy).is_err());
        let mut bad_crc = good;
        bad_crc[14] ^= 1;
        assert!(decompress_framed(&bad_crc).is_err());
    }
}
