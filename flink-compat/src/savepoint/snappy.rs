//! Snappy's framing format, as Flink's `SnappyStreamCompressionDecorator` writes each key
//! group of a keyed state file when snapshot compression is on (xerial's
//! `SnappyFramedOutputStream`): a stream identifier chunk (`0xff`, length 6, `sNaPpY`), then
//! chunks of compressed or uncompressed data behind a masked CRC-32C of the uncompressed
//! bytes. Decoded by the `snap` crate's `FrameDecoder`, which checks every chunk's length
//! (at most 64 KiB uncompressed) and CRC.

use std::io::Read;

use typeinfo::{Error, Result};

/// The stream identifier chunk that starts a framed stream.
const STREAM_IDENTIFIER: &[u8] = b"\xff\x06\x00\x00sNaPpY";

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
    if !data.starts_with(STREAM_IDENTIFIER) {
        return Err(corrupt("no stream identifier"));
    }
    let mut out = Vec::new();
    snap::read::FrameDecoder::new(data)
        .read_to_end(&mut out)
        .map_err(corrupt)?;
    Ok(out)
}

/// Uncompresses the chunks of a framed snappy stream from a chunk boundary inside it (an
/// offset that `CompressibleFSDataOutputStream.getPos` gave: no stream identifier there).
///
/// # Errors
///
/// As [`decompress_framed`], but a stream identifier is not required.
pub fn decompress_chunks_from(data: &[u8]) -> Result<Vec<u8>> {
    if data.starts_with(STREAM_IDENTIFIER) {
        return decompress_framed(data);
    }
    let stream = STREAM_IDENTIFIER.chain(data);
    let mut out = Vec::new();
    snap::read::FrameDecoder::new(stream)
        .read_to_end(&mut out)
        .map_err(corrupt)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(text: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut encoder = snap::write::FrameEncoder::new(&mut out);
        std::io::Write::write_all(&mut encoder, text).expect("encode");
        drop(encoder);
        out
    }

    #[test]
    fn a_framed_stream_uncompresses_whole_and_from_a_chunk_boundary() -> Result<()> {
        let text = b"abcabcabcabc".repeat(100);
        let data = framed(&text);
        assert_eq!(decompress_framed(&data)?, text);
        assert_eq!(
            decompress_chunks_from(&data[STREAM_IDENTIFIER.len()..])?,
            text
        );
        Ok(())
    }

    #[test]
    fn corrupt_streams_are_errors() {
        let good = framed(b"abcabcabcabc");
        // Cut anywhere but at a chunk boundary (0, and after the identifier).
        for cut in (1..good.len()).filter(|&c| c != STREAM_IDENTIFIER.len()) {
            assert!(decompress_framed(&good[..cut]).is_err(), "{cut}");
        }
        let mut bad_crc = good.clone();
        bad_crc[STREAM_IDENTIFIER.len() + 4] ^= 1;
        assert!(decompress_framed(&bad_crc).is_err());
        assert!(decompress_framed(&good[STREAM_IDENTIFIER.len()..]).is_err());
    }
}
