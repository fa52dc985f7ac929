//! Replies that reached the dispatcher before their request. The proxy hands a request to the
//! tap after forwarding it, and its reply is read by the connection's other pump: on a busy
//! machine the request's pump can be kept off the CPU between the two, and the reply is queued
//! first. Such a reply is kept here, bounded in count and bytes (oldest out first), until its
//! request claims it; replies no mirrored request claims (writes' under `--mirror reads`,
//! handshakes') pass through and are forgotten.

use crate::capture::Record;
use std::collections::{HashMap, VecDeque};

/// Replies kept at most.
const MAX_REPLIES: usize = 1024;
/// Bytes kept at most; a larger reply is not kept.
const MAX_BYTES: usize = 4 << 20;

#[derive(Default)]
pub struct Early {
    /// Each reply with the number it was kept under.
    replies: HashMap<(u64, i32), (u64, Record)>,
    /// What was kept, oldest first; an entry whose number no longer matches was claimed or
    /// replaced.
    order: VecDeque<((u64, i32), u64)>,
    kept: u64,
    bytes: usize,
    /// Replies claimed by a request that came after them.
    pub claimed: u64,
}

impl Early {
    /// Keeps `reply` (to request `response_to` of `conn_id`) for a request that may follow. Its
    /// bytes are copied: the proxy's record shares a larger read buffer.
    pub fn keep(&mut self, conn_id: u64, response_to: i32, reply: &Record) {
        let size = reply.payload.len();
        if size > MAX_BYTES {
            return;
        }
        while self.replies.len() >= MAX_REPLIES || self.bytes + size > MAX_BYTES {
            let Some((oldest, number)) = self.order.pop_front() else {
                break;
            };
            if self.replies.get(&oldest).is_some_and(|(n, _)| *n == number) {
                self.take(&oldest);
            }
        }
        if self.order.len() >= 2 * MAX_REPLIES {
            // Claims leave their entries behind: drop those.
            let replies = &self.replies;
            self.order
                .retain(|(key, number)| replies.get(key).is_some_and(|(n, _)| n == number));
        }
        self.take(&(conn_id, response_to));
        self.kept += 1;
        let kept = Record {
            payload: bytes::Bytes::copy_from_slice(&reply.payload),
            ..reply.clone()
        };
        self.replies
            .insert((conn_id, response_to), (self.kept, kept));
        self.bytes += size;
        self.order.push_back(((conn_id, response_to), self.kept));
    }

    fn take(&mut self, key: &(u64, i32)) -> Option<Record> {
        let (_, reply) = self.replies.remove(key)?;
        self.bytes -= reply.payload.len();
        Some(reply)
    }

    /// The reply to request `request_id` of `conn_id`, if it came first.
    pub fn claim(&mut self, conn_id: u64, request_id: i32) -> Option<Record> {
        if self.replies.is_empty() {
            return None;
        }
        let reply = self.take(&(conn_id, request_id))?;
        self.claimed += 1;
        Some(reply)
    }

    #[cfg(test)]
    fn len(&self) -> (usize, usize) {
        (self.replies.len(), self.bytes)
    }

    #[cfg(test)]
    fn order_len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::RecordKind;

    fn reply(n: usize) -> Record {
        Record::new(RecordKind::Reply, 1, 5, vec![7u8; n])
    }

    #[test]
    fn a_reply_waits_for_its_request_within_bounds() {
        let mut early = Early::default();
        early.keep(1, 10, &reply(100));
        assert!(early.claim(2, 10).is_none(), "another connection's request");
        assert!(early.claim(1, 11).is_none(), "another request");
        let got = early.claim(1, 10).expect("its request claims it");
        assert_eq!((got.payload.len(), got.ts_ns), (100, 5));
        assert_eq!((early.len(), early.claimed), ((0, 0), 1));
        assert!(early.claim(1, 10).is_none(), "claimed once");
        // Past the count, the oldest go first.
        for id in 0..(MAX_REPLIES as i32 + 10) {
            early.keep(1, id, &reply(10));
        }
        assert_eq!(early.len(), (MAX_REPLIES, MAX_REPLIES * 10));
        assert!(early.claim(1, 9).is_none() && early.claim(1, 10).is_some());
        // Past the bytes too; a reply larger than the whole bound is not kept.
        early.keep(1, -1, &reply(MAX_BYTES + 1));
        assert!(early.claim(1, -1).is_none());
        early.keep(1, -2, &reply(MAX_BYTES - 5));
        assert!(early.len().1 <= MAX_BYTES, "{:?}", early.len());
        assert!(early.claim(1, -2).is_some());
        // Replies kept and claimed forever leave no trail behind.
        for id in 0..10 * MAX_REPLIES as i32 {
            early.keep(2, id, &reply(10));
            assert!(early.claim(2, id).is_some());
        }
        assert!(early.order_len() <= 2 * MAX_REPLIES);
    }
}
