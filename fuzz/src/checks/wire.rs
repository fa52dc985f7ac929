//! Targets over `wire/`: framing, every opcode, OP_COMPRESSED, the OP_MSG view, BSON inspection.

use super::{framed, mode, op_msg_of, op_query_of, op_reply_of, OP_MSG};
use mongotape::figures::errors::{ErrorSeen, ErrorTally};
use mongotape::wire::bson_raw::{self, DocWriter};
use mongotape::wire::compressed;
use mongotape::wire::info::{self, client_metadata};
use mongotape::wire::{
    step_marker, Body, FrameSplitter, Message, MsgHeader, OpMsg, OpMsgView, OpMsgWriter, ReplyInfo,
    RequestInfo, Section, SectionView, WireError, HEADER_LEN, MAX_MESSAGE_LEN,
};

/// Splits the stream whole, then again in chunks whose sizes the first byte seeds: both give the
/// same frames and the same error, and `validate` foresees the error.
pub fn frame_splitter(data: &[u8]) {
    let (seed, stream) = mode(data);
    let mut whole = FrameSplitter::new();
    whole.extend_from_slice(stream);
    let validated = whole.validate();
    let (expected, error) = drain(&mut whole);
    assert_eq!(validated.err(), error, "validate disagrees with next_frame");
    for frame in &expected {
        let declared = MsgHeader::peek_length(frame).unwrap().unwrap();
        assert_eq!(declared, frame.len());
        assert!((HEADER_LEN..=MAX_MESSAGE_LEN).contains(&frame.len()));
    }
    if error.is_none() {
        let used: usize = expected.iter().map(Vec::len).sum();
        assert_eq!(whole.pending(), stream.len() - used);
    }

    let mut split = FrameSplitter::new();
    let mut frames = Vec::new();
    let mut chunk_error = None;
    let mut state = u32::from(seed) | 1;
    let mut rest = stream;
    let mut n = 0usize;
    while !rest.is_empty() && chunk_error.is_none() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let max = 1 + usize::from(seed % 64);
        let size = (1 + (state >> 16) as usize % max).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        // The proxy reads into `read_buf`; the recorder's tests use `extend_from_slice`.
        if n & 1 == 0 {
            split.read_buf().extend_from_slice(chunk);
        } else {
            split.extend_from_slice(chunk);
        }
        n += 1;
        let (got, e) = drain(&mut split);
        frames.extend(got);
        chunk_error = e;
    }
    assert_eq!(
        frames, expected,
        "chunked split differs from the whole split"
    );
    assert_eq!(chunk_error, error, "chunked split fails differently");
}

fn drain(s: &mut FrameSplitter) -> (Vec<Vec<u8>>, Option<WireError>) {
    let mut frames = Vec::new();
    loop {
        match s.next_frame() {
            Ok(Some(f)) => frames.push(f.to_vec()),
            Ok(None) => return (frames, None),
            Err(e) => return (frames, Some(e)),
        }
    }
}

/// Any message, by opcode: what it means is read without a panic, and a decoded message encodes
/// back to the same bytes (compressed ones to the same inner message).
pub fn message_parse(data: &[u8]) {
    let Ok(msg) = Message::parse(data) else {
        return;
    };
    inspect(&msg);
    // A reply's errors as the reports count them: every write error walked, at most 16 codes.
    let mut tally = ErrorTally::default();
    let mut codes = 0;
    ErrorSeen::of_frame(data, |seen| {
        codes += 1;
        tally.add("fuzz", &seen, || None);
    });
    assert!(codes <= 16, "{codes} error entries from one reply");
    let _ = tally.report().line();
    let plain = encode(&msg);
    let again = Message::parse(&plain).expect("a re-encoded message parses");
    assert_eq!(again.body, msg.body, "re-encoding changed the message");
    assert_eq!(again.header.request_id, msg.header.request_id);
    // The legacy ZERO field a sender left non-zero is written back as the spec says, 0.
    let from = HEADER_LEN + reserved_zero_len(data);
    match msg.compressor {
        None => assert_eq!(plain[from..], data[from..], "re-encoding changed bytes"),
        Some(c) => {
            let packed = compressed::compress(&plain, c).expect("compress");
            let (used, inner) = compressed::decompress(&packed).expect("our own OP_COMPRESSED");
            assert_eq!((used, &inner[..]), (c, &plain[..]));
        }
    }
}

