//! Raw wire traffic for the fault tests: a ping encoded by hand and sent on a bare socket, with no
//! driver in between.

use bson::rawdoc;
use mongotape::wire::{FrameSplitter, Message, MsgFlags, OpMsg, ReplyInfo, Section};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// `{ping: 1}` on `admin` as one OP_MSG.
pub fn ping_message(request_id: i32, flags: MsgFlags) -> Vec<u8> {
    OpMsg {
        flags,
        sections: vec![Section::Body(rawdoc! { "ping": 1, "$db": "admin" })],
        checksum: None,
    }
    .encode(request_id, 0)
}

/// A ping on a new raw connection to `addr`, answered within 10 s (panics otherwise).
pub fn raw_ping(addr: &str) -> ReplyInfo {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&ping_message(1, MsgFlags::empty())).unwrap();
    let mut splitter = FrameSplitter::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(frame) = splitter.next_frame().unwrap() {
            return ReplyInfo::of(&Message::parse(&frame).unwrap());
        }
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed before the ping reply");
        splitter.extend_from_slice(&buf[..n]);
    }
}
