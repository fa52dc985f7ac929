//! TCP reassembly, mongotape's own: connections found by their address pairs, SYN/FIN/RST as
//! their open and close, each direction put back in order (`stream`) and cut into whole wire
//! messages (`frames`), which side is the server decided once per connection (`role`).
//!
//! Memory is bounded by the reassembly window (per direction) and by one message being put
//! together per direction, never by the file.
//!
//! Layers, bottom up: frames role < stream

pub mod frames;
pub mod role;
pub mod stream;

use super::pcap::link::Segment;
use frames::Out;
use role::{Decided, Role, ServerSpec};
use std::collections::HashMap;
use std::net::SocketAddr;
pub use stream::{Io, TcpStats};
use stream::{Piece, Stream};

/// Bytes held per direction while waiting for a missing segment, by default.
pub const DEFAULT_WINDOW: usize = 4 << 20;

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
}

pub struct Reassembler {
    flows: HashMap<Key, Flow>,
    spec: ServerSpec,
    window: usize,
    next_id: u64,
    io: Io,
}

impl Reassembler {
    pub fn new(spec: ServerSpec, window: usize) -> Reassembler {
        Reassembler {
            flows: HashMap::new(),
            spec,
            window,
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

    /// One TCP segment of the capture.
    pub fn segment<E: Events>(
        &mut self,
        seg: &Segment<'_>,
        ts_ns: u64,
        events: &mut E,
    ) -> Result<(), E::Error> {
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
                return Ok(());
            }
            let role = self.spec.role(seg.src, seg.dst, false);
            self.insert(key, role, [None, None]);
            return self.segment(seg, ts_ns, events);
        };
        if flow.role == Role::Ignored {
            if seg.rst || seg.fin {
                self.flows.remove(&key);
            }
            return Ok(());
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
            return self.close(key, Some(end), true, ts_ns, events);
        }
        if seg.fin {
            let len = (seg.payload.len() as u32).saturating_add(seg.missing);
            flow.streams[end].fin_at(seg.seq, len);
            let first = *flow.first_fin.get_or_insert(end);
            if flow.streams[1 - end].fin {
                return self.close(key, Some(first), false, ts_ns, events);
            }
        }
        Ok(())
    }

    /// Every connection still open ends with the capture.
    pub fn finish<E: Events>(&mut self, ts_ns: u64, events: &mut E) -> Result<(), E::Error> {
        let mut keys: Vec<(u64, Key)> = self.flows.iter().map(|(k, f)| (f.id, *k)).collect();
        keys.sort();
        for (_, key) in keys {
            self.close(key, None, false, ts_ns, events)?;
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
                flow.streams[end] = Stream::new(Some(seg.seq), self.window);
                return Ok(());
            }
            // The port pair used again: the old connection ended unseen.
            self.close(key, None, false, ts_ns, events)?;
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
            streams: syns.map(|isn| Stream::new(isn, self.window)),
            role,
            first_fin: None,
        };
        self.next_id += 1;
        self.flows.insert(key, flow);
    }

    /// Ends a connection: both directions finished (holes and partial messages said), then the
    /// close, said by the side that ended it (`None`: the capture ended).
    fn close<E: Events>(
        &mut self,
        key: Key,
        by: Option<usize>,
        reset: bool,
        ts_ns: u64,
        events: &mut E,
    ) -> Result<(), E::Error> {
        let Some(mut flow) = self.flows.remove(&key) else {
            return Ok(());
        };
        if flow.role == Role::Ignored {
            return Ok(());
        }
        for end in 0..2 {
            flow.streams[end].finish(ts_ns, &mut self.io);
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
