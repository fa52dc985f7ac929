//! Histograms carried in reports losslessly: HdrHistogram's V2 serialization (the format every
//! HdrHistogram implementation reads), base64. Shard reports carry them so `merge` can add them:
//! a merged percentile is then exact to the histogram's precision, never an average of percentiles.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::{Counter, Histogram};

/// What the report's `histograms.format` says.
pub const FORMAT: &str = "HdrHistogram V2, base64 (standard alphabet), nanoseconds";

/// V2, base64. An empty string for a histogram that cannot be written (never for ours).
pub fn encode<T: Counter>(h: &Histogram<T>) -> String {
    let mut bytes = Vec::new();
    match V2Serializer::new().serialize(h, &mut bytes) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(bytes),
        Err(_) => String::new(),
    }
}

/// The histogram `encode` wrote; an error that says what was wrong for anything else.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    decode_as(text)
}

/// [`decode`] into a histogram of another counter (the per-shape ones count in `u32`).
pub fn decode_as<T: Counter>(text: &str) -> Result<Histogram<T>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    check_v2_length(&bytes)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| {
            format!(
                "histogram is not HdrHistogram V2: {}",
                deserialize_error(&e)
            )
        })
}

/// What the deserializer found wrong, in words (its own Debug text reads
/// `IoError(Error { kind: UnexpectedEof, ... })`).
fn deserialize_error(e: &hdrhistogram::serialization::DeserializeError) -> &'static str {
    use hdrhistogram::serialization::DeserializeError as E;
    match e {
        E::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "its counts end before the payload does (truncated)"
        }
        E::IoError(_) => "its payload does not read",
        E::InvalidCookie => "its first 4 bytes are not a V2 cookie",
        E::UnsupportedFeature => "it uses a feature this reader does not support",
        E::UnsuitableCounterType => "a count is larger than the counter holds",
        E::InvalidParameters => "its lowest or highest trackable value is out of range",
        E::UsizeTypeTooSmall => "it has more counts than this machine can index",
        E::EncodedArrayTooLong => "it has more counts than its value range holds",
    }
}

/// The uncompressed V2 layout `encode` writes: a 40-byte header whose second word is the
/// payload's length, which the deserializer allocates as declared (it must be the bytes present),
/// and whose fourth the significant digits, which size the counts (ours keep 1 to 3: at most
/// 56k counts for any range; 5 would be 6.3M).
fn check_v2_length(bytes: &[u8]) -> Result<(), String> {
    const V2_COOKIE: u32 = 0x1c84_9313;
    const HEADER: usize = 40;
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    };
    match (word(0), word(4), word(12)) {
        (_, _, Some(digits)) if digits > 3 => Err(format!(
            "histogram keeps {digits} significant digits, more than any report's (3)"
        )),
        (Some(V2_COOKIE), Some(declared), _) if bytes.len() >= HEADER => {
            let present = bytes.len() - HEADER;
            if declared as usize > present {
                return Err(format!(
                    "histogram declares a {declared}-byte payload, {present} bytes are present"
                ));
            }
            Ok(())
        }
        _ => Err(format!(
            "histogram is not uncompressed HdrHistogram V2 ({} bytes)",
            bytes.len()
        )),
    }
}

/// `into += from`, widening `into` when `from` holds larger values. False when they cannot be added.
pub fn add(into: &mut Histogram<u64>, from: &Histogram<u64>) -> bool {
    into.add(from).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::summary::new_ns_histogram;

    #[test]
    fn a_histogram_survives_the_report() {
        let mut h = new_ns_histogram();
        for v in [150u64, 1_000, 25_000, 25_001, 3_000_000, 900_000_000] {
            h.record(v).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back, h);
        for q in [0.5, 0.9, 0.99, 0.999] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode("not base64 !!").is_err());
        // 40 bytes whose length word says 0xFFFFFFFF: refused before the 4 GiB buffer.
        let mut forged = vec![0u8; 40];
        forged[..4].copy_from_slice(&0x1c84_9313u32.to_be_bytes());
        forged[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let text = base64::engine::general_purpose::STANDARD.encode(&forged);
        let e = decode(&text).unwrap_err();
        assert!(e.contains("4294967295-byte payload, 0 bytes"), "{e}");
        assert!(decode("AAAA").is_err());
        assert!(decode("").is_err());
    }

    #[test]
    fn a_truncated_payload_is_said_in_words() {
        let mut h = new_ns_histogram();
        h.record_n(1_000, 100_000).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut bytes = b64.decode(encode(&h)).unwrap();
        // The last count's varint cut in two, the length word saying so.
        bytes.pop();
        let payload = (bytes.len() - 40) as u32;
        bytes[4..8].copy_from_slice(&payload.to_be_bytes());
        let e = decode(&b64.encode(&bytes)).unwrap_err();
        assert!(e.contains("counts end before the payload does"), "{e}");
        assert!(!e.contains("Error {") && !e.contains("IoError"), "{e}");
    }
}
