//! What the target is, read from `hello`: one server, a replica set (its primary and secondaries)
//! or a list of mongos. Lanes ask it where to connect; after a "not primary" reply a lane asks it
//! to find the primary again ([`Topology::rediscover`]).

use super::connection::ConnError;
use super::target::Target;
use crate::net::HostPort;
use crate::wire::codes;
use bson::RawDocumentBuf;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Whether a reply's code says the member is (no longer) the primary.
pub fn is_not_primary(code: Option<i32>) -> bool {
    code.is_some_and(|c| codes::NOT_PRIMARY.contains(&c))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// One server (a standalone, `directConnection=true`, or a single host that is neither).
    Single(HostPort),
    ReplicaSet {
        name: String,
        primary: HostPort,
        secondaries: Vec<HostPort>,
    },
    /// Connections are shared round-robin.
    Mongos(Vec<HostPort>),
}

/// What one member said in `hello`.
#[derive(Debug, Default)]
struct Seen {
    set_name: Option<String>,
    primary: bool,
    secondary: bool,
    mongos: bool,
    /// `hosts` and `passives`: the members it knows.
    members: Vec<HostPort>,
}

fn seen(reply: &RawDocumentBuf) -> Seen {
    let flag = |k: &str| reply.get_bool(k).unwrap_or(false);
    let mut members = Vec::new();
    for key in ["hosts", "passives"] {
        if let Ok(list) = reply.get_array(key) {
            members.extend(
                list.into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().and_then(HostPort::parse)),
            );
        }
    }
    Seen {
        set_name: reply.get_str("setName").ok().map(str::to_owned),
        primary: flag("isWritablePrimary") || flag("ismaster"),
        secondary: flag("secondary"),
        mongos: reply.get_str("msg").ok() == Some("isdbgrid"),
        members,
    }
}

pub struct Topology {
    kind: Mutex<Kind>,
    /// Bumped at every change of primary, so lanes that saw the same failure rediscover once.
    generation: AtomicUsize,
    next: AtomicUsize,
    /// Live cursor ids opened on a secondary: their getMores and killCursors go there too.
    secondary_cursors: Mutex<HashSet<i64>>,
    /// Operations sent again after a "not primary" reply.
    pub retried: std::sync::atomic::AtomicU64,
    /// Operations sent again after their connection was dropped.
    pub retried_dropped: std::sync::atomic::AtomicU64,
}

impl Topology {
    pub fn single(host: HostPort) -> Topology {
        Topology::new(Kind::Single(host))
    }

    fn new(kind: Kind) -> Topology {
        Topology {
            kind: Mutex::new(kind),
            generation: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            secondary_cursors: Mutex::new(HashSet::new()),
            retried: Default::default(),
            retried_dropped: Default::default(),
        }
    }

    /// Asks every seed (and every member they name) `hello`.
    pub async fn discover(target: &Target, timeout: Duration) -> Result<Topology, ConnError> {
        Ok(Topology::new(read_kind(target, timeout).await?))
    }

    pub fn kind(&self) -> Kind {
        self.kind.lock().expect("topology lock").clone()
    }

    pub fn generation(&self) -> usize {
        self.generation.load(Ordering::Acquire)
    }

    /// Where a lane's (primary) connection goes.
    pub fn lane_host(&self) -> HostPort {
        match &*self.kind.lock().expect("topology lock") {
            Kind::Single(h) => h.clone(),
            Kind::ReplicaSet { primary, .. } => primary.clone(),
            Kind::Mongos(list) => {
                list[self.next.fetch_add(1, Ordering::Relaxed) % list.len()].clone()
            }
        }
    }

    /// A secondary for a read whose read preference allows one, when the set has one.
    pub fn secondary_host(&self) -> Option<HostPort> {
        match &*self.kind.lock().expect("topology lock") {
            Kind::ReplicaSet { secondaries, .. } if !secondaries.is_empty() => Some(
                secondaries[self.next.fetch_add(1, Ordering::Relaxed) % secondaries.len()].clone(),
            ),
            _ => None,
        }
    }

    pub fn has_secondaries(&self) -> bool {
        matches!(&*self.kind.lock().expect("topology lock"), Kind::ReplicaSet { secondaries, .. } if !secondaries.is_empty())
    }

    /// Whether a "not primary" reply means the primary moved (not so for a single server).
    pub fn follows_primary(&self) -> bool {
        matches!(
            &*self.kind.lock().expect("topology lock"),
            Kind::ReplicaSet { .. }
        )
    }

    pub fn opened_on_secondary(&self, live_cursor: i64) {
        self.secondary_cursors
            .lock()
            .expect("cursor set lock")
            .insert(live_cursor);
    }

