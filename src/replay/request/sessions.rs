//! Logical sessions: the live session id (`lsid.id`) that stands for a recorded one in each copy and
//! lane. Copies and lanes never share a session, so clones do not collide on `txnNumber`s.

use super::recorded::Scope;
use rand::RngCore;
use std::collections::HashMap;

/// Live session ids per copy and lane, by recorded `lsid.id`.
#[derive(Default)]
pub struct Sessions(HashMap<(Scope, u32), HashMap<Vec<u8>, [u8; 16]>>);

impl Sessions {
    /// The live session id standing for a recorded one in this copy and lane (fresh on first use).
    pub fn live(&mut self, scope: Scope, lane_key: u32, recorded: &[u8]) -> [u8; 16] {
        // Looked up by reference: the owned key is built only for a new session.
        let sessions = self.0.entry((scope, lane_key)).or_default();
        if let Some(id) = sessions.get(recorded) {
            return *id;
        }
        let mut id = [0u8; 16];
        rand::rng().fill_bytes(&mut id);
        id[6] = (id[6] & 0x0f) | 0x40; // a version-4 UUID
        id[8] = (id[8] & 0x3f) | 0x80;
        sessions.insert(recorded.to_vec(), id);
        id
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }
}
