//! The proxy's fault matrix, beyond tests/record_bad_input.rs (bad frames, upstream down or killed,
//! SIGKILL): clients that hold memory, upstreams that never answer, silent clients, descriptor
//! exhaustion, and SIGTERM under load. Each case asserts what the client sees, what the proxy says
//! and that it keeps serving, and what the capture holds. The figures go to docs/reliability.md.

mod common;

use common::*;
use mongotape::capture::{Record, RecordKind, Side};
use mongotape::wire::{MsgFlags, MsgHeader};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A ping that may fail: true when it is answered.
fn try_ping(addr: &str) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = [0u8; 16];
    s.write_all(&ping_message(2, MsgFlags::empty())).is_ok() && s.read_exact(&mut head).is_ok()
}

/// How long until the peer closes `s` (EOF or reset), if it does within `limit`.
fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0u8; 4096];
    while started.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return Some(started.elapsed()),
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

fn wait_for_log(proxy: &Proxy, needle: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let log = proxy.stderr();
        if log.contains(needle) || Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A TCP listener that accepts and never reads or answers.
fn black_hole() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    addr
}

/// Whether process `pid` is alive (not exited, not a zombie waiting to be reaped).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

fn direct(addr: &str) -> String {
    format!("mongodb://{addr}/?directConnection=true")
}

#[test]
fn the_buffer_budget_bounds_memory_and_normal_clients_still_work() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("budget.mtape");
    let proxy = Proxy::start_with(
        server.addr(),
        &out,
        &["--quiet", "--max-buffer-mb", "64", "--buffer-wait", "2s"],
    );
    // 20 clients each declare a 45 MB message and send 40 MB of it, then wait.
    let declared: i32 = 45_000_000;
    let mut partial = vec![0u8; 40_000_000];
    partial[..4].copy_from_slice(&declared.to_le_bytes());
    partial[12..16].copy_from_slice(&2013i32.to_le_bytes());
    let partial = Arc::new(partial);
    let senders: Vec<_> = (0..20)
        .map(|_| {
            let partial = partial.clone();
            let addr = proxy.addr().to_owned();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
                let sent_all = s.write_all(&partial).is_ok();
                // Hold the connection until the proxy closes it (or the test gives up).
                let closed = closed_within(&mut s, Duration::from_secs(15)).is_some();
                (sent_all, closed)
            })
        })
        .collect();
    let started = Instant::now();
    let mut peak = 0.0f64;
    let mut pings = 0;
    while started.elapsed() < Duration::from_secs(6) {
        assert!(
            raw_ping(proxy.addr()).is_ok(),
            "a normal client is not served"
        );
        pings += 1;
        peak = peak.max(rss_mb(proxy.pid()).1);
        std::thread::sleep(Duration::from_millis(250));
    }
    let outcomes: Vec<(bool, bool)> = senders.into_iter().map(|t| t.join().unwrap()).collect();
    let (_, hwm) = rss_mb(proxy.pid());
    peak = peak.max(hwm);
    let log = proxy.stderr();
    eprintln!("FIGURE budget: peak RSS {peak:.0} MB with 20 x 40 MB partial messages, --max-buffer-mb 64; {pings} pings served meanwhile");
    // 64 MB of budget, the 64 KB read reserve of each connection and the runtime: well under
    // the 800 MB the clients pushed.
    assert!(peak < 200.0, "peak RSS {peak:.0} MB\n{log}");
    assert!(
        outcomes.iter().filter(|(sent_all, _)| !sent_all).count() > 0,
        "back-pressure: some clients could not send everything"
    );
    // The hogs are closed until what is left fits in the budget (one 40 MB message does).
    let left = outcomes.iter().filter(|(_, closed)| !closed).count();
    assert!(left <= 1, "{left} hogs left open: {outcomes:?}");
    assert!(
        log.contains("buffer budget of 64.0 MiB (--max-buffer-mb) was spent"),
        "{log}"
    );
    assert!(
        log.contains("peer") && log.contains("127.0.0.1:"),
        "the log names the client: {log}"
    );
    proxy.stop();
    let cut = capture_closes(&out)
        .into_iter()
        .filter(|c| c.side == Side::Client && c.reason.contains("--max-buffer-mb"))
        .count();
    assert!(
        cut > 0,
        "the capture names the connections closed for the budget"
    );
}

#[test]
fn a_black_holed_upstream_is_cut_by_the_reply_timeout() {
    let hole = black_hole();
    let dir = tempdir();
    let out = dir.path().join("hole.mtape");
    let proxy = Proxy::start_with(&direct(&hole), &out, &["--quiet", "--reply-timeout", "1s"]);
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.write_all(&ping_message(3, MsgFlags::empty())).unwrap();
    let after = closed_within(&mut s, Duration::from_secs(10)).expect("client still waiting");
    eprintln!("FIGURE black hole: client closed after {after:?} with --reply-timeout 1s");
    assert!(after >= Duration::from_millis(900) && after < Duration::from_secs(4));
    let log = wait_for_log(&proxy, "sent no reply", Duration::from_secs(2));
    assert!(
        log.contains("Upstream") && log.contains("sent no reply within 1s"),
        "{log}"
    );
    proxy.stop();
    let c = capture_closes(&out);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].side, Side::Upstream);
    assert!(c[0].reason.contains("--reply-timeout"), "{c:?}");
}

