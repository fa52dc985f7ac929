//! How much inflating one connection's compressed messages may cost the recorder. The credential
//! scan and `--redact values` must look inside every OP_COMPRESSED message, and a 1.5 KB zstd
//! frame can declare (and really hold) 48 MB: left unbounded, a few hundred of them keep the
//! recorder thread busy for seconds while every other connection's messages pile up in its queue.
//!
//! So each connection earns [`INFLATE_PER_BYTE`] inflated bytes for every compressed byte it
//! sends, plus [`INFLATE_FREE`] once, and each compressed message is charged its declared size
//! before anything is inflated. A message that does not fit is not inflated at all: it cannot be
//! checked, so it is left out of the capture (and counted), never written unchecked. Real traffic
//! compresses 3-20x (zstd, zlib and snappy on BSON), far inside the allowance; the work an attacker
//! can cause is bounded by 1,024 times what it sends, whatever the number of messages.

/// Inflated bytes a connection earns per compressed byte it sends.
pub const INFLATE_PER_BYTE: u64 = 1024;
/// Inflated bytes every connection may use before it has earned any: any message up to 1 MiB is
/// checked whatever its compression ratio.
pub const INFLATE_FREE: u64 = 1 << 20;

/// A compressed message refused: it declares more inflated bytes than the connection has left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    pub declared: usize,
    pub left: u64,
}

/// One connection's allowance of inflated bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InflateBudget {
    left: u64,
}

impl Default for InflateBudget {
    fn default() -> Self {
        InflateBudget { left: INFLATE_FREE }
    }
}

impl InflateBudget {
    /// No bound but the 48 MB one of each message: for callers that look at one message alone.
    pub fn unlimited() -> InflateBudget {
        InflateBudget { left: u64::MAX }
    }

    /// Inflated bytes still allowed.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// Credits a compressed message of `wire` bytes, then charges its `declared` size, or refuses
    /// it (charging nothing) when that is more than is left.
    pub fn charge(&mut self, wire: usize, declared: usize) -> Result<(), OverBudget> {
        self.left = self
            .left
            .saturating_add((wire as u64).saturating_mul(INFLATE_PER_BYTE));
        let declared_bytes = declared as u64;
        if declared_bytes > self.left {
            return Err(OverBudget {
                declared,
                left: self.left,
            });
        }
        self.left -= declared_bytes;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_inflates_at_most_1024_times_what_it_sent_plus_1_mib() {
        let mut budget = InflateBudget::default();
        // Any message up to 1 MiB, however well it compresses.
        budget.charge(20, (1 << 20) - 20 * 1024).unwrap();
        // A 1.5 KB frame declaring 47,999,984 bytes: refused, nothing charged.
        let left = budget.left();
        let refused = budget.charge(1_500, 47_999_984).unwrap_err();
        assert_eq!(refused.declared, 47_999_984);
        assert_eq!(budget.left(), left + 1_500 * 1024);
        // Ordinary traffic at 10x never runs short.
        for _ in 0..10_000 {
            budget.charge(4_000, 40_000).unwrap();
        }
        // 300 such frames earn 300 x 1.5 MB: at most 9 of the 48 MB ones are inflated.
        let mut fresh = InflateBudget::default();
        let admitted = (0..300)
            .filter(|_| fresh.charge(1_500, 47_999_984).is_ok())
            .count();
        assert_eq!(admitted, 9);
        assert!(InflateBudget::unlimited().charge(16, 48_000_000).is_ok());
    }
}
