//! Raw wire traffic for the fault tests: a ping encoded by hand and sent on a bare socket, with no
//! driver in between.

use bson::rawdoc;
use mongotape::wire::{FrameSplitter, Message, MsgFlags, OpMsg, ReplyInfo, Section};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// `{ping: 1}` on `admin` as one OP_MSG.
pub fn ping_message(request_id: i32, flags: MsgFlags) -> Vec<u8> {
    command_message(request_id, flags, rawdoc! { "ping": 1, "$db": "admin" })
}

/// Any command body as one OP_MSG.
pub fn command_message(request_id: i32, flags: MsgFlags, body: bson::RawDocumentBuf) -> Vec<u8> {
    OpMsg {
        flags,
        sections: vec![Section::Body(body)],
        checksum: None,
    }
    .encode(request_id, 0)
}

/// The next whole frame from `s` (`splitter` keeps what came after it); `None` at EOF.
pub fn read_frame(s: &mut TcpStream, splitter: &mut FrameSplitter) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if let Some(frame) = splitter.next_frame().unwrap() {
            return Some(frame.to_vec());
        }
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        splitter.extend_from_slice(&buf[..n]);
    }
}

/// A ping on a new raw connection to `addr`, answered within 10 s (panics otherwise).
pub fn raw_ping(addr: &str) -> ReplyInfo {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&ping_message(1, MsgFlags::empty())).unwrap();
    let frame = read_frame(&mut s, &mut FrameSplitter::new())
        .expect("connection closed before the ping reply");
    ReplyInfo::of(&Message::parse(&frame).unwrap())
}