/// The length of the reserved int32 ZERO that OP_UPDATE, OP_GET_MORE, OP_DELETE and
/// OP_KILL_CURSORS carry right after the header, when the sender did not leave it 0 (4), else 0.
fn reserved_zero_len(data: &[u8]) -> usize {
    let op = data
        .get(12..16)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let zero = data.get(HEADER_LEN..HEADER_LEN + 4);
    match (op, zero) {
        (Some(2001 | 2005 | 2006 | 2007), Some(z)) if z != [0; 4] => 4,
        _ => 0,
    }
}

/// What the rest of mongotape reads of a decoded message.
fn inspect(msg: &Message) {
    let request = RequestInfo::of(msg);
    let _ = request.namespace();
    let reply = ReplyInfo::of(msg);
    let _ = reply.is_ok();
    let _ = step_marker(msg);
    let _ = client_metadata(msg);
    // `cat`'s JSON of the body: deep documents are an error value, never a deep walk.
    let _ = mongotape::report::cat::body_json(msg);
}

/// The message's encoders, by opcode (request id kept; OP_QUERY and the legacy writes have no
/// response-to to keep).
fn encode(msg: &Message) -> Vec<u8> {
    let (id, to) = (msg.header.request_id, msg.header.response_to);
    let mut out = match &msg.body {
        Body::Msg(m) => m.encode(id, to),
        Body::Query(q) => q.encode(id),
        Body::Reply(r) => r.encode(id, to),
        Body::Insert(i) => i.encode(id),
        Body::Update(u) => u.encode(id),
        Body::Delete(d) => d.encode(id),
        Body::GetMore(g) => g.encode(id),
        Body::KillCursors(k) => k.encode(id),
        Body::Command(c) => c.encode(id),
        Body::CommandReply(r) => r.encode(id, to),
        Body::Unknown(rest) => framed(msg.header.op_code.as_i32(), rest),
    };
    MsgHeader::write_request_id(&mut out, id);
    out
}

/// OP_COMPRESSED as received (even first byte), or a valid header built around the rest (odd
/// first byte; bits 1-2 pick the compressor): whatever decompresses stays within the declared size
/// and the 48 MB bound, and compresses back to the same message.
pub fn decompress(data: &[u8]) {
    let (m, rest) = mode(data);
    let message = if m & 1 == 0 {
        data.to_vec()
    } else {
        let (declared, payload) = rest.split_at(rest.len().min(4));
        let mut size = [0u8; 4];
        size[..declared.len()].copy_from_slice(declared);
        let mut body = OP_MSG.to_le_bytes().to_vec();
        body.extend_from_slice(&size);
        body.push((m >> 1) & 3);
        body.extend_from_slice(payload);
        framed(2012, &body)
    };
    let _ = Message::parse(&message);
    let Ok((c, inner)) = compressed::decompress(&message) else {
        return;
    };
    assert!(inner.len() <= MAX_MESSAGE_LEN);
    let header = MsgHeader::parse_whole(&inner, "inner").expect("inner header");
    assert_eq!(header.message_length, inner.len(), "inner length field");
    let declared = i32::from_le_bytes(message[20..24].try_into().unwrap());
    assert_eq!(inner.len(), HEADER_LEN + declared as usize, "declared size");
    let packed = compressed::compress(&inner, c).expect("compress");
    let (again_c, again) = compressed::decompress(&packed).expect("our own OP_COMPRESSED");
    assert_eq!((again_c, again), (c, inner));
}

