//! What the upstream deployment looks like, asked with `hello`: a replica set's members (each gets
//! a listener), or a standalone / mongos (nothing to rewrite). The map from member addresses to
//! the proxy's listeners is shared with every connection, read only when a hello reply passes.

use super::streams::Connector;
use crate::net::HostPort;
use crate::wire::hello::AddressMap;
use crate::wire::info::TOPOLOGY_PROBE_APP;
use crate::wire::op_msg::{MsgFlags, OpMsg};
use crate::wire::{FrameSplitter, Message};
use bson::rawdoc;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What one hello said about the deployment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HelloFacts {
    pub set_name: Option<String>,
    /// `me`: how the set names the member that answered.
    pub me: Option<String>,
    /// `hosts`, `passives`, then `arbiters`, as written.
    pub members: Vec<String>,
    /// `msg: "isdbgrid"`: a mongos.
    pub is_mongos: bool,
}

impl HelloFacts {
    pub fn from_reply(doc: &bson::RawDocument) -> HelloFacts {
        let text = |k: &str| doc.get_str(k).ok().map(str::to_owned);
        let mut members = Vec::new();
        for field in ["hosts", "passives", "arbiters"] {
            if let Ok(list) = doc.get_array(field) {
                for address in list.into_iter().flatten() {
                    if let Some(a) = address.as_str() {
                        members.push(a.to_owned());
                    }
                }
            }
        }
        HelloFacts {
            set_name: text("setName"),
            me: text("me"),
            members,
            is_mongos: doc.get_str("msg").is_ok_and(|m| m == "isdbgrid"),
        }
    }
}

/// Sends `hello` on a connection of its own and reads the reply.
pub async fn ask_hello(
    connector: &Connector,
    member: &HostPort,
    timeout: Duration,
) -> Result<HelloFacts, String> {
    let ask = async {
        let (mut r, mut w) = connector.connect(member).await?;
        // Named, so that a packet capture taken on this host tells it from the clients'.
        let client = rawdoc! {
            "application": { "name": TOPOLOGY_PROBE_APP },
            "driver": { "name": "mongotape", "version": env!("CARGO_PKG_VERSION") },
            "os": { "type": std::env::consts::OS },
        };
        let hello = rawdoc! { "hello": 1, "client": client, "$db": "admin" };
        let request = OpMsg::with_body(hello, MsgFlags::empty()).encode(1, 0);
        w.write_all(&request)
            .await
            .map_err(|e| format!("sending hello to upstream {member}: {e}"))?;
        w.flush()
            .await
            .map_err(|e| format!("sending hello to upstream {member}: {e}"))?;
        let mut splitter = FrameSplitter::new();
        loop {
            let n = r
                .read_buf(splitter.read_buf())
                .await
                .map_err(|e| format!("reading hello reply from upstream {member}: {e}"))?;
            if n == 0 {
                // A TLS server drops a plain-text hello without a word.
                let hint = if connector.is_tls() {
                    ""
                } else {
                    " (the server may require TLS: tls=true)"
                };
                return Err(format!(
                    "upstream {member} closed before answering hello{hint}"
                ));
            }
            let frame = splitter
                .next_frame()
                .map_err(|e| format!("upstream {member} sent an invalid hello reply: {e}"))?;
            if let Some(frame) = frame {
                let msg = Message::parse(&frame)
                    .map_err(|e| format!("upstream {member} sent an invalid hello reply: {e}"))?;
                return match msg.body {
                    crate::wire::Body::Msg(m) => Ok(HelloFacts::from_reply(m.body())),
                    _ => Err(format!(
                        "upstream {member} answered hello with an {}, not an OP_MSG",
                        msg.header.op_code.name()
                    )),
                };
            }
        }
    };
    match tokio::time::timeout(timeout, ask).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "upstream {member} did not answer hello within {timeout:?}"
        )),
    }
}

/// One member served by one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Where the proxy connects.
    pub upstream: HostPort,
    /// What clients are told (the listener's address as advertised).
    pub advertised: String,
}

/// The members served so far and the rewrite map, shared by every connection.
#[derive(Debug, Default)]
pub struct Topology {
    members: RwLock<Vec<Member>>,
    map: RwLock<Arc<AddressMap>>,
    /// Whether hello replies are rewritten at all (false with directConnection=true).
    rewrite: bool,
}

impl Topology {
    pub fn new(rewrite: bool) -> Topology {
        Topology {
            rewrite,
            ..Topology::default()
        }
    }

    pub fn rewrites(&self) -> bool {
        self.rewrite
    }

    pub fn map(&self) -> Arc<AddressMap> {
        self.map.read().expect("topology lock").clone()
    }

    pub fn members(&self) -> Vec<Member> {
        self.members.read().expect("topology lock").clone()
    }

    /// How many members have a listener.
    pub fn member_count(&self) -> usize {
        self.members.read().expect("topology lock").len()
    }

    /// Whether `address` (as a hello names it) already has a listener.
    pub fn serves(&self, address: &str) -> bool {
        self.map
            .read()
            .expect("topology lock")
            .get(address)
            .is_some()
    }

    pub fn add(&self, member: Member) {
        self.alias(&member.upstream.to_string(), &member.advertised);
        self.members.write().expect("topology lock").push(member);
    }

    /// Another name for a member already served (its `me`, when the seed was written otherwise).
    pub fn alias(&self, address: &str, advertised: &str) {
        let mut map = self.map.write().expect("topology lock");
        let mut new = AddressMap::clone(&map);
        new.insert(address, advertised);
        *map = Arc::new(new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_of_a_set_and_a_mongos() {
        let set = rawdoc! {
            "hosts": ["a:1", "b:2"], "passives": ["c:3"], "arbiters": ["d:4"],
            "setName": "rs0", "me": "a:1", "ok": 1.0,
        };
        let facts = HelloFacts::from_reply(&set);
        assert_eq!(facts.members, ["a:1", "b:2", "c:3", "d:4"]);
        assert_eq!(facts.set_name.as_deref(), Some("rs0"));
        assert!(!facts.is_mongos);
        let mongos = HelloFacts::from_reply(&rawdoc! { "msg": "isdbgrid", "ok": 1.0 });
        assert!(mongos.is_mongos && mongos.members.is_empty());
    }
}
