//! Keyed, length-keeping replacement of string and binary values: equal inputs give equal outputs
//! under one key, so equality, cardinality and document sizes survive, and without the key the
//! original cannot be tried against the output.

use hmac::{Hmac, Mac};
use rand::{rngs::StdRng, Rng, RngCore, SeedableRng};
use sha2::Sha256;

/// Output characters of a replaced string: ASCII letters and digits, one byte each, so a
/// replacement has the byte length of the original and is valid in any regular expression.
const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// The secret of one recording. Never written anywhere.
#[derive(Clone)]
pub struct ValueKey([u8; 32]);

impl ValueKey {
    /// A fresh random key.
    pub fn random() -> ValueKey {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        ValueKey(key)
    }

    /// A fixed key, for tests that need the same output twice.
    pub fn from_bytes(key: [u8; 32]) -> ValueKey {
        ValueKey(key)
    }

    fn stream(&self, domain: &[u8], value: &[u8]) -> StdRng {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(domain);
        mac.update(&(value.len() as u64).to_le_bytes());
        mac.update(value);
        StdRng::from_seed(mac.finalize().into_bytes().into())
    }

    /// A string of the same byte length, drawn from letters and digits.
    pub fn string(&self, value: &str) -> String {
        let mut rng = self.stream(b"string", value.as_bytes());
        let out: Vec<u8> = (0..value.len())
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
            .collect();
        String::from_utf8(out).expect("ASCII letters and digits")
    }

    /// Bytes of the same length.
    pub fn bytes(&self, value: &[u8]) -> Vec<u8> {
        let mut rng = self.stream(b"binary", value);
        let mut out = vec![0u8; value.len()];
        rng.fill_bytes(&mut out);
        out
    }
}

impl std::fmt::Debug for ValueKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ValueKey(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_value_same_output_and_length() {
        let key = ValueKey::from_bytes([7; 32]);
        for s in ["", "a", "alice@example.com", "héllo wörld"] {
            let out = key.string(s);
            assert_eq!(out.len(), s.len());
            assert_eq!(out, key.string(s));
            assert!(out.bytes().all(|b| b.is_ascii_alphanumeric()));
        }
        assert_ne!(key.string("alice"), key.string("alicf"));
        assert_ne!(key.string("alice"), "alice");
        assert_eq!(key.bytes(&[1, 2, 3]).len(), 3);
        assert_eq!(key.bytes(&[1, 2, 3]), key.bytes(&[1, 2, 3]));
    }

    #[test]
    fn another_key_another_output() {
        let a = ValueKey::from_bytes([1; 32]);
        let b = ValueKey::from_bytes([2; 32]);
        assert_ne!(
            a.string("some customer name"),
            b.string("some customer name")
        );
        // A string and a binary of the same bytes do not map alike.
        assert_ne!(a.string("abcd").as_bytes(), a.bytes(b"abcd").as_slice());
    }

    #[test]
    fn distinct_values_stay_distinct() {
        let key = ValueKey::random();
        let outputs: std::collections::HashSet<String> = (0..10_000)
            .map(|i| key.string(&format!("user{i:05}")))
            .collect();
        assert_eq!(outputs.len(), 10_000);
    }
}