#[test]
fn without_a_reply_timeout_a_black_hole_holds_the_request_and_drain_cuts_it() {
    let hole = black_hole();
    let dir = tempdir();
    let out = dir.path().join("drain.mtape");
    let proxy = Proxy::start_with(&direct(&hole), &out, &["--quiet", "--drain-timeout", "1s"]);
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.write_all(&ping_message(4, MsgFlags::empty())).unwrap();
    assert_eq!(closed_within(&mut s, Duration::from_secs(2)), None);
    let started = Instant::now();
    let exit = proxy.stop();
    let took = started.elapsed();
    eprintln!("FIGURE drain timeout 1s: proxy exited {took:?} after SIGTERM");
    assert!(exit.status.success() && !exit.killed, "{}", exit.stderr);
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert!(
        exit.stderr.contains("1 of 1 connections were cut"),
        "{}",
        exit.stderr
    );
    let c = capture_closes(&out);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(
        (c[0].side, c[0].reason.as_str()),
        (Side::Proxy, "drain timeout")
    );
}

#[test]
fn a_second_signal_stops_at_once() {
    let hole = black_hole();
    let dir = tempdir();
    let out = dir.path().join("twice.mtape");
    let proxy = Proxy::start_with(&direct(&hole), &out, &["--quiet", "--drain-timeout", "60s"]);
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.write_all(&ping_message(5, MsgFlags::empty())).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: a signal to the proxy this test started.
    unsafe { libc::kill(proxy.pid() as libc::pid_t, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let exit = proxy.stop();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(exit.status.success() && !exit.killed, "{}", exit.stderr);
    assert!(exit.stderr.contains("stopping at once"), "{}", exit.stderr);
    let c = capture_closes(&out);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].side, Side::Proxy);
    assert!(c[0].reason.contains("second signal"), "{c:?}");
}

#[test]
fn an_unreachable_upstream_is_warned_about_at_start() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempdir();
    let out = dir.path().join("unreachable.mtape");
    let proxy = Proxy::start_with(&direct(&format!("127.0.0.1:{port}")), &out, &["--quiet"]);
    // Said before any client came.
    let log = proxy.stderr();
    assert!(log.contains("cannot be reached at start"), "{log}");
    assert!(log.contains("Connection refused"), "{log}");
}

#[test]
fn an_idle_client_is_closed_and_the_others_are_served() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("idle.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet", "--idle-timeout", "1s"]);
    let mut idle = TcpStream::connect(proxy.addr()).unwrap();
    idle.write_all(&ping_message(6, MsgFlags::empty())).unwrap();
    let mut head = [0u8; 16];
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    idle.read_exact(&mut head).unwrap();
    let after = closed_within(&mut idle, Duration::from_secs(5)).expect("idle client kept");
    assert!(after < Duration::from_secs(3), "{after:?}");
    assert!(raw_ping(proxy.addr()).is_ok());
    let log = wait_for_log(&proxy, "idle for 1s", Duration::from_secs(2));
    assert!(
        log.contains("Client") && log.contains("--idle-timeout"),
        "{log}"
    );
    proxy.stop();
    assert!(capture_closes(&out)
        .iter()
        .any(|c| c.side == Side::Client && c.reason.contains("idle for 1s")));
}

