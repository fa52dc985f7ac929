//! A zero-cost MongoDB server for benchmarks: it answers every OP_MSG at once with `{ok: 1, n: 1}`
//! (a `hello` with a minimal hello reply; an OP_QUERY handshake with that hello reply in an OP_REPLY),
//! stores nothing, and sends nothing back for moreToCome requests. Against it the replayer (or the baseline client) is the only cost: its own ceiling.
//!
//! ```text
//! cargo run --release --example sink [PORT]     # prints `sink listening on 127.0.0.1:PORT`
//! ```

use bson::{rawdoc, RawDocumentBuf};
use mongotape::wire::header::HEADER_LEN;
use mongotape::wire::legacy::OpReply;
use mongotape::wire::op_msg::{MsgFlags, OpMsg, Section};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};

const OP_MSG: i32 = 2013;
const OP_QUERY: i32 = 2004;
const MAX_LEN: usize = 48_000_000;

fn hello_reply() -> RawDocumentBuf {
    rawdoc! {
        "isWritablePrimary": true, "ismaster": true, "helloOk": true,
        "maxBsonObjectSize": 16_777_216, "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000, "minWireVersion": 0, "maxWireVersion": 21,
        "logicalSessionTimeoutMinutes": 30, "connectionId": 1, "ok": 1.0,
    }
}

/// The answer to a request, by opcode: OP_MSG and OP_QUERY are answered, anything else is not.
fn answer(opcode: i32, message: &[u8]) -> Option<Vec<u8>> {
    match opcode {
        OP_MSG => reply_to(message),
        OP_QUERY => query_reply_to(message),
        _ => None,
    }
}

/// Drivers' first handshake: an OP_QUERY `isMaster` on `admin.$cmd`, answered by an OP_REPLY.
fn query_reply_to(message: &[u8]) -> Option<Vec<u8>> {
    let request_id = i32::from_le_bytes(message.get(4..8)?.try_into().ok()?);
    let reply = OpReply {
        response_flags: 0,
        cursor_id: 0,
        starting_from: 0,
        number_returned: 1,
        documents: vec![hello_reply()],
    };
    Some(reply.encode(0, request_id))
}

fn reply_to(message: &[u8]) -> Option<Vec<u8>> {
    let msg = OpMsg::parse(message).ok()?;
    if msg.more_to_come() {
        return None;
    }
    let request_id = i32::from_le_bytes(message.get(4..8)?.try_into().ok()?);
    let command = msg.body().iter().next()?.ok()?.0.to_string();
    let body = match command.as_str() {
        "hello" | "isMaster" | "ismaster" => hello_reply(),
        _ => rawdoc! { "ok": 1.0, "n": 1 },
    };
    let reply = OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(body)],
        checksum: None,
    };
    Some(reply.encode(0, request_id))
}

async fn serve(stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let (r, w) = stream.into_split();
    let (mut r, mut w) = (BufReader::new(r), BufWriter::new(w));
    let mut buf = Vec::new();
    loop {
        let mut header = [0u8; HEADER_LEN];
        if r.read_exact(&mut header).await.is_err() {
            return Ok(());
        }
        let len = i32::from_le_bytes(header[0..4].try_into().expect("4 bytes"));
        let len = usize::try_from(len).unwrap_or(0);
        if !(HEADER_LEN..=MAX_LEN).contains(&len) {
            return Ok(());
        }
        buf.clear();
        buf.extend_from_slice(&header);
        buf.resize(len, 0);
        r.read_exact(&mut buf[HEADER_LEN..]).await?;
        let opcode = i32::from_le_bytes(header[12..16].try_into().expect("4 bytes"));
        if let Some(reply) = answer(opcode, &buf) {
            w.write_all(&reply).await?;
            // Flush only when no further request is already waiting: pipelined requests batch.
            if r.buffer().is_empty() {
                w.flush().await?;
            }
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    println!("sink listening on {}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let _ = serve(stream).await;
        });
    }
}
