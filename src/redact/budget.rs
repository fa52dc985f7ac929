//! How much inflating compressed messages may cost the recorder. The credential scan and
//! `--redact values` must look inside every OP_COMPRESSED message, and a small zstd frame can
//! declare (and really hold) 48 MB: left unbounded, a few hundred of them keep the recorder thread
//! busy for minutes while every other connection's messages pile up in its queue.
//!
//! So inflation is paid from two token buckets, each charged a compressed message's declared size
//! before anything is inflated: the connection's own ([`InflateBudget::default`]: 1 MiB at first,
//! then [`INFLATE_PER_BYTE`] inflated bytes for every compressed byte it sends, never more than
//! [`CONN_CAP`] banked) and the recorder's ([`InflateBudget::global`]: the same rate over every
//! connection's compressed bytes, [`GLOBAL_CAP`] banked), which bounds the free first MiB of
//! thousands of connections too. A message that does not fit both is not inflated at all: it
//! cannot be checked, so it is left out of the capture (and counted), never written unchecked.
//! Real traffic compresses 3-20x (zstd, zlib and snappy on BSON), far inside the rate; the work any
//! number of clients can cause is bounded by 64 times what they send plus a constant.

/// Inflated bytes a compressed byte earns (its connection's bucket and the recorder's).
pub const INFLATE_PER_BYTE: u64 = 64;
/// Inflated bytes every connection may use before it has earned any: any message up to 1 MiB is
/// checked whatever its compression ratio (as long as the recorder's bucket holds it).
pub const INFLATE_FREE: u64 = 1 << 20;
/// The most a connection may bank: one message of the largest size, earned, fits.
pub const CONN_CAP: u64 = 64 << 20;
/// What the recorder's bucket holds at first, and the most it may bank.
pub const GLOBAL_START: u64 = 64 << 20;
pub const GLOBAL_CAP: u64 = 256 << 20;

/// A compressed message refused: it declares more inflated bytes than a bucket has left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    pub declared: usize,
    pub left: u64,
    /// Whose bucket: `connection` or `recorder`.
    pub scope: &'static str,
}

/// A token bucket of inflated bytes, refilled in proportion to the compressed bytes charged to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InflateBudget {
    left: u64,
    cap: u64,
    scope: &'static str,
}

impl Default for InflateBudget {
    /// One connection's bucket.
    fn default() -> Self {
        InflateBudget {
            left: INFLATE_FREE,
            cap: CONN_CAP,
            scope: "connection",
        }
    }
}

impl InflateBudget {
    /// No bound but the 48 MB one of each message: for callers that look at one message alone.
    pub fn unlimited() -> InflateBudget {
        InflateBudget {
            left: u64::MAX,
            cap: u64::MAX,
            scope: "unlimited",
        }
    }

    /// The recorder's bucket, shared by every connection.
    pub fn global() -> InflateBudget {
        InflateBudget {
            left: GLOBAL_START,
            cap: GLOBAL_CAP,
            scope: "recorder",
        }
    }

    /// Inflated bytes still allowed.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// Credits a compressed message of `wire` bytes (up to the bucket's cap).
    fn credit(&mut self, wire: usize) {
        let earned = (wire as u64).saturating_mul(INFLATE_PER_BYTE);
        self.left = self
            .left
            .saturating_add(earned)
            .min(self.cap.max(self.left));
    }

    fn refuse(&self, declared: usize) -> Option<OverBudget> {
        (declared as u64 > self.left).then_some(OverBudget {
            declared,
            left: self.left,
            scope: self.scope,
        })
    }

    /// Credits a compressed message of `wire` bytes, then charges its `declared` size, or refuses
    /// it (charging nothing) when that is more than is left.
    pub fn charge(&mut self, wire: usize, declared: usize) -> Result<(), OverBudget> {
        charge_both(self, &mut InflateBudget::unlimited(), wire, declared)
    }
}

/// Credits both buckets with a compressed message of `wire` bytes, then charges both its
/// `declared` size, or neither when it does not fit one of them.
pub fn charge_both(
    conn: &mut InflateBudget,
    global: &mut InflateBudget,
    wire: usize,
    declared: usize,
) -> Result<(), OverBudget> {
    conn.credit(wire);
    global.credit(wire);
    if let Some(refused) = conn.refuse(declared).or_else(|| global.refuse(declared)) {
        return Err(refused);
    }
    conn.left -= declared as u64;
    if global.left != u64::MAX {
        global.left -= declared as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_inflates_at_most_64_times_what_it_sent_plus_1_mib() {
        let mut budget = InflateBudget::default();
        // Any message up to 1 MiB, however well it compresses.
        budget.charge(20, (1 << 20) - 20 * 64).unwrap();
        // A 1.5 KB frame declaring 47,999,984 bytes: refused, nothing charged.
        let left = budget.left();
        let refused = budget.charge(1_500, 47_999_984).unwrap_err();
        assert_eq!(refused.declared, 47_999_984);
        assert_eq!(budget.left(), left + 1_500 * 64);
        // Ordinary traffic at 10x never runs short.
        for _ in 0..10_000 {
            budget.charge(4_000, 40_000).unwrap();
        }
        // 300 frames of 47,600 bytes each holding 48 MB (1,008:1): a fresh connection has 2 of
        // them inflated, out of the 14.3 MB it sent, 0.9 GB earned.
        let mut fresh = InflateBudget::default();
        let admitted = (0..300)
            .filter(|_| fresh.charge(47_600, 47_999_984).is_ok())
            .count();
        assert!(admitted <= 19, "{admitted}");
        assert!(InflateBudget::unlimited().charge(16, 48_000_000).is_ok());
    }

    #[test]
    fn banked_credit_is_capped() {
        let mut budget = InflateBudget::default();
        // 1 GB of poorly compressed traffic does not buy a later burst of more than the cap.
        for _ in 0..1_000 {
            budget.charge(1_000_000, 1_000_000).unwrap();
        }
        assert!(budget.left() <= CONN_CAP);
    }

    #[test]
    fn the_recorders_bucket_bounds_the_free_mib_of_many_connections() {
        let mut global = InflateBudget::global();
        // 10,000 connections each sending one 100-byte frame declaring 1 MiB: only what the
        // recorder's bucket holds is inflated, not 10 GB.
        let admitted = (0..10_000)
            .filter(|_| {
                charge_both(&mut InflateBudget::default(), &mut global, 100, 1 << 20).is_ok()
            })
            .count();
        let bound = (GLOBAL_START + 10_000 * 100 * INFLATE_PER_BYTE) >> 20;
        assert!(admitted as u64 <= bound, "{admitted} > {bound}");
        let refused = charge_both(&mut InflateBudget::default(), &mut global, 100, 1 << 20);
        assert!(matches!(
            refused,
            Err(OverBudget {
                scope: "recorder",
                ..
            })
        ));
    }
}
