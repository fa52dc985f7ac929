//! The credential scan's view of an OP_COMPRESSED message: inflated piece by piece, never held
//! whole, looked at for a few needles, stopped at the first.

use super::{wrapped, Compressor};
use crate::wire::error::WireError;
use crate::wire::header::HEADER_LEN;
use std::io::Read;

/// Inflated bytes a scan holds at a time (plus the tail of the piece before).
const SCAN_CHUNK: usize = 64 * 1024;

/// Whether the inner message of an OP_COMPRESSED `message` holds any of `needles`, found by
/// inflating it piece by piece (each needle is a BSON key with its NUL, `b"pwd\0"`: the scan
/// anchors on NULs): memory stays at one chunk whatever the declared size, and the
/// work stops at the first needle (`Ok(true)`). `Ok(false)` means every byte of the payload was
/// inflated and looked at: it inflates to exactly its declared size and holds none of them. A
/// payload that does not inflate, inflates past or short of its declared size, or has bytes after
/// its compressed stream is an error: what it holds cannot be vouched for.
pub fn inflated_contains(message: &[u8], needles: &[&[u8]]) -> Result<bool, WireError> {
    let (w, payload) = wrapped(message)?;
    let mut scan = NeedleScan::new(needles);
    let fail = |detail: String| WireError::Decompress {
        compressor: w.compressor.name(),
        detail,
    };
    let inflated = match w.compressor {
        Compressor::Noop => {
            if scan.slice(payload) {
                return Ok(true);
            }
            payload.len()
        }
        // Snappy's raw format says its length up front and amplifies at most ~21x (a 3-byte copy
        // yields 64 bytes), so it is inflated whole, within the declared size.
        Compressor::Snappy => {
            let len = snap::raw::decompress_len(payload).map_err(|e| fail(e.to_string()))?;
            if len != w.declared {
                return Err(WireError::UncompressedSizeMismatch {
                    declared: w.declared,
                    actual: len,
                });
            }
            let inner = snap::raw::Decoder::new()
                .decompress_vec(payload)
                .map_err(|e| fail(e.to_string()))?;
            if scan.slice(&inner) {
                return Ok(true);
            }
            inner.len()
        }
        Compressor::Zlib => {
            let mut decoder = flate2::bufread::ZlibDecoder::new(payload);
            let Some(n) = scan
                .stream(&mut decoder, w.declared)
                .map_err(|e| fail(e.to_string()))?
            else {
                return Ok(true);
            };
            let used = usize::try_from(decoder.total_in()).unwrap_or(usize::MAX);
            if n == w.declared && used != payload.len() {
                return Err(WireError::Invalid {
                    what: "OP_COMPRESSED zlib payload",
                    offset: HEADER_LEN + 9 + used,
                    detail: format!("{} bytes after the end of the stream", payload.len() - used),
                });
            }
            n
        }
        Compressor::Zstd => {
            let mut decoder = zstd::stream::read::Decoder::with_buffer(payload)
                .map_err(|e| fail(e.to_string()))?;
            match scan
                .stream(&mut decoder, w.declared)
                .map_err(|e| fail(e.to_string()))?
            {
                Some(n) => n,
                None => return Ok(true),
            }
        }
    };
    if inflated != w.declared {
        return Err(WireError::UncompressedSizeMismatch {
            declared: w.declared,
            actual: inflated,
        });
    }
    Ok(false)
}

/// Looks for needles, each ending in a NUL (BSON keys: `name\0`), in a stream seen one piece at a
/// time: one `memchr` pass for the NULs, then a comparison at each, so the cost does not grow with
/// the number of needles. The last `needle - 1` bytes of each piece are kept in front of the
/// next, so a needle cut in two is still found.
struct NeedleScan<'n> {
    needles: &'n [&'n [u8]],
    keep: usize,
    buf: Vec<u8>,
}

