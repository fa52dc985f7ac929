//! Fault matrix: a client that sends many requests with big replies and never reads them. The
//! proxy forwards replies only as fast as the client takes them (TCP back-pressure down to the
//! server), so its memory stays bounded whatever is owed; other clients keep being served; the
//! stuck connection stays open (as a direct connection to the server would) and, once the client
//! reads, every reply arrives whole and in order. The figures go to docs/reliability.md.

mod common;

use bson::rawdoc;
use common::*;
use mongotape::capture::{RecordKind, Side};
use mongotape::wire::{FrameSplitter, Message, MsgFlags, MsgHeader, ReplyInfo};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Requests the client sends without reading, each answered with a ~3 MB document (kept small
/// enough for a debug build's recorder to write the capture quickly once the client reads).
const REQUESTS: i32 = 40;
const DOC_BYTES: usize = 3_000_000;

#[test]
fn a_client_that_stops_reading_holds_no_memory_and_blocks_no_one() {
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let out = dir.path().join("nonreading.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    // One big document, inserted directly.
    let mut s = TcpStream::connect(server.addr()).unwrap();
    let pad = "x".repeat(DOC_BYTES);
    s.write_all(&command_message(
        1,
        MsgFlags::empty(),
        rawdoc! { "insert": "c", "documents": [{ "_id": 1, "pad": pad }], "$db": "nonreading" },
    ))
    .unwrap();
    let reply = read_frame(&mut s, &mut FrameSplitter::new()).unwrap();
    assert!(ReplyInfo::of(&Message::parse(&reply).unwrap()).ok == Some(1.0));
    let (rss_before, _) = rss_mb(proxy.pid());

    // 40 finds of it (120 MB of replies owed), sent through the proxy, not read.
    let mut stuck = TcpStream::connect(proxy.addr()).unwrap();
    for id in 1..=REQUESTS {
        stuck
            .write_all(&command_message(
                id,
                MsgFlags::empty(),
                rawdoc! { "find": "c", "filter": { "_id": 1 }, "$db": "nonreading" },
            ))
            .unwrap();
    }
    let started = Instant::now();
    let (mut peak, mut pings) = (0.0f64, 0);
    while started.elapsed() < Duration::from_secs(5) {
        assert!(
            raw_ping(proxy.addr()).ok == Some(1.0),
            "another client is not served"
        );
        pings += 1;
        peak = peak.max(rss_mb(proxy.pid()).0);
        std::thread::sleep(Duration::from_millis(250));
    }
    let (_, hwm) = rss_mb(proxy.pid());
    peak = peak.max(hwm);
    eprintln!(
        "FIGURE non-reading client: {REQUESTS} x {} MB replies owed; proxy RSS {rss_before:.0} MB before, peak {peak:.0} MB; {pings} pings from another client served meanwhile",
        DOC_BYTES / 1_000_000
    );
    // The replies owed are 120 MB; the proxy holds at most a few of them (socket buffers, the
    // message being recorded, the recorder's queue on its way to disk).
    assert!(
        peak < rss_before + 32.0,
        "proxy peak RSS {peak:.0} MB, {rss_before:.0} MB before"
    );

    // The stuck connection is still open: the client now reads every reply, whole and in order.
    stuck
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut splitter = FrameSplitter::new();
    for id in 1..=REQUESTS {
        let frame = read_frame(&mut stuck, &mut splitter)
            .unwrap_or_else(|| panic!("connection closed before reply {id}"));
        let header = MsgHeader::parse(&frame).unwrap().unwrap();
        assert_eq!(header.response_to, id);
        assert!(
            frame.len() > DOC_BYTES,
            "reply {id} is {} bytes",
            frame.len()
        );
        assert!(ReplyInfo::of(&Message::parse(&frame).unwrap()).ok == Some(1.0));
    }
    let client_port = stuck.local_addr().unwrap().port();
    assert!(
        proxy_holds(proxy.port(), client_port),
        "the open connection is not seen"
    );
    drop(stuck);
    // SIGTERM only once the proxy has seen the client's close, or the close is the proxy's.
    let deadline = Instant::now() + Duration::from_secs(10);
    while proxy_holds(proxy.port(), client_port) {
        assert!(
            Instant::now() < deadline,
            "the proxy still holds the closed client's connection after 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The recorder may still be writing the 120 MB of replies it queued.
    let exit = proxy.stop_within(Duration::from_secs(120));
    assert!(exit.status.success(), "{exit:?}");

    // The capture holds every request and reply of the stuck connection, then its close by the
    // client.
    let records = capture_records(&out);
    // The pings each came on a connection of their own, with one request.
    let conn = records
        .iter()
        .filter(|r| r.kind == RecordKind::Request)
        .map(|r| r.conn_id)
        .max_by_key(|c| records.iter().filter(|r| r.conn_id == *c).count())
        .unwrap();
    let count = |kind| {
        records
            .iter()
            .filter(|r| r.conn_id == conn && r.kind == kind)
            .count()
    };
    assert_eq!(count(RecordKind::Request), REQUESTS as usize);
    assert_eq!(count(RecordKind::Reply), REQUESTS as usize);
    let close = records
        .iter()
        .find(|r| r.conn_id == conn && r.kind == RecordKind::Close)
        .map(|r| r.event::<mongotape::capture::CloseEvent>().unwrap())
        .expect("a close record");
    assert_eq!(close.side, Side::Client, "{close:?}");
}

/// Whether a socket on `local_port` connected to `remote_port` is still open here (ESTABLISHED or
/// CLOSE_WAIT in /proc/net/tcp): the proxy's side of a client connection it has not closed yet.
fn proxy_holds(local_port: u16, remote_port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("read /proc/net/tcp");
    table.lines().skip(1).any(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let port = |addr: &str| {
            addr.rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
        };
        f.len() > 3
            && port(f[1]) == Some(local_port)
            && port(f[2]) == Some(remote_port)
            && matches!(f[3], "01" | "08")
    })
}
