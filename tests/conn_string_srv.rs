//! `mongodb+srv://` resolved for real, for `record --upstream` and `replay --target` (issue 8).
//!
//! There is no DNS here, so the test makes its own: a network namespace (its own loopback) in
//! which a DNS responder on 127.0.0.1:53 (hickory-proto's message codec) answers the SRV record
//! `_mongodb._tcp.cluster0.mongotape.test` (one member, `node1.mongotape.test:PORT`), the TXT
//! record `replicaSet=secantus&authSource=appdb` and the member's A record. `ip netns exec`
//! mounts `/etc/netns/NAME/resolv.conf` (nameserver 127.0.0.1) over `/etc/resolv.conf`, so the
//! mongodb crate's resolver (hickory, which reads it) and the system resolver (the member's name)
//! both ask that responder. The server, the client, the proxy and the replayer all run inside.
//! Needs root and iproute2 (`ip netns`), as CI has: without them the test fails, saying so.

mod common;

use common::*;
use hickory_proto::op::{Message, MessageType, Query};
use hickory_proto::rr::rdata::{A, SRV, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use std::net::{Ipv4Addr, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const SRV_HOST: &str = "cluster0.mongotape.test";
const MEMBER: &str = "node1.mongotape.test";
const TXT_OPTIONS: &str = "replicaSet=secantus&authSource=appdb";

/// The test's namespace, its resolv.conf naming the responder on 127.0.0.1.
fn netns_with_dns() -> Netns {
    let ns = Netns::create("srv");
    let etc = ns.etc_dir();
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(
        etc.join("resolv.conf"),
        "nameserver 127.0.0.1\noptions timeout:2 attempts:2\n",
    )
    .unwrap();
    ns
}

/// Answers SRV, TXT and A (AAAA: no record) queries for the test's names; counts the SRV and
/// TXT queries answered.
fn dns_responder(port: u16, srv_queries: Arc<AtomicU64>) {
    let socket = UdpSocket::bind("127.0.0.1:53")
        .unwrap_or_else(|e| panic!("bind the DNS responder on 127.0.0.1:53: {e}"));
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        while let Ok((n, peer)) = socket.recv_from(&mut buf) {
            let Ok(query) = Message::from_vec(&buf[..n]) else {
                continue;
            };
            let mut reply = Message::response(query.metadata.id, query.metadata.op_code);
            reply.metadata.message_type = MessageType::Response;
            reply.metadata.authoritative = true;
            reply.metadata.recursion_desired = query.metadata.recursion_desired;
            reply.metadata.recursion_available = true;
            for q in &query.queries {
                reply.add_query(q.clone());
                if let Some(record) = answer(q, port) {
                    if matches!(q.query_type(), RecordType::SRV | RecordType::TXT) {
                        srv_queries.fetch_add(1, Ordering::Relaxed);
                    }
                    reply.add_answer(record);
                }
            }
            if let Ok(bytes) = reply.to_vec() {
                let _ = socket.send_to(&bytes, peer);
            }
        }
    });
}

fn answer(q: &Query, port: u16) -> Option<Record> {
    let name = q
        .name()
        .to_ascii()
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let owner = q.name().clone();
    let rdata =
        match (q.query_type(), name.as_str()) {
            (RecordType::SRV, n) if n == format!("_mongodb._tcp.{SRV_HOST}") => RData::SRV(
                SRV::new(0, 0, port, Name::from_ascii(format!("{MEMBER}.")).ok()?),
            ),
            (RecordType::TXT, SRV_HOST) => RData::TXT(TXT::new(vec![TXT_OPTIONS.to_owned()])),
            (RecordType::A, MEMBER) => RData::A(A(Ipv4Addr::LOCALHOST)),
            _ => return None,
        };
    Some(Record::from_rdata(owner, 60, rdata))
}

const CREATE_USERS: &str = r#"
import sys
from pymongo import MongoClient
uri = sys.argv[1]
MongoClient(uri).admin.command("createUser", "root", pwd="rootpw", roles=["root"])
MongoClient(uri, username="root", password="rootpw").appdb.command(
    "createUser", "app", pwd="apppw", roles=[{"role": "readWrite", "db": "srvtest"}])
"#;

const WORKLOAD: &str = r#"
import sys
from pymongo import MongoClient
c = MongoClient(sys.argv[1]).srvtest.c
c.insert_many([{"_id": i} for i in range(10)])
for i in range(10, 30):
    c.insert_one({"_id": i})
print(c.count_documents({}))
"#;

const COUNT_AND_DROP: &str = r#"
import sys
from pymongo import MongoClient
c = MongoClient(sys.argv[1]).srvtest.c
print(c.count_documents({}))
if sys.argv[2] == "drop":
    c.drop()
"#;

#[test]
fn mongodb_srv_is_resolved_for_record_and_replay() {
    let ns = netns_with_dns();
    ns.enter();
    let server = Server::start_with(&["--auth"]);
    python(CREATE_USERS, &[server.uri()]);
    let srv_queries = Arc::new(AtomicU64::new(0));
    dns_responder(server.port(), srv_queries.clone());
    let app = |host: &str| format!("mongodb://app:apppw@{host}/?authSource=appdb");

    // Recorded through a proxy whose upstream is only the SRV name.
    let dir = tempdir();
    let capture = dir.path().join("srv.mtape");
    let mut record = Command::new(ns.exec()[0]);
    record
        .args(&ns.exec()[1..])
        .arg(mongotape_bin())
        .args(["record", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(format!("mongodb+srv://{SRV_HOST}/?tls=false"))
        .arg("--out")
        .arg(&capture);
    let proxy = Proxy::spawn(record, &capture);
    let client_uri = format!(
        "mongodb://app:apppw@{}/?replicaSet=secantus&authSource=appdb",
        proxy.addr()
    );
    assert_eq!(python(WORKLOAD, &[client_uri.as_str()]).trim(), "30");
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let queries_by_record = srv_queries.load(Ordering::Relaxed);
    assert!(
        queries_by_record >= 2,
        "the proxy asked no SRV/TXT: {}",
        exit.stderr
    );
    // The TXT record's replicaSet made the proxy follow the set.
    assert!(exit.stderr.contains("secantus"), "{}", exit.stderr);
    let analyzed = analyze_json(&capture, &[]);
    let inserts = analyzed.to_string();
    assert!(inserts.contains("insert"), "{inserts}");

    // Replayed with only the SRV name (and the credentials): the TXT record's authSource=appdb
    // is where the user lives, and its replicaSet names the set to find the primary of.
    assert_eq!(
        python(COUNT_AND_DROP, &[app(server.addr()).as_str(), "drop"]).trim(),
        "30"
    );
    let r = try_replay_via(
        &ns.exec(),
        &capture,
        &format!("mongodb+srv://app:apppw@{SRV_HOST}/?tls=false"),
        &["--fast", "--quiet"],
    );
    assert!(r.output.success(), "{}", r.describe());
    assert_eq!(r.report["complete"], true, "{}", r.describe());
    assert!(
        srv_queries.load(Ordering::Relaxed) >= queries_by_record + 2,
        "the replayer asked no SRV/TXT"
    );
    assert!(
        r.report["topology"]
            .as_str()
            .unwrap_or_default()
            .starts_with("replica set secantus"),
        "{}",
        r.describe()
    );
    assert_eq!(r.count("insert"), 21, "{}", r.describe());
    assert_eq!(
        python(COUNT_AND_DROP, &[app(server.addr()).as_str(), "keep"]).trim(),
        "30"
    );
}
