//! TCP reassembly, mongotape's own: connections found by their address pairs, SYN/FIN/RST as
//! their open and close, each direction put back in order (`stream`) and cut into whole wire
//! messages (`frames`), which side is the server decided once per connection (`role`).
//!
//! Memory is bounded by the reassembly window (per direction), by one message being put
//! together per direction, and over all connections by `bounds` (connections followed, bytes
//! held, idle time), never by the file. A connection that speaks TLS (`tls`) is left out.
//!
//! Layers, bottom up: bounds frames role tls < stream

pub mod bounds;
pub mod frames;
pub mod role;
pub mod stream;
pub mod tls;

use super::pcap::link::Segment;
pub use bounds::{Bounds, DEFAULT_WINDOW};
use bounds::{Entry, Ledger, LetGo, FLOW_OVERHEAD};
use frames::Out;
use role::{Decided, Role, ServerSpec};
use std::collections::HashMap;
use std::net::SocketAddr;
pub use stream::{Io, TcpStats};
use stream::{Piece, Stream};

/// A connection as the capture will know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conn {
    /// Numbered from 1 in the order connections were first seen.
    pub id: u64,
    pub client: SocketAddr,
    pub server: SocketAddr,
}

/// Who ended a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ender {
    Client,
    Server,
    /// The capture ended with it open.
    Capture,
}

/// Where reassembled connections go (the capture writer).
pub trait Events {
    type Error;
    fn message(&mut self, conn: &Conn, from_client: bool, out: Out) -> Result<(), Self::Error>;
    fn close(&mut self, conn: &Conn, by: Ender, reset: bool, ts_ns: u64)
        -> Result<(), Self::Error>;
}

type Key = (SocketAddr, SocketAddr);

struct Flow {
    id: u64,
    /// The two ends, in key order.
    ends: [SocketAddr; 2],
    streams: [Stream; 2],
    role: Role,
    /// The end that sent the first FIN.
    first_fin: Option<usize>,
    entry: Entry,
    /// Each end's first payload was looked at (for TLS).
    heard: [bool; 2],
    tls: bool,
}

pub struct Reassembler {
    flows: HashMap<Key, Flow>,
    spec: ServerSpec,
    bounds: Bounds,
    ledger: Ledger<Key>,
    next_id: u64,
    io: Io,
}

impl Reassembler {
    pub fn new(spec: ServerSpec, bounds: Bounds) -> Reassembler {
        Reassembler {
            flows: HashMap::new(),
            spec,
            bounds,
            ledger: Ledger::default(),
            next_id: 1,
            io: Io::default(),
        }
    }

    pub fn stats(&self) -> &TcpStats {
        &self.io.stats
    }

    /// Connections being followed now.
    pub fn open(&self) -> usize {
        self.flows.len()
    }

    /// Bytes the connections hold between them.
    pub fn held_bytes(&self) -> usize {
        self.ledger.bytes()
    }

    /// One TCP segment of the capture; then the bounds: idle connections expire, and past a
    /// bound the oldest are let go.
    pub fn segment<E: Events>(
        &mut self,
        seg: &Segment<'_>,
        ts_ns: u64,
        events: &mut E,
    ) -> Result<(), E::Error> {
        self.ledger.tick(ts_ns);
        let key = self.follow(seg, ts_ns, events)?;
        if let Some(flow) = key.and_then(|k| self.flows.get_mut(&k).map(|f| (k, f))) {
            let (key, flow) = flow;
            let held = FLOW_OVERHEAD + flow.streams[0].memory() + flow.streams[1].memory();
            self.ledger.touch(key, &mut flow.entry, held);
        }
        while let Some((key, why)) = self.ledger.next_to_let_go(&self.bounds, self.flows.len()) {
            match why {
                LetGo::Idle => self.io.stats.expired += 1,
                LetGo::Evicted => self.io.stats.evicted += 1,
            }
            self.close(key, None, false, ts_ns, events, frames::LET_GO)?;
        }
        Ok(())
    }

    /// The segment given to its connection; the connection's key if it is still followed.
    fn follow<E: Events>(
        &mut self,
        seg: &Segment<'_>,
        ts_ns: u64,
        events: &mut E,
    ) -> Result<Option<Key>, E::Error> {
        let key = if seg.src <= seg.dst {
            (seg.src, seg.dst)
        } else {
            (seg.dst, seg.src)
        };
        let end = usize::from(seg.src != key.0);
        if seg.syn {
            self.syn(key, end, seg, ts_ns, events)?;
        }
        let Some(flow) = self.flows.get_mut(&key) else {
            let has_data = !seg.payload.is_empty() || seg.missing > 0;
            if !has_data || seg.rst || seg.fin {
                return Ok(None);
            }
            let role = self.spec.role(seg.src, seg.dst, false);
            self.insert(key, role, [None, None]);
            return self.follow(seg, ts_ns, events);
        };
        let first_bytes = !seg.payload.is_empty() && !std::mem::replace(&mut flow.heard[end], true);
        let followed = flow.role != Role::Ignored && !flow.tls;
        if first_bytes && followed && tls::looks_like_tls(seg.payload) {
            flow.tls = true;
            flow.streams = [None, None].map(|isn| Stream::new(isn, 0));
            // Without known roles, the first to speak TLS is the client (its ClientHello).
            let client = flow.role.client_end().unwrap_or(end);
            self.io.stats.tls(flow.ends[client], flow.ends[1 - client]);
        }
        if flow.role == Role::Ignored || flow.tls {
            if seg.rst || seg.fin {
                self.drop_flow(&key);
                return Ok(None);
            }
            return Ok(Some(key));
        }
        if seg.ack {
            flow.streams[1 - end].acked(seg.ack_number);
        }
        if !seg.syn {
            if flow.streams[1 - end].has_held() {
                // The other side sent: it received what the capture lacks.
                flow.streams[1 - end].declare_hole(&mut self.io);
                emit(flow, 1 - end, &mut self.io, events)?;
            }
            let piece = Piece {
                seq: seg.seq,
                data: seg.payload,
                missing: seg.missing,
                ts_ns,
            };
            flow.streams[end].segment(piece, &mut self.io);
            emit(flow, end, &mut self.io, events)?;
        }
        if seg.rst {
            self.close(key, Some(end), true, ts_ns, events, frames::ENDED)?;
            return Ok(None);
        }
        if seg.fin {
            let len = (seg.payload.len() as u32).saturating_add(seg.missing);
            flow.streams[end].fin_at(seg.seq, len);
            let first = *flow.first_fin.get_or_insert(end);
            if flow.streams[1 - end].fin {
                self.close(key, Some(first), false, ts_ns, events, frames::ENDED)?;
                return Ok(None);
            }
        }
        Ok(Some(key))
    }