/// The in-place OP_MSG view against the owned decoder: whatever `OpMsg` decodes, the view reads the
/// same sections, and the writer copies them back to the same bytes.
pub fn op_msg_view(data: &[u8]) {
    let (m, rest) = mode(data);
    let frame = if m & 1 == 0 {
        data.to_vec()
    } else {
        framed(OP_MSG, rest)
    };
    let owned = match Message::parse(&frame) {
        Ok(Message {
            body: Body::Msg(msg),
            compressor: None,
            ..
        }) => Some(msg),
        _ => None,
    };
    let view = match OpMsgView::new(&frame) {
        Ok(view) => view,
        Err(e) => {
            assert!(owned.is_none(), "OpMsg decodes what the view refuses: {e}");
            return;
        }
    };
    let _ = (view.header(), view.more_to_come(), view.body());
    let mut sections = Vec::new();
    let mut failed = false;
    for section in view.sections() {
        match section {
            Ok(s) => {
                if let SectionView::Sequence { documents, .. } = s {
                    for doc in documents {
                        if doc.is_err() {
                            failed = true;
                            break;
                        }
                    }
                }
                sections.push(s);
            }
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    let Some(owned) = owned else { return };
    assert!(!failed, "the view fails on a message OpMsg decodes");
    same_sections(&owned, &sections);
    assert_eq!(
        view.body().expect("body"),
        owned.body().as_bytes(),
        "body bytes differ"
    );
    let mut w = OpMsgWriter::new(frame.len(), view.flags());
    for s in &sections {
        match s {
            SectionView::Body { document, .. } => w.body().extend_from_slice(document),
            other => w.raw_section(other.raw()),
        }
    }
    let copy = w.finish();
    let end = frame.len() - if owned.checksum.is_some() { 4 } else { 0 };
    assert_eq!(
        copy.len(),
        frame.len(),
        "the writer's copy has another length"
    );
    assert_eq!(
        copy[HEADER_LEN..end],
        frame[HEADER_LEN..end],
        "the writer's copy differs"
    );
}

fn same_sections(owned: &OpMsg, view: &[SectionView<'_>]) {
    assert_eq!(owned.sections.len(), view.len(), "section count");
    for (o, v) in owned.sections.iter().zip(view) {
        match (o, v) {
            (Section::Body(doc), SectionView::Body { document, .. }) => {
                assert_eq!(doc.as_bytes(), *document)
            }
            (
                Section::Sequence {
                    identifier,
                    documents,
                },
                SectionView::Sequence {
                    identifier: id,
                    documents: docs,
                    ..
                },
            ) => {
                assert_eq!(identifier, id);
                let docs: Vec<&[u8]> = docs.map(|d| d.expect("document")).collect();
                let owned: Vec<&[u8]> = documents.iter().map(|d| d.as_bytes()).collect();
                assert_eq!(owned, docs);
            }
            _ => panic!("section kinds differ"),
        }
    }
}

/// BSON as the replayer walks it (`bson_raw`) and as the bson crate reads it, then as the body of
/// a request or reply (the first byte picks OP_MSG, OP_QUERY on a command or a collection, or
/// OP_REPLY) for what `info` makes of it.
pub fn bson_inspect(data: &[u8]) {
    let (m, doc) = mode(data);
    walk(doc, 0);
    compare_with_bson_crate(doc);
    let message = match m % 4 {
        0 => op_msg_of(u32::from(m >> 2) & 2, doc),
        1 => op_query_of("db.$cmd", doc),
        2 => op_query_of("db.coll", doc),
        _ => op_reply_of(doc),
    };
    if let Ok(msg) = Message::parse(&message) {
        inspect(&msg);
    }
}

fn walk(doc: &[u8], depth: usize) {
    let Ok(elements) = bson_raw::iter(doc) else {
        return;
    };
    for e in elements {
        let Ok(e) = e else { return };
        let _ = (e.as_str(), e.as_i64(), e.as_bool());
        assert!(e.raw.ends_with(e.value));
        if let Some(inner) = e.as_doc() {
            if depth < 32 {
                walk(inner, depth + 1);
            }
        }
    }
}

/// What the bson crate reads fully, `bson_raw` reads too, with the same keys, and its writer copies
/// the elements back to the same document.
fn compare_with_bson_crate(doc: &[u8]) {
    let Ok(parsed) = bson::RawDocument::from_bytes(doc) else {
        return;
    };
    let Ok(keys) = parsed
        .iter()
        .map(|e| e.map(|(k, v)| (k.as_str().to_owned(), v)))
        .collect::<Result<Vec<_>, _>>()
    else {
        return;
    };
    let elements = bson_raw::elements(doc).expect("bson_raw refuses what the bson crate reads");
    let raw_keys: Vec<&str> = elements.iter().map(|e| e.key).collect();
    let crate_keys: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(raw_keys, crate_keys);
    for (e, (_, v)) in elements.iter().zip(&keys) {
        if let Some(n) = info::as_i64(*v) {
            if matches!(e.kind, bson_raw::INT32 | bson_raw::INT64) {
                assert_eq!(e.as_i64(), Some(n));
            }
        }
    }
    let mut out = Vec::new();
    let mut w = DocWriter::new(&mut out);
    for e in &elements {
        w.raw(e.raw);
    }
    w.finish();
    assert_eq!(out, doc, "DocWriter's copy differs");
}
