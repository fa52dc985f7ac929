//! Bad input at the proxy: garbage, oversized lengths, truncated frames and bad checksums from a
//! client; an upstream that is down or dies; the proxy itself killed with SIGKILL. Each gets a clear
//! log line, the other connections keep working, and the capture stays readable.

mod common;

use common::*;
use mongotape::capture::{CaptureError, CaptureReader, CloseEvent, RecordKind, Side};
use mongotape::wire::{Message, MsgFlags, WireError};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// True when the peer closes the socket (EOF or reset) within the timeout.
fn closed_by_peer(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 1024];
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
    false
}

fn close_events(path: &Path) -> Vec<(u64, CloseEvent)> {
    CaptureReader::open(path)
        .unwrap()
        .map(Result::unwrap)
        .filter(|r| r.kind == RecordKind::Close)
        .map(|r| (r.conn_id, r.event::<CloseEvent>().unwrap()))
        .collect()
}

fn wait_for_log(proxy: &Proxy, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = proxy.stderr();
        if log.contains(needle) || Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn garbage_oversized_and_truncated_frames_close_only_their_connection() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("bad.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    // A healthy connection stays open across everything below.
    let mut healthy = TcpStream::connect(proxy.addr()).unwrap();
    healthy
        .write_all(&ping_message(7, MsgFlags::empty()))
        .unwrap();

    let mut garbage = TcpStream::connect(proxy.addr()).unwrap();
    garbage
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert!(
        closed_by_peer(&mut garbage),
        "garbage connection stays open"
    );
    let log = wait_for_log(&proxy, "exceeds the 48000000-byte maximum");
    assert!(log.contains("sent an invalid message"), "{log}");

    let mut oversized = TcpStream::connect(proxy.addr()).unwrap();
    let mut header = (200_000_000i32).to_le_bytes().to_vec();
    header.extend_from_slice(&[0; 12]);
    oversized.write_all(&header).unwrap();
    assert!(closed_by_peer(&mut oversized));

    let mut tiny = TcpStream::connect(proxy.addr()).unwrap();
    tiny.write_all(&3i32.to_le_bytes()).unwrap();
    assert!(closed_by_peer(&mut tiny));
    let log = wait_for_log(&proxy, "below the 16-byte header");
    assert!(log.contains("below the 16-byte header"), "{log}");

    // Half a message, then the client goes away.
    {
        let mut half = TcpStream::connect(proxy.addr()).unwrap();
        let msg = ping_message(9, MsgFlags::empty());
        half.write_all(&msg[..msg.len() / 2]).unwrap();
    }
    let log = wait_for_log(&proxy, "bytes into a message");
    assert!(log.contains("bytes into a message"), "{log}");

    assert!(raw_ping(proxy.addr()).is_ok(), "new connections still work");
    let mut reply = [0u8; 16];
    healthy
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    healthy.read_exact(&mut reply).unwrap();
    healthy
        .write_all(&ping_message(8, MsgFlags::empty()))
        .unwrap();
    assert!(
        !closed_by_peer_quickly(&mut healthy),
        "the healthy connection was closed"
    );

    drop(healthy);
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let closes = close_events(&out);
    let invalid: Vec<_> = closes
        .iter()
        .filter(|(_, c)| c.side == Side::Client && c.reason.contains("invalid message"))
        .collect();
    assert_eq!(invalid.len(), 3, "{closes:?}");
    assert!(closes
        .iter()
        .any(|(_, c)| c.reason.contains("bytes into a message")));
}

/// The healthy connection answers its second ping instead of closing.
fn closed_by_peer_quickly(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut head = [0u8; 16];
    s.read_exact(&mut head).is_err()
}

#[test]
fn a_bad_checksum_is_forwarded_recorded_and_reported_by_the_decoder() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("crc.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let mut msg = ping_message(5, MsgFlags::CHECKSUM_PRESENT);
    let last = msg.len() - 1;
    msg[last] ^= 0xff;
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.write_all(&msg).unwrap();
    // The server decides what to do with it (error reply or close); either way the proxy carries on.
    let _ = closed_by_peer_quickly(&mut s);
    drop(s);
    assert!(raw_ping(proxy.addr()).is_ok());
    proxy.stop();
    let bad: Vec<_> = CaptureReader::open(&out)
        .unwrap()
        .map(Result::unwrap)
        .filter(|r| r.kind == RecordKind::Request)
        .filter_map(|r| Message::parse(&r.payload).err())
        .collect();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(matches!(bad[0], WireError::ChecksumMismatch { .. }));
    // `cat` prints the error for that message instead of failing.
    let cat = std::process::Command::new(mongotape_bin())
        .arg("cat")
        .arg(&out)
        .output()
        .unwrap();
    assert!(cat.status.success());
    assert!(String::from_utf8_lossy(&cat.stdout).contains("checksum mismatch"));
}

#[test]
fn upstream_down_at_start_then_back() {
    // A free port with nothing listening on it.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let upstream = format!("127.0.0.1:{port}");
    let dir = tempdir();
    let out = dir.path().join("down.mtape");
    let proxy = Proxy::start_with(&upstream, &out, &["--quiet"]);
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    assert!(closed_by_peer(&mut s));
    let log = wait_for_log(&proxy, "cannot connect to upstream");
    assert!(
        log.contains(&format!("cannot connect to upstream {upstream}")),
        "{log}"
    );

    let server = Server::start_with(&["--port", &port.to_string()]);
    assert_eq!(server.port(), port);
    assert!(
        raw_ping(proxy.addr()).is_ok(),
        "works once the upstream is up"
    );
    proxy.stop();
    let closes = close_events(&out);
    assert_eq!(closes[0].1.side, Side::Upstream);
}

#[test]
fn upstream_killed_mid_session() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("killed.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.write_all(&ping_message(1, MsgFlags::empty())).unwrap();
    let mut head = [0u8; 16];
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.read_exact(&mut head).unwrap();
    drop(server);
    assert!(
        closed_by_peer(&mut s),
        "client connection closed with its upstream"
    );
    // The proxy lives on: the next client is turned away with a reason, not a crash.
    let mut next = TcpStream::connect(proxy.addr()).unwrap();
    assert!(closed_by_peer(&mut next));
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let closes = close_events(&out);
    assert!(
        closes.iter().all(|(_, c)| c.side == Side::Upstream),
        "{closes:?}"
    );
    let records: Vec<_> = CaptureReader::open(&out)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(records.iter().any(|r| r.kind == RecordKind::Reply));
    assert_eq!(records.last().unwrap().kind, RecordKind::End);
}

#[test]
fn proxy_killed_with_sigkill_leaves_a_readable_capture() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("sigkill.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let uri = proxy.uri();
    // The kill comes once 200 inserts are acknowledged (the client says so in a file), not after
    // a fixed time: on a loaded machine the interpreter alone can take seconds to start.
    let started = dir.path().join("started");
    let flag = started.to_str().unwrap().to_owned();
    let writer = std::thread::spawn(move || {
        try_python(
            "import sys, time\nfrom pymongo import MongoClient\n\
             c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=3000)\n\
             i = 0\n\
             try:\n    while True:\n        c.bench.k.insert_one({'_id': i, 'pad': 'x' * 200}); i += 1\n        \
             if i == 200: open(sys.argv[2], 'w').close()\n\
             except Exception:\n    print(i)\n",
            &[uri, flag],
        )
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "pymongo acknowledged no 200 inserts in 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Inserts for 2.5 s more: the recorder flushes once a second (a starved one is brought back
    // within half a second), so well over a fifth of them must be readable after the kill.
    std::thread::sleep(Duration::from_millis(2500));
    let exit = proxy.kill9();
    assert!(killed_by(&exit.status, libc::SIGKILL));
    let inserted: u64 = writer.join().unwrap().stdout.trim().parse().unwrap();
    assert!(inserted > 100, "only {inserted} inserts before the kill");

    let mut reader = CaptureReader::open(&out).unwrap();
    let mut inserts = 0;
    let mut error = None;
    for r in &mut reader {
        match r {
            Ok(r) if r.kind == RecordKind::Request => {
                if Message::parse(&r.payload)
                    .map(|m| mongotape::wire::RequestInfo::of(&m).command == "insert")
                    .unwrap_or(false)
                {
                    inserts += 1;
                }
            }
            Ok(_) => {}
            Err(e) => error = Some(e),
        }
    }
    assert!(!reader.saw_end(), "a killed proxy writes no end record");
    if let Some(e) = &error {
        assert!(matches!(e, CaptureError::Truncated { .. }), "{e}");
    }
    // Flushed at least once a second: all but the last second or two of the run is there.
    assert!(
        inserts * 5 >= inserted,
        "only {inserts} of {inserted} inserts readable"
    );
    let inspect = std::process::Command::new(mongotape_bin())
        .arg("inspect")
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        text.contains("did not shut down cleanly") || text.contains("truncated"),
        "{text}"
    );
}
