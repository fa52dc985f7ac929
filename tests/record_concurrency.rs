//! Hundreds of concurrent client connections through one proxy: every request is answered and
//! recorded on the right connection.

mod common;

use bson::rawdoc;
use common::*;
use mongotape::report::inspect::inspect_file;
use mongotape::wire::{FrameSplitter, Message, MsgFlags, OpMsg, ReplyInfo, Section};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::Duration;

const CONNECTIONS: usize = 300;
const PINGS: usize = 10;

#[test]
fn three_hundred_connections_at_once() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("many.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let barrier = Arc::new(Barrier::new(CONNECTIONS));
    let threads: Vec<_> = (0..CONNECTIONS)
        .map(|i| {
            let addr = proxy.addr().to_string();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                // Every connection is open before any sends.
                barrier.wait();
                let mut splitter = FrameSplitter::new();
                let mut buf = [0u8; 4096];
                for n in 0..PINGS {
                    let request_id = (i * PINGS + n) as i32;
                    let msg = OpMsg {
                        flags: MsgFlags::empty(),
                        sections: vec![Section::Body(
                            rawdoc! { "ping": 1, "comment": i as i32, "$db": "admin" },
                        )],
                        checksum: None,
                    }
                    .encode(request_id, 0);
                    s.write_all(&msg).unwrap();
                    let reply = loop {
                        if let Some(f) = splitter.next_frame().unwrap() {
                            break Message::parse(&f).unwrap();
                        }
                        let got = s.read(&mut buf).unwrap();
                        assert!(got > 0, "connection {i} closed");
                        splitter.extend_from_slice(&buf[..got]);
                    };
                    assert_eq!(reply.header.response_to, request_id);
                    let info = ReplyInfo::of(&reply);
                    assert!(info.is_ok(), "{:?}", info);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a client thread failed");
    }
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let report = inspect_file(&out).unwrap();
    assert!(report.complete);
    assert_eq!(report.connections.len(), CONNECTIONS);
    assert_eq!(report.dropped_messages, 0);
    assert_eq!(report.unanswered_requests, 0);
    let ping = &report.by_command["ping"];
    assert_eq!(ping.requests, (CONNECTIONS * PINGS) as u64);
    assert_eq!(ping.replies, (CONNECTIONS * PINGS) as u64);
    assert!(report
        .connections
        .iter()
        .all(|c| c.requests == PINGS as u64 && c.replies == PINGS as u64));
}
