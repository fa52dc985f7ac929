//! The replayer against a replica set whose primary changes mid-replay, and reads sent to a
//! secondary when their recorded `$readPreference` allows it.
//!
//! secantusd-rs runs a one-node set only, and no server here can step down, so the set's *shape*
//! is played by two small relays in front of one real secantusd-rs: each answers `hello` itself
//! as a member of set `fake` (one primary, one secondary, `hosts` naming both relays) and forwards
//! every other request to the real server, which does all the work. After a number of inserts the
//! relays swap roles: the old primary answers writes with NotWritablePrimary (code 10107) without
//! forwarding them, as a stepped-down mongod does. Every request is counted with the role its relay
//! had when it arrived. In the harsher variant the old primary runs the insert that makes it step
//! down and then drops the connection instead of answering, as a mongod stepping down closes the
//! connections of writes in flight: the replayer does not know whether the write happened.

mod common;

use bson::rawdoc;
use common::*;
use mongotape::wire::op_msg::{MsgFlags, OpMsg, Section};
use mongotape::wire::{FrameSplitter, Message, MsgHeader, RequestInfo};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
struct SetState {
    /// Which relay (0 or 1) is primary now.
    primary: usize,
    /// Inserts relay 0 accepts before it steps down.
    step_down_after: usize,
    /// Relay 0 steps down by dropping the connection of the last insert it ran, unanswered.
    drop_on_step_down: bool,
    inserts_seen: usize,
    addrs: Vec<String>,
    /// (relay, role, command) -> count; role is "primary" or "secondary" when the request came.
    served: BTreeMap<(usize, &'static str, String), u64>,
    rejected: u64,
}

type Shared = Arc<Mutex<SetState>>;

fn hello_reply(state: &SetState, me: usize) -> bson::RawDocumentBuf {
    let mut hosts = bson::RawArrayBuf::new();
    for a in &state.addrs {
        hosts.push(a.as_str());
    }
    rawdoc! {
        "helloOk": true,
        "isWritablePrimary": state.primary == me,
        "secondary": state.primary != me,
        "setName": "fake",
        "hosts": hosts,
        "primary": state.addrs[state.primary].as_str(),
        "me": state.addrs[me].as_str(),
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "ok": 1.0,
    }
}

fn reply_bytes(body: bson::RawDocumentBuf, response_to: i32) -> Vec<u8> {
    OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(body)],
        checksum: None,
    }
    .encode(1, response_to)
}

async fn read_frame(stream: &mut TcpStream, splitter: &mut FrameSplitter) -> Option<Vec<u8>> {
    loop {
        if let Some(f) = splitter.next_frame().ok()? {
            return Some(f.to_vec());
        }
        if stream.read_buf(splitter.read_buf()).await.ok()? == 0 {
            return None;
        }
    }
}

async fn serve(mut client: TcpStream, me: usize, upstream: String, state: Shared) {
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    let (mut from_client, mut from_server) = (FrameSplitter::new(), FrameSplitter::new());
    while let Some(frame) = read_frame(&mut client, &mut from_client).await {
        let request_id = MsgHeader::parse(&frame).unwrap().unwrap().request_id;
        let req = RequestInfo::of(&Message::parse(&frame).unwrap());
        let mut drop_reply = false;
        let answer = {
            let mut s = state.lock().unwrap();
            if matches!(req.command.as_str(), "hello" | "isMaster" | "ismaster") {
                Some(hello_reply(&s, me))
            } else {
                let role = if s.primary == me {
                    "primary"
                } else {
                    "secondary"
                };
                let write = matches!(req.command.as_str(), "insert" | "update" | "delete");
                if write && s.primary != me {
                    s.rejected += 1;
                    Some(
                        rawdoc! { "ok": 0.0, "errmsg": "not primary", "code": 10107, "codeName": "NotWritablePrimary" },
                    )
                } else {
                    *s.served.entry((me, role, req.command.clone())).or_default() += 1;
                    if req.command == "insert" && me == 0 {
                        s.inserts_seen += 1;
                        if s.inserts_seen == s.step_down_after {
                            s.primary = 1;
                            drop_reply = s.drop_on_step_down;
                        }
                    }
                    None
                }
            }
        };
        if let Some(body) = answer {
            if client
                .write_all(&reply_bytes(body, request_id))
                .await
                .is_err()
            {
                return;
            }
            continue;
        }
        if server.write_all(&frame).await.is_err() {
            return;
        }
        if !req.expects_reply {
            continue;
        }
        let Some(reply) = read_frame(&mut server, &mut from_server).await else {
            return;
        };
        if drop_reply {
            return; // the write ran; its connection closes unanswered
        }
        if client.write_all(&reply).await.is_err() {
            return;
        }
    }
}