    pub fn is_on_secondary(&self, live_cursor: i64) -> bool {
        self.secondary_cursors
            .lock()
            .expect("cursor set lock")
            .contains(&live_cursor)
    }

    /// After a "not primary" reply on a connection opened at `seen_generation`: unless another lane
    /// already did, asks the members again until one is primary (within `timeout`).
    pub async fn rediscover(
        &self,
        target: &Target,
        seen_generation: usize,
        timeout: Duration,
    ) -> Result<(), ConnError> {
        let deadline = Instant::now() + timeout;
        let mut last_err = None;
        while self.generation() == seen_generation {
            match read_kind(target, timeout.min(Duration::from_secs(5))).await {
                Ok(kind) => {
                    let mut current = self.kind.lock().expect("topology lock");
                    if self.generation() == seen_generation {
                        *current = kind;
                        self.generation.fetch_add(1, Ordering::AcqRel);
                    }
                    return Ok(());
                }
                Err(e) if Instant::now() < deadline => {
                    last_err = Some(e);
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => return Err(e),
            }
        }
        drop(last_err);
        Ok(())
    }
}

/// One round of `hello` over the seeds and the members they name.
async fn read_kind(target: &Target, timeout: Duration) -> Result<Kind, ConnError> {
    let no_primary = |detail: String| ConnError::Handshake {
        addr: target.display.clone(),
        detail,
    };
    if target.direct {
        return Ok(Kind::Single(target.seeds[0].clone()));
    }
    let mut queue: Vec<HostPort> = target.seeds.clone();
    let mut asked: HashSet<String> = HashSet::new();
    let mut answers: Vec<(HostPort, Seen)> = Vec::new();
    let mut first_err = None;
    while let Some(host) = queue.pop() {
        if !asked.insert(host.key()) {
            continue;
        }
        match super::Conn::hello_only(target, &host, timeout).await {
            Ok(reply) => {
                let s = seen(&reply);
                if target.replica_set.is_some() && s.set_name != target.replica_set {
                    first_err.get_or_insert(no_primary(format!(
                        "{host} is not a member of replica set {} (its setName: {})",
                        target.replica_set.as_deref().unwrap_or_default(),
                        s.set_name.as_deref().unwrap_or("none")
                    )));
                    continue;
                }
                if s.set_name.is_some() {
                    queue.extend(s.members.iter().cloned());
                }
                answers.push((host, s));
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if answers.iter().any(|(_, s)| s.mongos) {
        let mut list: Vec<HostPort> = answers
            .iter()
            .filter(|(_, s)| s.mongos)
            .map(|(h, _)| h.clone())
            .collect();
        list.sort();
        return Ok(Kind::Mongos(list));
    }
    if let Some(name) = answers.iter().find_map(|(_, s)| s.set_name.clone()) {
        let primary = answers
            .iter()
            .find(|(_, s)| s.primary)
            .map(|(h, _)| h.clone());
        let mut secondaries: Vec<HostPort> = answers
            .iter()
            .filter(|(_, s)| s.secondary)
            .map(|(h, _)| h.clone())
            .collect();
        secondaries.sort();
        return match primary {
            Some(primary) => Ok(Kind::ReplicaSet {
                name,
                primary,
                secondaries,
            }),
            None => Err(no_primary(format!("replica set {name} has no primary now"))),
        };
    }
    match (answers.into_iter().next(), first_err) {
        (Some((host, _)), _) if target.seeds.len() == 1 || target.replica_set.is_none() => {
            Ok(Kind::Single(host))
        }
        (_, Some(e)) => Err(e),
        (_, None) => Err(no_primary("no server answered hello".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn hello_replies_are_read() {
        let s = seen(
            &rawdoc! { "isWritablePrimary": true, "setName": "rs", "hosts": ["a:1", "b:2"], "passives": ["c:3"] },
        );
        assert!(s.primary && !s.secondary && !s.mongos);
        assert_eq!(s.members.len(), 3);
        let s = seen(&rawdoc! { "ismaster": false, "secondary": true, "setName": "rs" });
        assert!(s.secondary && !s.primary);
        assert!(seen(&rawdoc! { "ismaster": true, "msg": "isdbgrid" }).mongos);
        assert!(
            is_not_primary(Some(10107))
                && is_not_primary(Some(189))
                && !is_not_primary(Some(11000))
        );
    }

    #[test]
    fn mongos_share_lanes_round_robin() {
        let hp = |s: &str| HostPort::parse(s).unwrap();
        let t = Topology::new(Kind::Mongos(vec![hp("a:1"), hp("b:1")]));
        let picks: Vec<String> = (0..4).map(|_| t.lane_host().to_string()).collect();
        assert_eq!(picks, ["a:1", "b:1", "a:1", "b:1"]);
        assert!(!t.follows_primary() && t.secondary_host().is_none());
    }
}