    fn drop_flow(&mut self, key: &Key) -> Option<Flow> {
        let flow = self.flows.remove(key)?;
        self.ledger.remove(&flow.entry);
        Some(flow)
    }

    /// Every connection still open ends with the capture.
    pub fn finish<E: Events>(&mut self, ts_ns: u64, events: &mut E) -> Result<(), E::Error> {
        let mut keys: Vec<(u64, Key)> = self.flows.iter().map(|(k, f)| (f.id, *k)).collect();
        keys.sort();
        for (_, key) in keys {
            self.close(key, None, false, ts_ns, events, frames::ENDED)?;
        }
        Ok(())
    }

    fn syn<E: Events>(
        &mut self,
        key: Key,
        end: usize,
        seg: &Segment<'_>,
        ts_ns: u64,
        events: &mut E,
    ) -> Result<(), E::Error> {
        if let Some(flow) = self.flows.get_mut(&key) {
            let stream = &flow.streams[end];
            if stream.began_with(seg.seq) {
                return Ok(()); // a retransmitted SYN
            }
            if stream.untouched() || seg.ack {
                // The answer to a SYN seen, or a side heard from for the first time.
                flow.streams[end] = Stream::new(Some(seg.seq), self.bounds.window);
                return Ok(());
            }
            // The port pair used again: the old connection ended unseen.
            self.close(key, None, false, ts_ns, events, frames::ENDED)?;
        }
        // The SYN's sender is the client (a SYN-ACK's receiver).
        let (client, server) = if seg.ack {
            (seg.dst, seg.src)
        } else {
            (seg.src, seg.dst)
        };
        let role = self.spec.role(client, server, true);
        let mut syns = [None, None];
        syns[end] = Some(seg.seq);
        self.insert(key, role, syns);
        Ok(())
    }

    fn insert(&mut self, key: Key, role: Decided, syns: [Option<u32>; 2]) {
        let role = role.in_key_order(key);
        if role == Role::Ignored {
            self.io.stats.ignored_connections += 1;
        } else {
            self.io.stats.connections += 1;
        }
        let flow = Flow {
            id: self.next_id,
            ends: [key.0, key.1],
            streams: syns.map(|isn| Stream::new(isn, self.bounds.window)),
            role,
            first_fin: None,
            entry: Entry {
                id: self.next_id,
                ..Entry::default()
            },
            heard: [false; 2],
            tls: false,
        };
        self.next_id += 1;
        self.flows.insert(key, flow);
    }

    /// Ends a connection: both directions finished (holes and partial messages said, lost for
    /// `reason`), then the close, said by the side that ended it (`None`: the capture ended or
    /// the connection was let go).
    fn close<E: Events>(
        &mut self,
        key: Key,
        by: Option<usize>,
        reset: bool,
        ts_ns: u64,
        events: &mut E,
        reason: &'static str,
    ) -> Result<(), E::Error> {
        let Some(mut flow) = self.drop_flow(&key) else {
            return Ok(());
        };
        if flow.role == Role::Ignored || flow.tls {
            return Ok(());
        }
        for end in 0..2 {
            flow.streams[end].finish(ts_ns, &mut self.io, reason);
            emit(&mut flow, end, &mut self.io, events)?;
        }
        let Some(client) = flow.role.client_end() else {
            return Ok(()); // never a message: nothing was said of it
        };
        let conn = flow.conn(client);
        let ender = match by.or(flow.first_fin) {
            None => Ender::Capture,
            Some(end) if end == client => Ender::Client,
            Some(_) => Ender::Server,
        };
        events.close(&conn, ender, reset, ts_ns)
    }
}

impl Flow {
    fn conn(&self, client: usize) -> Conn {
        Conn {
            id: self.id,
            client: self.ends[client],
            server: self.ends[1 - client],
        }
    }
}

/// Hands what a direction yielded to `events`, deciding the roles on the first message if they
/// were not known.
fn emit<E: Events>(
    flow: &mut Flow,
    end: usize,
    io: &mut Io,
    events: &mut E,
) -> Result<(), E::Error> {
    for out in io.out.drain(..) {
        let client = match flow.role.client_end() {
            Some(c) => c,
            None => match &out {
                Out::Message { bytes, .. } => {
                    let c = if role::looks_like_request(bytes) {
                        end
                    } else {
                        1 - end
                    };
                    flow.role = Role::Known { client: c };
                    c
                }
                // Nothing yet says which side this is: what was lost before the first message
                // is not told.
                Out::Gap { .. } => continue,
            },
        };
        events.message(&flow.conn(client), end == client, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
