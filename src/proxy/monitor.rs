//! The listeners and the topology they follow. At start the upstream is asked `hello`: a replica
//! set's members each get a listener (a standalone or mongos list: each seed). While serving, the
//! set is asked again every interval, or at once when a forwarded hello names an address the proxy
//! does not serve; a new member gets a listener of its own.

use super::error::ProxyError;
use super::listen::ListenPlan;
use super::streams::{Acceptor, Connector};
use super::topology::{ask_hello, HelloFacts, Member, Topology};
use crate::net::HostPort;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinSet;

/// How long the first `hello` may take before the proxy starts on the seed list alone.
const START_HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How often an upstream that has not answered yet is asked again.
const RETRY_INTERVAL: Duration = Duration::from_secs(2);
/// How long accepting pauses when the proxy is out of file descriptors.
const ACCEPT_PAUSE: Duration = Duration::from_secs(1);
/// Members served at most: MongoDB allows 50 in a replica set. A hello naming more (a broken or
/// hostile upstream) would otherwise cost a listening socket each.
pub const MAX_MEMBERS: usize = 50;

/// A client accepted on a member's listener.
pub struct Accepted {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    pub member: Member,
    pub acceptor: Acceptor,
}

pub struct Monitor {
    plan: ListenPlan,
    advertise_host: Option<String>,
    acceptor: Acceptor,
    connector: Connector,
    topology: Arc<Topology>,
    seeds: Vec<HostPort>,
    /// Bound and not yet accepting (handed to accept tasks by `run`).
    unstarted: Vec<(TcpListener, Member)>,
    local: Vec<SocketAddr>,
    next_index: usize,
    discovered: bool,
    direct: bool,
    /// Whether members past [`MAX_MEMBERS`] were warned about (once).
    warned_cap: bool,
}

impl Monitor {
    pub fn new(
        plan: ListenPlan,
        advertise_host: Option<String>,
        acceptor: Acceptor,
        connector: Connector,
        topology: Arc<Topology>,
        seeds: Vec<HostPort>,
    ) -> Monitor {
        Monitor {
            plan,
            advertise_host,
            acceptor,
            connector,
            topology,
            seeds,
            unstarted: Vec::new(),
            local: Vec::new(),
            next_index: 0,
            discovered: false,
            direct: false,
            warned_cap: false,
        }
    }

    pub fn local_addrs(&self) -> Vec<String> {
        self.local.iter().map(ToString::to_string).collect()
    }

    pub fn first_local_addr(&self) -> Option<SocketAddr> {
        self.local.first().copied()
    }

    /// Asks the upstream for its topology and binds the first listeners.
    pub async fn start(
        &mut self,
        replica_set: Option<&str>,
        direct: bool,
    ) -> Result<(), ProxyError> {
        self.direct = direct;
        if direct {
            // directConnection=true: one server, served as it is, nothing rewritten.
            let seed = self.seeds.first().cloned().ok_or_else(|| {
                ProxyError::Topology("the connection string names no host".into())
            })?;
            // Nothing to ask, but an unreachable upstream is said now, not at the first client.
            if let Err(e) = self.connector.connect(&seed).await {
                tracing::warn!(
                    "upstream {seed} cannot be reached at start ({}); clients will be turned \
                     away until it can",
                    e.reason
                );
            }
            self.bind_member(seed).await?;
            self.discovered = true;
            return Ok(());
        }
        match self.discover(START_HELLO_TIMEOUT).await {
            Ok((answered, facts)) => {
                if let Some(wanted) = replica_set {
                    if facts.set_name.as_deref() != Some(wanted) {
                        return Err(ProxyError::Topology(format!(
                            "{answered} is {}, the connection string asks for replicaSet={wanted}",
                            match &facts.set_name {
                                Some(name) => format!("in replica set {name:?}"),
                                None => "not in a replica set".into(),
                            }
                        )));
                    }
                }
                self.discovered = true;
                if facts.members.is_empty() {
                    let kind = if facts.is_mongos {
                        "mongos"
                    } else {
                        "standalone server"
                    };
                    tracing::info!("upstream {answered} is a {kind}: one listener per host, nothing to rewrite");
                    for seed in self.seeds.clone() {
                        self.bind_member(seed).await?;
                    }
                } else {
                    tracing::info!(
                        "upstream is replica set {:?} with {} members: one listener each",
                        facts.set_name.as_deref().unwrap_or("?"),
                        facts.members.len()
                    );
                    self.follow(&answered, &facts).await?;
                }
            }
            Err(e) => {
                tracing::warn!(
                    "cannot ask the upstream for its topology ({e}); serving the hosts as given \
                     and asking again every {RETRY_INTERVAL:?}"
                );
                for seed in self.seeds.clone() {
                    self.bind_member(seed).await?;
                }
            }
        }
        if self.local.is_empty() {
            return Err(ProxyError::Topology(
                "no member could be given a listener: check --listen".into(),
            ));
        }
        Ok(())
    }