impl<'n> NeedleScan<'n> {
    fn new(needles: &'n [&'n [u8]]) -> NeedleScan<'n> {
        debug_assert!(needles.iter().all(|n| n.last() == Some(&0)));
        let longest = needles.iter().map(|n| n.len()).max().unwrap_or(0);
        NeedleScan {
            needles,
            keep: longest.saturating_sub(1),
            buf: Vec::new(),
        }
    }

    fn slice(&self, haystack: &[u8]) -> bool {
        crate::wire::bson_raw::holds_any_key(haystack, self.needles)
    }

    /// Reads `reader` to its end, or one byte past `declared`: the bytes read, or `None` as soon
    /// as a needle is found.
    fn stream(
        &mut self,
        reader: &mut impl Read,
        declared: usize,
    ) -> std::io::Result<Option<usize>> {
        let mut reader = reader.take(declared as u64 + 1);
        self.buf.resize(self.keep + SCAN_CHUNK, 0);
        let (mut held, mut total) = (0, 0);
        loop {
            let n = match reader.read(&mut self.buf[held..]) {
                Ok(0) => return Ok(Some(total)),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            total += n;
            let end = held + n;
            if self.slice(&self.buf[..end]) {
                return Ok(None);
            }
            held = end.min(self.keep);
            self.buf.copy_within(end - held..end, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::compress;
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg, Section};
    use bson::rawdoc;

    fn inner() -> Vec<u8> {
        OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![Section::Body(
                rawdoc! { "find": "c", "filter": { "x": "a".repeat(300) }, "$db": "bench" },
            )],
            checksum: None,
        }
        .encode(42, 0)
    }

    /// An insert of `len` letters with `needle` at `at`, compressed.
    fn with_needle_at(c: Compressor, len: usize, at: usize, needle: &str) -> Vec<u8> {
        let mut s = "x".repeat(len);
        s.replace_range(at..at + needle.len(), needle);
        let msg = OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![Section::Body(rawdoc! { "insert": "c", "s": s })],
            checksum: None,
        }
        .encode(1, 0);
        compress(&msg, c).unwrap()
    }

    #[test]
    fn the_scan_finds_a_needle_anywhere_even_cut_between_two_pieces() {
        for c in [
            Compressor::Noop,
            Compressor::Snappy,
            Compressor::Zlib,
            Compressor::Zstd,
        ] {
            let clean = with_needle_at(c, 300_000, 0, "x");
            assert_eq!(
                inflated_contains(&clean, &[b"pwd\0"]),
                Ok(false),
                "{}",
                c.name()
            );
            // The string starts 30 bytes into the inflated body: across the first and the third
            // 64 KiB boundary when the decoder hands out whole chunks.
            for at in [0, SCAN_CHUNK - 33, 3 * SCAN_CHUNK - 32, 299_990] {
                let packed = with_needle_at(c, 300_000, at, "needle\0");
                assert_eq!(
                    inflated_contains(&packed, &[b"pwd\0", b"needle\0"]),
                    Ok(true),
                    "{} at {at}",
                    c.name()
                );
            }
        }
    }

    /// Hands out at most `step` bytes per read.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_needle_cut_between_reads_is_found() {
        let mut stream = vec![b'x'; 64];
        for at in 0..=stream.len() - 7 {
            stream.fill(b'x');
            stream[at..at + 7].copy_from_slice(b"needle\0");
            for step in 1..9 {
                let mut scan = NeedleScan::new(&[b"pwd\0", b"needle\0"]);
                let found = scan.stream(&mut Trickle(&stream, step), 64).unwrap();
                assert_eq!(found, None, "at {at}, {step} bytes a read");
            }
        }
        let mut scan = NeedleScan::new(&[b"needle\0"]);
        stream.fill(b'x');
        assert_eq!(scan.stream(&mut Trickle(&stream, 5), 64).unwrap(), Some(64));
        assert_eq!(scan.stream(&mut Trickle(&stream, 5), 10).unwrap(), Some(11));
    }

    #[test]
    fn the_scan_vouches_only_for_a_payload_inflated_whole_to_its_declared_size() {
        let msg = inner();
        for c in [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd] {
            let packed = compress(&msg, c).unwrap();
            assert_eq!(inflated_contains(&packed, &[b"nothing\0"]), Ok(false));
            for delta in [-1, 1, 100] {
                let mut lying = packed.clone();
                let size = (msg.len() - HEADER_LEN) as i32 + delta;
                lying[20..24].copy_from_slice(&size.to_le_bytes());
                assert!(
                    inflated_contains(&lying, &[b"nothing\0"]).is_err(),
                    "{} {delta:+}",
                    c.name()
                );
            }
            let mut cut = packed.clone();
            cut.truncate(packed.len() - 3);
            let len = cut.len() as i32;
            cut[..4].copy_from_slice(&len.to_le_bytes());
            assert!(
                inflated_contains(&cut, &[b"nothing\0"]).is_err(),
                "{}",
                c.name()
            );
        }
        // Bytes after the end of a zlib stream are read by no decoder and checked by no one.
        let mut trailing = compress(&msg, Compressor::Zlib).unwrap();
        trailing.extend_from_slice(b"pwd\0 hidden after the stream");
        let len = trailing.len() as i32;
        trailing[..4].copy_from_slice(&len.to_le_bytes());
        assert!(matches!(
            inflated_contains(&trailing, &[b"nothing\0"]),
            Err(WireError::Invalid { .. })
        ));
    }

    #[test]
    fn the_scan_stops_at_the_declared_size_of_a_bomb() {
        // 40 MB of one letter declared as 100 bytes: an error after at most 101 bytes inflated.
        let big = OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![Section::Body(rawdoc! { "s": "a".repeat(40 << 20) })],
            checksum: None,
        }
        .encode(1, 0);
        for c in [Compressor::Zlib, Compressor::Zstd] {
            let mut bomb = compress(&big, c).unwrap();
            bomb[20..24].copy_from_slice(&100i32.to_le_bytes());
            assert_eq!(
                inflated_contains(&bomb, &[b"nothing\0"]),
                Err(WireError::UncompressedSizeMismatch {
                    declared: 100,
                    actual: 101
                })
            );
        }
    }
}
