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
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram is not HdrHistogram V2: {e:?}"))
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
        assert!(decode("AAAA").is_err());
        assert!(decode("").is_err());
    }
}
