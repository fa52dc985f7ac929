//! Shapes of the legacy opcodes, of compressed messages and of the shortcuts that must give the
//! same text as the full path: one logical operation, one shape, whichever way it came.

use super::tests::{msg, of_doc, text};
use super::*;
use crate::wire::compressed::{self, Compressor};
use crate::wire::legacy::{OpDelete, OpInsert, OpQuery, OpUpdate};
use crate::wire::{MsgFlags, OpMsg};
use bson::{doc, rawdoc};
#[test]
fn legacy_opcodes_and_compression_shape_as_op_msg_does() {
    let op_msg_find = of_doc(doc! {"find": "c", "$db": "d", "filter": {"a": 5},
    "sort": {"t": -1}, "projection": {"a": 1}});
    // OP_QUERY on the collection, wrapped in $query with $orderby.
    let q = OpQuery {
        flags: 0,
        full_collection_name: "d.c".into(),
        number_to_skip: 0,
        number_to_return: 0,
        query: rawdoc! {"$query": {"a": 9}, "$orderby": {"t": -1}},
        return_fields_selector: Some(rawdoc! {"a": 1}),
    };
    assert_eq!(text(&Message::parse(&q.encode(1)).unwrap()), op_msg_find);
    // A find command over OP_QUERY to d.$cmd.
    let cmd = OpQuery {
        flags: 0,
        full_collection_name: "d.$cmd".into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: rawdoc! {"$query": {"find": "c", "filter": {"a": 1}, "sort": {"t": -1},
                   "projection": {"a": 1}},
        "$readPreference": {"mode": "primary"}},
        return_fields_selector: None,
    };
    assert_eq!(text(&Message::parse(&cmd.encode(1)).unwrap()), op_msg_find);
    // The same OP_MSG, compressed.
    let plain = OpMsg::with_body(
        rawdoc! {"find": "c", "$db": "d", "filter": {"a": 2}, "sort": {"t": -1},
        "projection": {"a": 1}},
        MsgFlags::empty(),
    )
    .encode(5, 0);
    for c in [Compressor::Zlib, Compressor::Zstd, Compressor::Snappy] {
        let wrapped = compressed::compress(&plain, c).unwrap();
        assert_eq!(text(&Message::parse(&wrapped).unwrap()), op_msg_find);
    }
    // Legacy writes.
    let u = OpUpdate {
        full_collection_name: "d.c".into(),
        flags: 1,
        selector: rawdoc! {"_id": 3},
        update: rawdoc! {"$set": {"a": 1}},
    };
    assert_eq!(
        text(&Message::parse(&u.encode(1)).unwrap()),
        of_doc(doc! {"update": "c", "$db": "d", "updates": [
            {"q": {"_id": 1}, "u": {"$set": {"a": 5}}, "upsert": true, "multi": false}
        ]})
    );
    let del = OpDelete {
        full_collection_name: "d.c".into(),
        flags: 1,
        selector: rawdoc! {"a": "x"},
    };
    assert_eq!(
        text(&Message::parse(&del.encode(1)).unwrap()),
        "delete d.c {a: ?string} limit 1"
    );
    let ins = OpInsert {
        flags: 0,
        full_collection_name: "d.c".into(),
        documents: vec![rawdoc! {"a": 1}],
    };
    assert_eq!(text(&Message::parse(&ins.encode(1)).unwrap()), "insert d.c");
}

/// The insert written from the request's info is the shape read from the command, whatever the
/// namespace's parts; other commands and opcodes go the whole way.
#[test]
fn request_with_info_gives_the_same_shape() {
    let bodies = [
        rawdoc! {"insert": "orders", "ordered": true, "lsid": {"id": 1}, "$db": "shop"},
        rawdoc! {"insert": "orders"},
        rawdoc! {"insert": 5, "$db": "shop"},
        rawdoc! {"insert": "", "$db": ""},
        rawdoc! {"find": "orders", "filter": {"a": 1}, "$db": "shop"},
        rawdoc! {"explain": {"insert": "o", "documents": [{"a": 1}]}, "$db": "shop"},
        rawdoc! {"getMore": 7i64, "collection": "orders", "$db": "shop"},
    ];
    for body in bodies {
        let m = msg(body.clone());
        let info = RequestInfo::of(&m);
        let slow = Shaper::new().request(&m).map(|s| s.view().to_shape());
        let fast = Shaper::new()
            .request_with(&m, &info)
            .map(|s| s.view().to_shape());
        assert_eq!(fast, slow, "{body:?}");
    }
    let legacy = Message::parse(
        &OpInsert {
            flags: 0,
            full_collection_name: "shop.orders".into(),
            documents: vec![rawdoc! {"a": 1}],
        }
        .encode(1),
    )
    .unwrap();
    let info = RequestInfo::of(&legacy);
    assert_eq!(
        Shaper::new()
            .request_with(&legacy, &info)
            .unwrap()
            .view()
            .text,
        "insert shop.orders"
    );
}

#[test]
fn a_legacy_find_one_and_flagged_query_shape_as_the_op_msg_find() {
    let legacy = |number_to_return, flags, query| {
        let q = OpQuery {
            flags,
            full_collection_name: "d.c".into(),
            number_to_skip: 0,
            number_to_return,
            query,
            return_fields_selector: None,
        };
        text(&Message::parse(&q.encode(1)).unwrap())
    };
    // findOne: numberToReturn -1, or 1 (read as -1), closes the cursor after the first batch.
    let find_one = of_doc(
        doc! {"find": "c", "$db": "d", "filter": {"a": 1}, "limit": 1,
        "singleBatch": true},
    );
    assert_eq!(legacy(-1, 0, rawdoc! {"a": 2}), find_one);
    assert_eq!(legacy(1, 0, rawdoc! {"a": 3}), find_one);
    assert_eq!(
        legacy(5, 0, rawdoc! {"a": 3}),
        "find d.c {a: ?number} limit"
    );
    // Tailable (bit 1), awaitData (5), noCursorTimeout (4), partial (7); $returnKey, $showDiskLoc.
    let op_msg = of_doc(
        doc! {"find": "c", "$db": "d", "filter": {"a": 1}, "returnKey": true,
        "showRecordId": true, "tailable": true, "awaitData": true, "noCursorTimeout": true,
        "allowPartialResults": true},
    );
    let wrapped = rawdoc! {"$query": {"a": 1}, "$returnKey": true, "$showDiskLoc": true};
    let flags = (1 << 1) | (1 << 5) | (1 << 4) | (1 << 7) | (1 << 2);
    assert_eq!(legacy(0, flags, wrapped), op_msg);
}