#[test]
fn descriptor_exhaustion_is_said_as_such_and_accepting_resumes() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("emfile.mtape");
    let mut command = Command::new("prlimit");
    command
        .arg("--nofile=48:48")
        .arg(mongotape_bin())
        .args(["record", "--listen", "127.0.0.1:0", "--quiet", "--upstream"])
        .arg(server.addr())
        .arg("--out")
        .arg(&out);
    let proxy = Proxy::spawn(command, &out);
    // Two descriptors per client (its socket and its upstream's): 40 clients are too many.
    let mut clients: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(proxy.addr()).unwrap())
        .collect();
    let log = wait_for_log(&proxy, "out of file descriptors", Duration::from_secs(5));
    assert!(log.contains("out of file descriptors"), "{log}");
    assert!(
        !log.contains("cannot connect to upstream"),
        "said as an upstream failure: {log}"
    );
    for c in &mut clients {
        c.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
    }
    clients.clear();
    // Accepting resumes after its pause.
    let deadline = Instant::now() + Duration::from_secs(10);
    let served = loop {
        let ok = try_ping(proxy.addr());
        if ok || Instant::now() > deadline {
            break ok;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(served, "{}", proxy.stderr());
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
}

/// Every request that expects a reply, paired with one on its connection; the unpaired count.
fn unanswered(records: &[Record]) -> (usize, usize) {
    let mut asked = HashSet::new();
    let mut answered = HashSet::new();
    for r in records {
        let Ok(Some(h)) = MsgHeader::parse(&r.payload) else {
            continue;
        };
        match r.kind {
            RecordKind::Request
                if mongotape::wire::hello::request_expects_reply(&r.payload)
                    && !mongotape::wire::hello::is_hello_request(&r.payload) =>
            {
                asked.insert((r.conn_id, h.request_id));
            }
            RecordKind::Reply => {
                answered.insert((r.conn_id, h.response_to));
            }
            _ => {}
        }
    }
    (asked.len(), asked.difference(&answered).count())
}

#[test]
fn sigterm_under_load_answers_every_request_already_sent() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("drainload.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let uri = format!(
        "{}&retryWrites=false&serverSelectionTimeoutMS=1000",
        proxy.uri()
    );
    // The load is flowing once 200 inserts are acknowledged; SIGTERM comes then, under load,
    // however slowly Python starts on a busy machine.
    let load = Load::start(
        uri,
        LoadSpec {
            db: "drain",
            threads: 8,
            inserts: None,
            flowing_after: 200,
            pad: 0,
        },
    );
    load.wait_flowing();
    std::thread::sleep(Duration::from_millis(300));
    let exit = proxy.stop();
    assert!(exit.status.success() && !exit.killed, "{}", exit.stderr);
    let LoadResult { acked, errors } = load.finish();
    let errors = errors.len();
    let records = capture_records(&out);
    let (asked, lost) = unanswered(&records);
    eprintln!("FIGURE drain under load: {} acked inserts, {asked} requests recorded, {lost} unanswered, {errors} client errors after SIGTERM", acked.len());
    assert!(acked.len() >= 200, "{}", acked.len());
    assert_eq!(lost, 0, "requests recorded without a reply");
    assert_eq!(records.last().unwrap().kind, RecordKind::End);
    let cut: Vec<_> = capture_closes(&out)
        .into_iter()
        .filter(|c| c.reason == "drain timeout")
        .collect();
    assert!(cut.is_empty(), "{cut:?}");
    // Every acknowledged write reached the server.
    assert!(count_documents(&server.uri(), "drain", "k") >= acked.len());
}

#[test]
fn a_second_signal_cuts_a_large_capture_backlog_and_the_capture_still_ends_whole() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("backlog.mtape");
    // zstd level 19 on random bytes: the recorder writes a few MB/s, far behind forwarding. The
    // message being compressed when the second signal comes is finished (4 MB: about a second).
    let proxy = Proxy::start_with(server.addr(), &out, &["--zstd-level", "19"]);
    python(
        "import os, sys\n\
         from pymongo import MongoClient\n\
         c = MongoClient(sys.argv[1]).backlog.c\n\
         c.insert_one({'_id': 1, 'blob': os.urandom(4 * 1024 * 1024)})\n\
         for _ in range(60):\n\
         \x20   assert len(c.find_one({'_id': 1})['blob']) == 4 * 1024 * 1024\n",
        &[direct(proxy.addr())],
    );
    // SAFETY: a signal to the proxy this test started.
    unsafe { libc::kill(proxy.pid() as libc::pid_t, libc::SIGTERM) };
    let log = wait_for_log(&proxy, "MiB of queued messages", Duration::from_secs(10));
    assert!(log.contains("a second signal stops at once"), "{log}");
    // Still writing: the first signal loses nothing already forwarded.
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        running(proxy.pid()),
        "the backlog was written before the test could cut it: {}",
        proxy.stderr()
    );
    let started = Instant::now();
    let exit = proxy.stop_within(Duration::from_secs(60));
    let took = started.elapsed();
    // Writing the whole 240 MB backlog at level 19 takes minutes; the message being compressed is
    // finished first (about a second, several in a debug build on a loaded machine).
    assert!(took < Duration::from_secs(20), "{took:?}\n{}", exit.stderr);
    assert!(exit.status.success() && !exit.killed, "{}", exit.stderr);

    // The capture ends whole: what was not written is counted in gap records and in `end`.
    let records = capture_records(&out);
    let end = records.last().unwrap();
    assert_eq!(end.kind, RecordKind::End, "the capture has its end record");
    let end: mongotape::capture::EndEvent = end.event().unwrap();
    let gaps: u64 = records
        .iter()
        .filter(|r| r.kind == RecordKind::Gap)
        .map(|r| {
            r.event::<mongotape::capture::GapEvent>()
                .unwrap()
                .dropped_messages
        })
        .sum();
    let written = records
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Request | RecordKind::Reply))
        .count() as u64;
    assert!(gaps > 0, "nothing counted as dropped");
    assert_eq!(end.dropped_messages, gaps);
    assert_eq!(
        written + gaps,
        end.messages,
        "every message written or counted"
    );
    assert!(written > 0, "what was written before the cut is kept");
}
