//! What a listener does with a client or an upstream it cannot serve as asked: a TLS client on a
//! plaintext listener is closed at once, saying why (pymongo with tls=true against the real
//! server behind the proxy); an upstream whose hello names 3,000 members gets 50 listeners and a
//! warning, and the members of a large set left unserved are named in one short line; an
//! upstream that closes is said in words. The stand-in upstreams run on threads of
//! the test and are only ever reached on 127.0.0.1.

mod common;

use common::*;
use mongotape::capture::{CloseEvent, Side};
use mongotape::wire::{FrameSplitter, MsgFlags, MsgHeader, OpMsg, Section};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Waits (bounded) until the proxy's stderr holds `needle`; returns all of it.
fn wait_for_log(proxy: &Proxy, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = proxy.stderr();
        if log.contains(needle) {
            return log;
        }
        assert!(Instant::now() < deadline, "no {needle:?} in:\n{log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_tls_client_on_a_plaintext_listener_is_closed_at_once_and_told_why() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("tls-on-plain.mtape");
    let proxy = Proxy::start(server.addr(), &out);
    // connectTimeoutMS well past serverSelectionTimeoutMS: a handshake left hanging would say
    // "timed out", a connection closed at once says how it ended.
    let said = python(
        "import sys\n\
         from pymongo import MongoClient\n\
         from pymongo.errors import PyMongoError\n\
         c = MongoClient(sys.argv[1], tls=True, tlsAllowInvalidCertificates=True,\n\
         \x20               serverSelectionTimeoutMS=3000, connectTimeoutMS=60000)\n\
         try:\n\
         \x20   c.admin.command('ping'); print('answered')\n\
         except PyMongoError as e:\n\
         \x20   print(e)\n",
        &[proxy.uri()],
    );
    eprintln!(
        "FIGURE pymongo tls=true on the plaintext listener: {}",
        said.trim()
    );
    assert!(!said.contains("answered"), "{said}");
    assert!(
        !said.contains("timed out"),
        "the TLS handshake hung: {said}"
    );
    assert!(said.contains("EOF") || said.contains("reset"), "{said}");
    let log = wait_for_log(&proxy, "a TLS client connected to a plaintext listener");
    assert!(
        log.contains("(start the proxy with --tls-cert/--tls-key)"),
        "{log}"
    );
    // A plaintext client on the same listener is served as ever.
    assert_eq!(raw_ping(proxy.addr()).ok, Some(1.0));
    assert!(proxy.stop().status.success());
    let closes = capture_closes(&out);
    let tls: Vec<&CloseEvent> = closes
        .iter()
        .filter(|c| {
            c.reason
                == "a TLS client connected to a plaintext listener (start the proxy with \
                    --tls-cert/--tls-key)"
        })
        .collect();
    assert!(!tls.is_empty(), "{closes:?}");
    assert!(tls.iter().all(|c| c.side == Side::Client), "{tls:?}");
}

/// Answers every message of each connection with `reply(request_id)`, on threads of its own.
fn stand_in(reply: impl Fn(i32) -> Option<Vec<u8>> + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let reply = std::sync::Arc::new(reply);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let reply = reply.clone();
            std::thread::spawn(move || {
                let mut splitter = FrameSplitter::new();
                while let Some(frame) = read_frame(&mut s, &mut splitter) {
                    let Ok(Some(header)) = MsgHeader::parse(&frame) else {
                        return;
                    };
                    // None: close the connection instead of answering.
                    let Some(bytes) = reply(header.request_id) else {
                        return;
                    };
                    if s.write_all(&bytes).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A hello reply of replica set `big` naming `me` and `others` more members.
fn big_hello(me: &str, others: usize, response_to: i32) -> Vec<u8> {
    let mut hosts = bson::raw::RawArrayBuf::new();
    hosts.push(me);
    for i in 0..others {
        hosts.push(format!("member-{i}.invalid:27017"));
    }
    OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(bson::rawdoc! {
            "isWritablePrimary": true, "hosts": hosts, "setName": "big", "primary": me,
            "me": me, "maxWireVersion": 21, "ok": 1.0,
        })],
        checksum: None,
    }
    .encode(9, response_to)
}

/// A proxy in front of a stand-in set whose hello names `members` (itself first), once it has
/// announced its listeners; with the start of its log.
fn in_front_of_a_set_of(members: usize, out: &std::path::Path) -> (Proxy, String) {
    // The stand-in must know its own address before it answers: bind, then name it.
    let holder = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let named = holder.clone();
    let me = stand_in(move |id| Some(big_hello(named.get().unwrap(), members - 1, id)));
    holder.set(me.clone()).unwrap();
    let proxy = Proxy::start_with(
        &format!("mongodb://{me}/?replicaSet=big"),
        out,
        // Not --quiet: the listeners are counted in the info lines it drops.
        &[],
    );
    // The last line of the start: every listener is announced before it.
    let log = wait_for_log(&proxy, "mongotape: forwarding to");
    (proxy, log)
}

/// A hello through the proxy's first listener, answered (panics otherwise).
fn hello_through(proxy: &Proxy) {
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let hello = command_message(
        1,
        MsgFlags::empty(),
        bson::rawdoc! { "hello": 1, "$db": "admin" },
    );
    s.write_all(&hello).unwrap();
    let reply = read_frame(&mut s, &mut FrameSplitter::new()).expect("a hello reply");
    assert!(reply.len() > 16);
}

#[test]
fn a_hello_naming_three_thousand_members_gets_fifty_listeners_and_a_warning() {
    let dir = tempdir();
    let (proxy, log) = in_front_of_a_set_of(3_000, &dir.path().join("big.mtape"));
    assert!(
        log.contains("names 3000 members; a replica set has at most 50: serving 50, 2950 ignored"),
        "{log}"
    );
    assert_eq!(log.matches("serving upstream ").count(), 50, "{log}");
    assert_eq!(log.matches("mongotape: listening on ").count(), 50);
    // Still serving, and the topology asked again (every 10 s, and after a hello naming
    // addresses it does not serve) is not warned about again.
    hello_through(&proxy);
    hello_through(&proxy);
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert_eq!(exit.stderr.matches("ignored (clients told").count(), 1);
    assert_eq!(exit.stderr.matches("serving upstream ").count(), 50);
}

#[test]
fn the_unserved_members_of_a_large_set_are_warned_about_in_one_short_line() {
    let dir = tempdir();
    let (proxy, _) = in_front_of_a_set_of(1_000, &dir.path().join("wide.mtape"));
    hello_through(&proxy);
    let log = wait_for_log(&proxy, "UNSERVED ADDRESS");
    let line = log
        .lines()
        .find(|l| l.contains("UNSERVED ADDRESS"))
        .unwrap();
    assert!(line.contains("and 945 more"), "{line}");
    assert!(line.len() < 600, "{} bytes: {line}", line.len());
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert_eq!(exit.stderr.matches("ignored (clients told").count(), 1);
}

#[test]
fn an_upstream_that_closes_is_said_in_words() {
    // Reads one request, then hangs up without answering.
    let upstream = stand_in(|_| None);
    let dir = tempdir();
    let out = dir.path().join("hangup.mtape");
    let proxy = Proxy::start(&format!("{upstream}/?directConnection=true"), &out);
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&ping_message(1, MsgFlags::empty())).unwrap();
    assert!(read_frame(&mut s, &mut FrameSplitter::new()).is_none());
    let log = wait_for_log(
        &proxy,
        "connection closed: the upstream closed the connection",
    );
    assert!(log.contains("side=Upstream"), "{log}");
    assert!(proxy.stop().status.success());
    let closes = capture_closes(&out);
    assert!(
        closes
            .iter()
            .any(|c| c.side == Side::Upstream && c.reason == "the upstream closed the connection"),
        "{closes:?}"
    );
}
