//! Pairs replies with the requests they answer, per connection, by `responseTo`.

use crate::wire::{Message, RequestInfo};
use std::collections::HashMap;

/// A request waiting for its reply.
#[derive(Debug, Clone)]
pub struct Pending {
    pub info: RequestInfo,
    pub ts_ns: u64,
    pub bytes: usize,
}

/// What a reply answered.
#[derive(Debug)]
pub enum Answer {
    Request(Pending),
    /// A reply no request is waiting for: exhaust pushes (moreToCome replies answer the previous
    /// reply, not a request) or a reply to a request recorded before a gap.
    Unsolicited,
}

#[derive(Debug, Default)]
pub struct Pairer {
    pending: HashMap<(u64, i32), Pending>,
    /// Request ids of exhaust replies, which the next pushed reply answers: conn -> command.
    exhaust: HashMap<(u64, i32), RequestInfo>,
}

impl Pairer {
    pub fn request(
        &mut self,
        conn: u64,
        msg: &Message,
        info: RequestInfo,
        ts_ns: u64,
        bytes: usize,
    ) {
        if info.expects_reply {
            self.pending.insert(
                (conn, msg.header.request_id),
                Pending { info, ts_ns, bytes },
            );
        }
    }

    /// Finds what `reply` answers. An exhaust reply (moreToCome) is remembered so the next push,
    /// whose responseTo is this reply's requestID, is known to belong to the same command.
    pub fn reply(&mut self, conn: u64, msg: &Message, more_to_come: bool) -> Answer {
        let key = (conn, msg.header.response_to);
        let answer = match self.pending.remove(&key) {
            Some(p) => Answer::Request(p),
            None => match self.exhaust.remove(&key) {
                Some(info) if more_to_come => {
                    self.exhaust.insert((conn, msg.header.request_id), info);
                    return Answer::Unsolicited;
                }
                _ => Answer::Unsolicited,
            },
        };
        if more_to_come {
            if let Answer::Request(p) = &answer {
                self.exhaust
                    .insert((conn, msg.header.request_id), p.info.clone());
            }
        }
        answer
    }

    /// Forgets a closed connection; returns the requests that never got a reply.
    pub fn close(&mut self, conn: u64) -> Vec<Pending> {
        let keys: Vec<_> = self
            .pending
            .keys()
            .filter(|k| k.0 == conn)
            .cloned()
            .collect();
        self.exhaust.retain(|k, _| k.0 != conn);
        keys.into_iter()
            .filter_map(|k| self.pending.remove(&k))
            .collect()
    }

    /// Requests still waiting, across every connection.
    pub fn drain(&mut self) -> Vec<Pending> {
        self.exhaust.clear();
        self.pending.drain().map(|(_, p)| p).collect()
    }
}
