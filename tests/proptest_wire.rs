//! Property tests of `wire/`: every message kind encodes and decodes back to itself (OP_MSG with
//! body, sequences and checksum; OP_QUERY, OP_REPLY, OP_GET_MORE, OP_KILL_CURSORS, OP_INSERT,
//! OP_UPDATE, OP_DELETE; OP_COMPRESSED with each compressor), the in-place view reads what the owned
//! decoder reads, and a stream of messages splits into the same frames however it arrives.

mod props;

use mongotape::wire::compressed::{self, Compressor};
use mongotape::wire::legacy::{
    OpDelete, OpGetMore, OpInsert, OpKillCursors, OpQuery, OpReply, OpUpdate,
};
use mongotape::wire::{
    Body, FrameSplitter, Message, MsgFlags, OpMsg, OpMsgView, Section, SectionView,
};
use props::{doc, namespace};
use proptest::collection::vec;
use proptest::prelude::*;

fn op_msg() -> impl Strategy<Value = OpMsg> {
    let sequence =
        ("[a-z]{1,10}", vec(doc(), 0..4)).prop_map(|(identifier, documents)| Section::Sequence {
            identifier,
            documents,
        });
    (
        any::<[bool; 4]>(),
        doc(),
        vec(sequence, 0..3),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(bits, body, mut sections, at)| {
            let mut flags = MsgFlags::empty();
            for (on, flag) in bits.iter().zip([
                MsgFlags::CHECKSUM_PRESENT,
                MsgFlags::MORE_TO_COME,
                MsgFlags::EXHAUST_ALLOWED,
                // An optional bit mongotape does not know: kept as sent.
                MsgFlags::from_bits_retain(1 << 20),
            ]) {
                if *on {
                    flags |= flag;
                }
            }
            let at = at.index(sections.len() + 1);
            sections.insert(at, Section::Body(body));
            OpMsg {
                flags,
                sections,
                checksum: None,
            }
        })
}

/// Any message kind, encoded with request id `id` and response-to `to` (where it has one).
fn message() -> impl Strategy<Value = (Body, Vec<u8>)> {
    let (id, to) = (41, 17);
    prop_oneof![
        op_msg().prop_map(move |m| {
            let bytes = m.encode(id, to);
            (Body::Msg(m), bytes)
        }),
        (
            any::<i32>(),
            namespace(),
            any::<i32>(),
            any::<i32>(),
            doc(),
            prop::option::of(doc())
        )
            .prop_map(move |(flags, ns, skip, ret, query, fields)| {
                let q = OpQuery {
                    flags,
                    full_collection_name: ns,
                    number_to_skip: skip,
                    number_to_return: ret,
                    query,
                    return_fields_selector: fields,
                };
                let bytes = q.encode(id);
                (Body::Query(q), bytes)
            }),
        (any::<i32>(), any::<i64>(), any::<i32>(), vec(doc(), 0..4)).prop_map(
            move |(flags, cursor_id, from, documents)| {
                let r = OpReply {
                    response_flags: flags,
                    cursor_id,
                    starting_from: from,
                    number_returned: documents.len() as i32,
                    documents,
                };
                let bytes = r.encode(id, to);
                (Body::Reply(r), bytes)
            }
        ),
        (namespace(), any::<i32>(), any::<i64>()).prop_map(move |(ns, n, cursor_id)| {
            let g = OpGetMore {
                full_collection_name: ns,
                number_to_return: n,
                cursor_id,
            };
            let bytes = g.encode(id);
            (Body::GetMore(g), bytes)
        }),
        vec(any::<i64>(), 0..8).prop_map(move |cursor_ids| {
            let k = OpKillCursors { cursor_ids };
            let bytes = k.encode(id);
            (Body::KillCursors(k), bytes)
        }),
        (any::<i32>(), namespace(), vec(doc(), 0..4)).prop_map(move |(flags, ns, documents)| {
            let i = OpInsert {
                flags,
                full_collection_name: ns,
                documents,
            };
            let bytes = i.encode(id);
            (Body::Insert(i), bytes)
        }),
        (namespace(), any::<i32>(), doc(), doc()).prop_map(move |(ns, flags, selector, update)| {
            let u = OpUpdate {
                full_collection_name: ns,
                flags,
                selector,
                update,
            };
            let bytes = u.encode(id);
            (Body::Update(u), bytes)
        }),
        (namespace(), any::<i32>(), doc()).prop_map(move |(ns, flags, selector)| {
            let d = OpDelete {
                full_collection_name: ns,
                flags,
                selector,
            };
            let bytes = d.encode(id);
            (Body::Delete(d), bytes)
        }),
    ]
}