/// Two relays in front of `upstream`, relay 0 primary until it has accepted `step_down_after`
/// inserts (dropping the connection of the last one when `drop_on_step_down`). Returns their
/// addresses and the state; they run until the runtime ends.
async fn fake_set(
    upstream: &str,
    step_down_after: usize,
    drop_on_step_down: bool,
) -> (Vec<String>, Shared) {
    let mut listeners = Vec::new();
    for _ in 0..2 {
        listeners.push(TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let addrs: Vec<String> = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    let state: Shared = Arc::new(Mutex::new(SetState {
        step_down_after,
        drop_on_step_down,
        addrs: addrs.clone(),
        ..SetState::default()
    }));
    for (me, listener) in listeners.into_iter().enumerate() {
        let (state, upstream) = (state.clone(), upstream.to_owned());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(serve(client, me, upstream.clone(), state.clone()));
            }
        });
    }
    (addrs, state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_a_new_primary_and_sends_secondary_reads_to_a_secondary() {
    let server = Server::start();
    // Recorded as an application on a replica set would be (replicaSet=, no directConnection:
    // with directConnection a driver sends primaryPreferred), reads with secondaryPreferred carry
    // it in $readPreference. The recording happens before any relay runs, so blocking here holds
    // nothing up.
    let recording_server = Server::start();
    let dir = tempdir();
    let capture = dir.path().join("failover.mtape");
    let proxy = Proxy::start(recording_server.addr(), &capture);
    let uri = format!(
        "mongodb://{}/?replicaSet=secantus&readPreference=secondaryPreferred",
        proxy.addr()
    );
    python(INSERTS_FINDS, &[uri.as_str(), "20", "0", "0"]);
    assert!(proxy.stop().status.success());
    let (addrs, state) = fake_set(server.addr(), 8, false).await;
    // The target names one member only: the other is found from hello.
    let target = format!("mongodb://{}/?replicaSet=fake", addrs[0]);
    let r = tokio::task::spawn_blocking(move || replay(&capture, &target, &["--fast", "--quiet"]))
        .await
        .unwrap();

    let s = state.lock().unwrap();
    let served = |relay: usize, role: &str, command: &str| {
        s.served
            .get(&(relay, role_static(role), command.to_owned()))
            .copied()
            .unwrap_or(0)
    };
    // Relay 0 took 8 inserts as primary, then refused one; relay 1, primary since, took the rest.
    assert_eq!(served(0, "primary", "insert"), 8, "{:?}", s.served);
    assert_eq!(s.rejected, 1, "{:?}", s.served);
    assert_eq!(served(1, "primary", "insert"), 12, "{:?}", s.served);
    assert_eq!(r.report["retried_not_primary"], 1, "{}", r.describe());
    assert_eq!(r.count("insert"), 20, "{}", r.describe());
    // Every read recorded as secondaryPreferred went to the secondary of the moment (relay 0 after
    // the swap), getMores following their cursor there.
    assert_eq!(
        served(0, "secondary", "find"),
        r.count("find"),
        "{:?}",
        s.served
    );
    assert!(served(0, "secondary", "getMore") > 0, "{:?}", s.served);
    assert_eq!(
        served(1, "primary", "find") + served(1, "primary", "getMore"),
        0
    );
    assert_eq!(r.divergences(), 0, "{}", r.describe());
    assert!(
        r.report["topology"]
            .as_str()
            .unwrap()
            .starts_with("replica set fake, primary"),
        "{}",
        r.describe()
    );
    drop(s);
    let count = python(
        "import sys; from pymongo import MongoClient\n\
         print(MongoClient(sys.argv[1]).analyze_test.c.count_documents({}))",
        &[server.uri()],
    );
    assert_eq!(count.trim(), "20");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_that_drops_the_connection_of_a_write_in_flight_is_followed_and_the_write_retried(
) {
    let server = Server::start();
    let recording_server = Server::start();
    let dir = tempdir();
    let capture = dir.path().join("dropped.mtape");
    let proxy = Proxy::start(recording_server.addr(), &capture);
    // Acknowledged inserts through a replica-set URI carry lsid + txnNumber (retryable writes).
    let uri = format!("mongodb://{}/?replicaSet=secantus", proxy.addr());
    python(INSERTS_FINDS, &[uri.as_str(), "20", "0", "0"]);
    assert!(proxy.stop().status.success());
    let (addrs, state) = fake_set(server.addr(), 8, true).await;
    let target = format!("mongodb://{}/?replicaSet=fake", addrs[0]);
    let r = tokio::task::spawn_blocking(move || replay(&capture, &target, &["--fast", "--quiet"]))
        .await
        .unwrap();

    let s = state.lock().unwrap();
    let served = |relay: usize, command: &str| {
        s.served
            .get(&(relay, "primary", command.to_owned()))
            .copied()
            .unwrap_or(0)
    };
    // Relay 0 ran 8 inserts, the 8th unanswered; relay 1 got that one again, then the other 12.
    assert_eq!(served(0, "insert"), 8, "{:?}", s.served);
    assert_eq!(served(1, "insert"), 13, "{:?}", s.served);
    assert_eq!(s.rejected, 0, "{:?}", s.served);
    assert_eq!(
        r.report["retried_dropped_connection"],
        1,
        "{}",
        r.describe()
    );
    assert_eq!(r.report["retried_not_primary"], 0, "{}", r.describe());
    assert_eq!(r.count("insert"), 20, "{}", r.describe());
    assert_eq!(r.divergences(), 0, "{}", r.describe());
    drop(s);
    // `merge` keeps the retries (here of the one shard there is).
    let report = dir.path().join("dropped.json");
    std::fs::write(&report, r.report.to_string()).unwrap();
    let merged_path = dir.path().join("merged.json");
    let merged = mongotape(&[
        "merge".as_ref(),
        report.as_os_str(),
        "--quiet".as_ref(),
        "--report".as_ref(),
        merged_path.as_os_str(),
    ]);
    assert!(merged.success(), "{}", merged.stderr);
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged_path).unwrap()).unwrap();
    assert_eq!(
        merged["retried_dropped_connection"], 1,
        "{}",
        merged["merge"]
    );
    assert_eq!(merged["summary"]["ops"], r.report["summary"]["ops"]);
    // The write sent twice ran once: the retry carried the same lsid and txnNumber.
    let count = python(
        "import sys; from pymongo import MongoClient\n\
         print(MongoClient(sys.argv[1]).analyze_test.c.count_documents({}))",
        &[server.uri()],
    );
    assert_eq!(count.trim(), "20");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_of_a_single_server_still_ends_the_replay() {
    // Without a replica set there is no other member to go to: the replay ends with the error.
    let server = Server::start();
    let recorded = record_inserts_finds(&server, "single", 10, 0.0, 0);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let upstream = server.addr().to_owned();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(drop_fifth_insert(client, upstream.clone()));
        }
    });
    let capture = recorded.capture.clone();
    let r = tokio::task::spawn_blocking(move || {
        try_replay(
            &capture,
            &format!("mongodb://{addr}/?directConnection=true"),
            &["--fast", "--quiet"],
        )
    })
    .await
    .unwrap();
    assert!(!r.output.success(), "{}", r.describe());
    assert!(
        r.output.stderr.contains("closed the connection"),
        "{}",
        r.describe()
    );
}