    /// Gives every member `facts` names that has no listener yet one of its own.
    async fn follow(&mut self, answered: &HostPort, facts: &HelloFacts) -> Result<(), ProxyError> {
        let mut ignored = 0usize;
        for address in &facts.members {
            if self.topology.serves(address) {
                continue;
            }
            if self.topology.member_count() >= MAX_MEMBERS {
                ignored += 1;
                continue;
            }
            match HostPort::parse(address) {
                Some(member) => {
                    self.bind_member(member).await?;
                }
                None => tracing::warn!("upstream names member {address:?}, which is not HOST:PORT"),
            }
        }
        if ignored > 0 && !self.warned_cap {
            self.warned_cap = true;
            tracing::warn!(
                "upstream {answered} names {} members; a replica set has at most {MAX_MEMBERS}: \
                 serving {MAX_MEMBERS}, {ignored} ignored (clients told about them would bypass \
                 the proxy)",
                facts.members.len()
            );
        }
        // The seed may be written otherwise than the set names it (localhost vs 127.0.0.1).
        if let Some(me) = &facts.me {
            let seed = answered.to_string();
            if !self.topology.serves(&seed) {
                if let Some(advertised) = self.topology.map().get(me).map(str::to_owned) {
                    self.topology.alias(&seed, &advertised);
                }
            }
        }
        Ok(())
    }

    /// Binds the next listener for `upstream`; `None` (with a warning) when the plan has no
    /// address left for it.
    async fn bind_member(&mut self, upstream: HostPort) -> Result<Option<Member>, ProxyError> {
        let Some(addr) = self.plan.address_for(self.next_index, &upstream) else {
            tracing::warn!(
                "no --listen address left for member {upstream}: it is not served, and clients \
                 told about it would bypass the proxy (add an address or a {upstream}=HOST:PORT mapping)"
            );
            return Ok(None);
        };
        let listener = TcpListener::bind((addr.host.as_str(), addr.port))
            .await
            .map_err(|source| ProxyError::Listen {
                addr: addr.to_string(),
                source,
            })?;
        let local = listener.local_addr().map_err(|source| ProxyError::Listen {
            addr: addr.to_string(),
            source,
        })?;
        self.next_index += 1;
        let host = match &self.advertise_host {
            Some(h) => h.clone(),
            None if local.ip().is_unspecified() => super::listen::hostname(),
            None => local.ip().to_string(),
        };
        let advertised = HostPort {
            host,
            port: local.port(),
        }
        .to_string();
        let member = Member {
            upstream,
            advertised,
        };
        tracing::info!(
            "serving upstream {} on {local} (advertised as {})",
            member.upstream,
            member.advertised
        );
        self.topology.add(member.clone());
        self.local.push(local);
        self.unstarted.push((listener, member.clone()));
        Ok(Some(member))
    }

    /// Asks the known members, then the seeds, until one answers.
    async fn discover(&self, timeout: Duration) -> Result<(HostPort, HelloFacts), String> {
        let mut candidates: Vec<HostPort> = self
            .topology
            .members()
            .into_iter()
            .map(|m| m.upstream)
            .collect();
        for seed in &self.seeds {
            if !candidates.contains(seed) {
                candidates.push(seed.clone());
            }
        }
        let mut last = String::from("no host to ask");
        for candidate in candidates {
            match ask_hello(&self.connector, &candidate, timeout).await {
                Ok(facts) => return Ok((candidate, facts)),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn start_accepting(&mut self, accepts: &mut JoinSet<()>, tx: &mpsc::Sender<Accepted>) {
        for (listener, member) in self.unstarted.drain(..) {
            accepts.spawn(accept_loop(
                listener,
                member,
                self.acceptor.clone(),
                tx.clone(),
            ));
        }
    }

    /// Accepts on every listener and follows the topology until aborted (which closes them).
    pub async fn run(
        mut self,
        tx: mpsc::Sender<Accepted>,
        changed: Arc<Notify>,
        interval: Duration,
    ) {
        let mut accepts = JoinSet::new();
        self.start_accepting(&mut accepts, &tx);
        if self.direct {
            std::future::pending::<()>().await;
        }
        let mut logged_failure = false;
        loop {
            let wait = if self.discovered {
                interval
            } else {
                RETRY_INTERVAL
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = changed.notified() => {}
            }
            match self.discover(START_HELLO_TIMEOUT).await {
                Ok((answered, facts)) => {
                    logged_failure = false;
                    if !self.discovered {
                        tracing::info!(
                            "upstream {answered} answered hello: following its topology"
                        );
                        self.discovered = true;
                    }
                    if let Err(e) = self.follow(&answered, &facts).await {
                        tracing::error!("cannot serve a new member: {e}");
                    }
                    self.start_accepting(&mut accepts, &tx);
                }
                Err(e) if !logged_failure => {
                    tracing::warn!("asking the upstream for its topology failed: {e}");
                    logged_failure = true;
                }
                Err(e) => tracing::debug!("asking the upstream for its topology failed: {e}"),
            }
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    member: Member,
    acceptor: Acceptor,
    tx: mpsc::Sender<Accepted>,
) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let accepted = Accepted {
                    stream,
                    peer,
                    member: member.clone(),
                    acceptor: acceptor.clone(),
                };
                if tx.send(accepted).await.is_err() {
                    return;
                }
            }
            // The proxy's own shortage, not the upstream's: pause, then accept again (the
            // waiting clients stay in the listen backlog meanwhile).
            Err(e) if super::streams::out_of_descriptors(&e) => {
                tracing::warn!(
                    "proxy out of file descriptors ({e}): not accepting clients on the listener \
                     for {} for {ACCEPT_PAUSE:?}; raise `ulimit -n` or close idle connections",
                    member.upstream
                );
                tokio::time::sleep(ACCEPT_PAUSE).await;
            }
            Err(e) => {
                tracing::warn!("accept failed on the listener for {}: {e}", member.upstream);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
