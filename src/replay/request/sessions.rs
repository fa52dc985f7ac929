//! Logical sessions: the live session id (`lsid.id`) that stands for a recorded one in each copy and
//! lane. Copies and lanes never share a session, so clones do not collide on `txnNumber`s.
//!
//! The live id is a keyed hash of (copy, lane, recorded id), with keys drawn at random for each
//! replay: the same inputs give the same id all replay long, other replays (and the other shards
//! of a `--shard` replay) get other ids, and nothing is kept per session, so a capture with any
//! number of sessions replays in bounded memory.

use super::recorded::Scope;
use std::hash::{BuildHasher, RandomState};

/// Derives live session ids from recorded ones.
pub struct Sessions {
    high: RandomState,
    low: RandomState,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions {
            high: RandomState::new(),
            low: RandomState::new(),
        }
    }
}

impl Sessions {
    /// The live session id standing for a recorded one in this copy and lane: a version-4 UUID,
    /// the same every time for the same inputs.
    pub fn live(&self, scope: Scope, lane_key: u32, recorded: &[u8]) -> [u8; 16] {
        let key = (scope, lane_key, recorded);
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&self.high.hash_one(key).to_ne_bytes());
        id[8..].copy_from_slice(&self.low.hash_one(key).to_ne_bytes());
        id[6] = (id[6] & 0x0f) | 0x40;
        id[8] = (id[8] & 0x3f) | 0x80;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn one_live_id_per_copy_lane_and_recorded_session() {
        let s = Sessions::default();
        let a = s.live(0, 0, b"recorded-a");
        assert_eq!(s.live(0, 0, b"recorded-a"), a, "stable");
        assert_eq!(a[6] >> 4, 4, "version 4");
        assert_eq!(a[8] >> 6, 0b10, "RFC 4122 variant");
        let mut seen = HashSet::new();
        for scope in 0..20 {
            for lane in 0..20 {
                for rec in [&b"recorded-a"[..], b"recorded-b", b""] {
                    assert!(
                        seen.insert(s.live(scope, lane, rec)),
                        "{scope} {lane} {rec:?}"
                    );
                }
            }
        }
        // Another replay maps the same recorded session elsewhere.
        assert_ne!(Sessions::default().live(0, 0, b"recorded-a"), a);
    }
}