/// A plain relay that closes the client's connection when the 5th insert arrives.
async fn drop_fifth_insert(mut client: TcpStream, upstream: String) {
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    let (mut from_client, mut from_server) = (FrameSplitter::new(), FrameSplitter::new());
    let mut inserts = 0;
    while let Some(frame) = read_frame(&mut client, &mut from_client).await {
        let req = RequestInfo::of(&Message::parse(&frame).unwrap());
        if req.command == "insert" {
            inserts += 1;
            if inserts == 5 {
                return;
            }
        }
        if server.write_all(&frame).await.is_err() {
            return;
        }
        if !req.expects_reply {
            continue;
        }
        let Some(reply) = read_frame(&mut server, &mut from_server).await else {
            return;
        };
        if client.write_all(&reply).await.is_err() {
            return;
        }
    }
}

fn role_static(role: &str) -> &'static str {
    if role == "primary" {
        "primary"
    } else {
        "secondary"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_mongos_share_the_connections() {
    // Two relays that say they are mongos (msg: isdbgrid) in front of one server.
    let server = Server::start();
    let recording_server = Server::start();
    let recorded = record_inserts_finds(&recording_server, "mongos", 10, 0.0, 0);
    let mut addrs = Vec::new();
    let counts: Arc<Mutex<BTreeMap<usize, u64>>> = Arc::default();
    for me in 0..2 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        addrs.push(listener.local_addr().unwrap().to_string());
        let (upstream, counts) = (server.addr().to_owned(), counts.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                *counts.lock().unwrap().entry(me).or_default() += 1;
                tokio::spawn(mongos(client, upstream.clone()));
            }
        });
    }
    let target = format!("mongodb://{},{}/", addrs[0], addrs[1]);
    let capture = recorded.capture.clone();
    let r = tokio::task::spawn_blocking(move || {
        replay(
            &capture,
            &target,
            &["--fast", "--quiet", "--connections", "4"],
        )
    })
    .await
    .unwrap();
    assert!(
        r.report["topology"]
            .as_str()
            .unwrap()
            .starts_with("2 mongos"),
        "{}",
        r.describe()
    );
    let counts = counts.lock().unwrap();
    // hello from discovery (one each), the probe's connection, then 4 lanes round-robin: 2 each.
    assert!(counts[&0] >= 3 && counts[&1] >= 3, "{counts:?}");
    // (Finds may overtake inserts on other lanes with --fast: divergences are not counted here.)
    assert_eq!(r.count("insert"), 10, "{}", r.describe());
}

async fn mongos(mut client: TcpStream, upstream: String) {
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    let (mut from_client, mut from_server) = (FrameSplitter::new(), FrameSplitter::new());
    while let Some(frame) = read_frame(&mut client, &mut from_client).await {
        let request_id = MsgHeader::parse(&frame).unwrap().unwrap().request_id;
        let req = RequestInfo::of(&Message::parse(&frame).unwrap());
        if req.command == "hello" {
            let body = rawdoc! { "isWritablePrimary": true, "msg": "isdbgrid", "maxWireVersion": 21, "minWireVersion": 0, "ok": 1.0 };
            if client
                .write_all(&reply_bytes(body, request_id))
                .await
                .is_err()
            {
                return;
            }
            continue;
        }
        if server.write_all(&frame).await.is_err() {
            return;
        }
        if !req.expects_reply {
            continue;
        }
        let Some(reply) = read_frame(&mut server, &mut from_server).await else {
            return;
        };
        if client.write_all(&reply).await.is_err() {
            return;
        }
    }
}