/// The parsed form of what was encoded: OP_MSG's checksum is filled in by the decoder.
fn expected(body: &Body, bytes: &[u8]) -> Body {
    match body {
        Body::Msg(m) if m.flags.contains(MsgFlags::CHECKSUM_PRESENT) => {
            let crc = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().unwrap());
            Body::Msg(OpMsg {
                checksum: Some(crc),
                ..m.clone()
            })
        }
        other => other.clone(),
    }
}

const COMPRESSORS: [Compressor; 4] = [
    Compressor::Noop,
    Compressor::Snappy,
    Compressor::Zlib,
    Compressor::Zstd,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_message_kind_round_trips((body, bytes) in message()) {
        let parsed = Message::parse(&bytes).expect("what we encode parses");
        prop_assert_eq!(&parsed.body, &expected(&body, &bytes));
        prop_assert_eq!(parsed.header.message_length, bytes.len());
        prop_assert_eq!(parsed.header.request_id, 41);
        prop_assert_eq!(parsed.compressor, None);
    }

    #[test]
    fn every_compressor_round_trips((body, bytes) in message(), which in 0usize..4) {
        let c = COMPRESSORS[which];
        let packed = compressed::compress(&bytes, c).expect("compress");
        let (used, inner) = compressed::decompress(&packed).expect("decompress");
        prop_assert_eq!(used, c);
        prop_assert_eq!(&inner, &bytes);
        let parsed = Message::parse(&packed).expect("an OP_COMPRESSED message parses");
        prop_assert_eq!(parsed.compressor, Some(c));
        prop_assert_eq!(&parsed.body, &expected(&body, &bytes));
    }

    #[test]
    fn the_view_reads_what_the_decoder_reads(m in op_msg()) {
        let bytes = m.encode(5, 6);
        let view = OpMsgView::new(&bytes).expect("view");
        prop_assert_eq!(view.flags(), m.flags);
        let sections: Vec<SectionView<'_>> =
            view.sections().collect::<Result<_, _>>().expect("sections");
        prop_assert_eq!(sections.len(), m.sections.len());
        for (v, o) in sections.iter().zip(&m.sections) {
            match (v, o) {
                (SectionView::Body { document, .. }, Section::Body(doc)) => {
                    prop_assert_eq!(*document, doc.as_bytes())
                }
                (
                    SectionView::Sequence { identifier, documents, .. },
                    Section::Sequence { identifier: id, documents: docs },
                ) => {
                    prop_assert_eq!(*identifier, id.as_str());
                    let got: Vec<&[u8]> = documents.map(|d| d.expect("document")).collect();
                    let want: Vec<&[u8]> = docs.iter().map(|d| d.as_bytes()).collect();
                    prop_assert_eq!(got, want);
                }
                _ => prop_assert!(false, "section kinds differ"),
            }
        }
        prop_assert_eq!(view.body().expect("body"), m.body().as_bytes());
    }

    #[test]
    fn a_stream_splits_into_the_same_frames_however_it_arrives(
        messages in vec(message(), 1..6),
        cuts in vec(1usize..200, 0..40),
    ) {
        let frames: Vec<Vec<u8>> = messages.into_iter().map(|(_, b)| b).collect();
        let stream = frames.concat();
        let mut split = FrameSplitter::new();
        let mut got = Vec::new();
        let mut rest = &stream[..];
        let mut cuts = cuts.into_iter();
        while !rest.is_empty() {
            let n = cuts.next().unwrap_or(rest.len()).min(rest.len());
            let (chunk, tail) = rest.split_at(n);
            split.read_buf().extend_from_slice(chunk);
            split.validate().expect("valid lengths");
            while let Some(frame) = split.next_frame().expect("frame") {
                got.push(frame.to_vec());
            }
            rest = tail;
        }
        prop_assert_eq!(got, frames);
        prop_assert_eq!(split.pending(), 0);
    }
}
