//! Which end of a connection is the server: the ends `--server-port` / `--server` name, or, when
//! none is given, the SYN's receiver, else the end on port 27017, else the sender of the first
//! message that reads as a reply.

use crate::wire::{MsgHeader, OpCode};
use std::net::SocketAddr;

/// MongoDB's default port.
pub const DEFAULT_PORT: u16 = 27017;

/// The servers named on the command line; both empty: detect.
#[derive(Debug, Clone, Default)]
pub struct ServerSpec {
    pub ports: Vec<u16>,
    pub addrs: Vec<SocketAddr>,
}

/// A connection's roles, by the index of its ends in key order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Neither end is a server named: left out.
    Ignored,
    /// To be decided by the first message.
    Unknown,
    Known {
        client: usize,
    },
}

/// The roles as addresses, before the connection has a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    Ignored,
    Unknown,
    Client(SocketAddr),
}

impl ServerSpec {
    pub fn is_explicit(&self) -> bool {
        !self.ports.is_empty() || !self.addrs.is_empty()
    }

    fn names(&self, end: SocketAddr) -> bool {
        self.ports.contains(&end.port()) || self.addrs.contains(&end)
    }

    /// The roles of a connection between `a` and `b`; `syn`: `a` sent the SYN.
    pub fn role(&self, a: SocketAddr, b: SocketAddr, syn: bool) -> Decided {
        if self.is_explicit() {
            return if self.names(b) {
                Decided::Client(a)
            } else if self.names(a) {
                Decided::Client(b)
            } else {
                Decided::Ignored
            };
        }
        if syn || b.port() == DEFAULT_PORT {
            Decided::Client(a)
        } else if a.port() == DEFAULT_PORT {
            Decided::Client(b)
        } else {
            Decided::Unknown
        }
    }
}

impl Decided {
    /// The roles by end index, for a connection whose ends are `key` in order.
    pub fn in_key_order(self, key: (SocketAddr, SocketAddr)) -> Role {
        match self {
            Decided::Ignored => Role::Ignored,
            Decided::Unknown => Role::Unknown,
            Decided::Client(c) => Role::Known {
                client: usize::from(c != key.0),
            },
        }
    }
}

impl Role {
    pub fn client_end(self) -> Option<usize> {
        match self {
            Role::Known { client } => Some(client),
            _ => None,
        }
    }
}

/// A message that answers nothing and is not a reply opcode: a request.
pub fn looks_like_request(message: &[u8]) -> bool {
    match MsgHeader::parse(message) {
        Ok(Some(h)) => h.response_to == 0 && h.op_code != OpCode::Reply,
        _ => false,
    }
}
