use super::*;

use crate::wire::legacy::{OpGetMore, OpKillCursors, OpQuery};
use crate::wire::{MsgFlags, OpMsg};
use bson::{doc, rawdoc, Bson, DateTime, Document, RawDocumentBuf};

pub(super) fn msg(body: RawDocumentBuf) -> Message {
    Message::parse(&OpMsg::with_body(body, MsgFlags::empty()).encode(1, 0)).unwrap()
}

pub(super) fn of_doc(d: Document) -> String {
    text(&msg(RawDocumentBuf::try_from(&d).unwrap()))
}

pub(super) fn text(m: &Message) -> String {
    Shaper::new().request(m).unwrap().view().text.to_owned()
}

#[test]
fn find_keeps_fields_operators_and_sort_and_replaces_literals() {
    let d = doc! {
        "find": "orders", "$db": "shop",
        "filter": {"status": "A", "ts": {"$gt": DateTime::from_millis(5)}},
        "sort": {"ts": -1}, "limit": 5, "batchSize": 10, "lsid": {"id": 1}
    };
    assert_eq!(
        of_doc(d),
        "find shop.orders {status: ?string, ts: {$gt: ?date}} sort {ts: -1} limit"
    );
    let m = msg(rawdoc! {"find": "orders", "$db": "shop"});
    let mut s = Shaper::new();
    let v = s.request(&m).unwrap().view();
    assert_eq!(
        (v.text, v.command, v.namespace),
        ("find shop.orders {}", "find", "shop.orders")
    );
}

#[test]
fn different_literals_are_one_shape_different_types_or_fields_are_not() {
    let find = |filter: Document| of_doc(doc! {"find": "c", "$db": "d", "filter": filter});
    assert_eq!(find(doc! {"a": 1}), find(doc! {"a": 99.5}));
    assert_eq!(find(doc! {"a": 1i64}), find(doc! {"a": 7}));
    assert_eq!(
        find(doc! {"a": "x"}),
        find(doc! {"a": "a much longer string"})
    );
    assert_ne!(find(doc! {"a": 1}), find(doc! {"a": "1"}));
    assert_ne!(find(doc! {"a": 1}), find(doc! {"b": 1}));
    assert_ne!(find(doc! {"a": {"$gt": 1}}), find(doc! {"a": {"$lt": 1}}));
    // $in arrays say the type of their elements, not their length.
    assert_eq!(
        find(doc! {"a": {"$in": [1, 2, 3]}}),
        find(doc! {"a": {"$in": [4]}})
    );
    assert_eq!(
        find(doc! {"a": {"$in": [1, 2.5]}}),
        "find d.c {a: {$in: ?array<?number>}}"
    );
    assert_eq!(
        find(doc! {"a": {"$in": [1, "x"]}, "b": {"$nin": []}}),
        "find d.c {a: {$in: ?array<>}, b: {$nin: []}}"
    );
    // An embedded document compared for equality is one value.
    assert_eq!(find(doc! {"a": {"b": 1}}), "find d.c {a: ?object}");
    assert_eq!(
        find(doc! {"$or": [{"a": 1}, {"b": {"$exists": true}}]}),
        "find d.c {$or: [{a: ?number}, {b: {$exists: ?bool}}]}"
    );
    assert_eq!(
        find(doc! {"tags": {"$elemMatch": {"k": "x", "v": {"$gte": 3}}}}),
        "find d.c {tags: {$elemMatch: {k: ?string, v: {$gte: ?number}}}}"
    );
    assert_eq!(
        find(doc! {"$expr": {"$gt": ["$qty", {"$add": ["$min", 5]}]}}),
        "find d.c {$expr: {$gt: [\"$qty\", {$add: [\"$min\", ?number]}]}}"
    );
}

#[test]
fn every_bson_type_has_its_placeholder() {
    let values: Vec<(Bson, &str)> = vec![
        (Bson::Int32(1), "?number"),
        (Bson::Double(1.5), "?number"),
        (Bson::String("s".into()), "?string"),
        (Bson::Boolean(true), "?bool"),
        (Bson::Null, "?null"),
        (Bson::DateTime(DateTime::from_millis(0)), "?date"),
        (Bson::ObjectId(bson::oid::ObjectId::new()), "?objectId"),
        (
            Bson::Binary(bson::Binary {
                subtype: bson::spec::BinarySubtype::Generic,
                bytes: vec![1],
            }),
            "?binData",
        ),
        (
            Bson::RegularExpression(bson::Regex {
                pattern: bson::raw::cstr!("^a").into(),
                options: bson::raw::cstr!("i").into(),
            }),
            "?regex",
        ),
        (
            Bson::Timestamp(bson::Timestamp {
                time: 1,
                increment: 2,
            }),
            "?timestamp",
        ),
        (Bson::MinKey, "?minKey"),
        (Bson::MaxKey, "?maxKey"),
        (Bson::Array(vec![Bson::Null, Bson::Null]), "?array<?null>"),
    ];
    for (v, want) in values {
        assert_eq!(
            of_doc(doc! {"find": "c", "$db": "d", "filter": {"a": v}}),
            format!("find d.c {{a: {want}}}")
        );
    }
}

#[test]
fn projection_collation_let_hint_min_max_and_flags() {
    let d = doc! {
        "find": "c", "$db": "d", "filter": {},
        "projection": {"a": 1, "b": 0, "c": true, "s": {"$slice": 3}, "x": "$y"},
        "collation": {"locale": "fr"}, "let": {"v": 5}, "hint": {"a": 1},
        "min": {"a": 3}, "max": {"a": 9}, "skip": 10, "singleBatch": true, "tailable": false
    };
    assert_eq!(
        of_doc(d),
        "find d.c {} projection {a: true, b: false, c: true, s: {$slice: ?number}, x: \"$y\"} \
         collation {locale: \"fr\"} let {v: ?number} hint {a: 1} min {a: ?number} max {a: ?number} \
         skip singleBatch"
    );
    // Sort orders in either numeric type are the same shape.
    assert_eq!(
        of_doc(doc! {"find": "c", "$db": "d", "sort": {"a": -1.0}}),
        of_doc(doc! {"find": "c", "$db": "d", "sort": {"a": -1}})
    );
}

#[test]
fn aggregate_walks_its_stages_including_lookup_and_facet_pipelines() {
    let d = doc! {
        "aggregate": "orders", "$db": "shop", "cursor": {},
        "pipeline": [
            {"$match": {"status": "A", "qty": {"$gt": 3}}},
            {"$lookup": {"from": "items", "localField": "sku", "foreignField": "_id", "as": "it",
                         "pipeline": [{"$match": {"stock": {"$lt": 10}}}]}},
            {"$unwind": "$it"},
            {"$group": {"_id": "$cust", "n": {"$sum": 1}, "t": {"$sum": "$qty"}}},
            {"$facet": {"top": [{"$sort": {"n": -1}}, {"$limit": 5}],
                        "few": [{"$match": {"n": {"$lte": 2}}}, {"$count": "c"}]}},
            {"$project": {"_id": 0, "n": 1, "big": {"$gt": ["$n", 100]}}}
        ]
    };
    assert_eq!(
        of_doc(d),
        "aggregate shop.orders [{$match: {status: ?string, qty: {$gt: ?number}}}, \
         {$lookup: {from: \"items\", localField: \"sku\", foreignField: \"_id\", as: \"it\", \
         pipeline: [{$match: {stock: {$lt: ?number}}}]}}, {$unwind: \"$it\"}, \
         {$group: {_id: \"$cust\", n: {$sum: ?number}, t: {$sum: \"$qty\"}}}, \
         {$facet: {top: [{$sort: {n: -1}}, {$limit: ?number}], \
         few: [{$match: {n: {$lte: ?number}}}, {$count: \"c\"}]}}, \
         {$project: {_id: false, n: true, big: {$gt: [\"$n\", ?number]}}}]"
    );
    let db_level = doc! {"aggregate": 1, "$db": "admin", "pipeline": [{"$currentOp": {}}]};
    assert_eq!(of_doc(db_level), "aggregate admin [{$currentOp: {}}]");
}

#[test]
fn writes_distinct_count_and_find_and_modify() {
    assert_eq!(
        of_doc(doc! {"distinct": "c", "$db": "d", "key": "k", "query": {"a": 1}}),
        "distinct d.c key \"k\" {a: ?number}"
    );
    assert_eq!(
        of_doc(doc! {"count": "c", "$db": "d", "query": {"a": 1}, "limit": 3}),
        "count d.c {a: ?number} limit"
    );
    let update = doc! {"update": "c", "$db": "d", "updates": [
        {"q": {"_id": 5}, "u": {"$set": {"a": "x"}, "$inc": {"n": 1},
                                  "$push": {"l": {"$each": [1, 2], "$slice": -3}}},
         "upsert": true, "multi": false},
        {"q": {"other": 1}, "u": {"$set": {"b": 2}}},
    ]};
    assert_eq!(
        of_doc(update),
        "update d.c {_id: ?number} u {$set: {a: ?string}, $inc: {n: ?number}, \
         $push: {l: {$each: ?array<?number>, $slice: ?number}}} upsert"
    );
    assert_eq!(
        of_doc(doc! {"update": "c", "$db": "d", "updates": [
            {"q": {"a": 1}, "u": {"a": 2, "b": "x"}, "arrayFilters": [{"e.k": 1}]}
        ]}),
        "update d.c {a: ?number} u ?object arrayFilters [{e.k: ?number}]"
    );
    assert_eq!(
        of_doc(doc! {"delete": "c", "$db": "d", "deletes": [{"q": {"a": 1}, "limit": 1}]}),
        "delete d.c {a: ?number} limit 1"
    );
    assert_eq!(
        of_doc(doc! {"delete": "c", "$db": "d", "deletes": [{"q": {"a": 1}, "limit": 0}]}),
        "delete d.c {a: ?number}"
    );
    assert_eq!(
        of_doc(
            doc! {"findandmodify": "c", "$db": "d", "query": {"a": 1}, "sort": {"a": 1},
            "update": {"$inc": {"n": 1}}, "new": true}
        ),
        "findAndModify d.c {a: ?number} sort {a: 1} u {$inc: {n: ?number}} new"
    );
    assert_eq!(
        of_doc(doc! {"insert": "c", "$db": "d", "documents": [{"a": 1}]}),
        "insert d.c"
    );
    assert_eq!(
        of_doc(doc! {"createIndexes": "c", "$db": "d", "indexes": []}),
        "createIndexes d.c"
    );
    assert_eq!(
        of_doc(doc! {"dropDatabase": 1, "$db": "d"}),
        "dropDatabase d"
    );
    assert_eq!(
        of_doc(doc! {"explain": {"find": "c", "filter": {"a": 1}}, "$db": "d", "verbosity": "x"}),
        "explain find d.c {a: ?number}"
    );
}

#[test]
fn statements_in_a_document_sequence_are_shaped_like_the_body_array() {
    let body = rawdoc! {"update": "c", "$db": "d", "ordered": true};
    let seq = OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![
            Section::Body(body),
            Section::Sequence {
                identifier: "updates".into(),
                documents: vec![rawdoc! {"q": {"a": 1}, "u": {"$set": {"b": 2}}}],
            },
        ],
        checksum: None,
    };
    let wire = seq.encode(1, 0);
    let m = Message::parse(&wire).unwrap();
    // Read in place from the bytes, the same shape as from the decoded message.
    let in_place = Shaper::new()
        .request_wire(&wire)
        .unwrap()
        .view()
        .text
        .to_owned();
    assert_eq!(in_place, text(&m));
    let q = OpQuery {
        flags: 0,
        full_collection_name: "d.c".into(),
        number_to_skip: 0,
        number_to_return: 0,
        query: rawdoc! {"a": 9},
        return_fields_selector: None,
    }
    .encode(1);
    assert_eq!(
        Shaper::new().request_wire(&q).unwrap().view().text,
        text(&Message::parse(&q).unwrap())
    );
    assert!(Shaper::new()
        .request_wire(&wire[..wire.len() - 1])
        .is_none());
    assert_eq!(
        text(&m),
        of_doc(
            doc! {"update": "c", "$db": "d", "updates": [{"q": {"a": 7}, "u": {"$set": {"b": 9}}}]}
        )
    );
}

#[test]
fn getmore_and_killcursors_continue_their_cursors() {
    let m = msg(rawdoc! {"getMore": 42i64, "collection": "c", "$db": "d"});
    let mut s = Shaper::new();
    match s.request(&m).unwrap() {
        Shaped::Continues { cursors, fallback } => {
            assert_eq!(cursors, [42]);
            assert_eq!(fallback.text, "getMore d.c");
        }
        other => panic!("{other:?}"),
    }
    let m = msg(rawdoc! {"killCursors": "c", "cursors": [7i64, 8i64], "$db": "d"});
    match s.request(&m).unwrap() {
        Shaped::Continues { cursors, .. } => assert_eq!(cursors, [7, 8]),
        other => panic!("{other:?}"),
    }
    let legacy = Message::parse(
        &OpGetMore {
            full_collection_name: "d.c".into(),
            number_to_return: 0,
            cursor_id: 42,
        }
        .encode(3),
    )
    .unwrap();
    assert!(matches!(
        s.request(&legacy).unwrap(),
        Shaped::Continues { cursors, fallback } if cursors == [42] && fallback.text == "getMore d.c"
    ));
    let kill = Message::parse(
        &OpKillCursors {
            cursor_ids: vec![9],
        }
        .encode(4),
    )
    .unwrap();
    assert!(
        matches!(s.request(&kill).unwrap(), Shaped::Continues { cursors, .. } if cursors == [9])
    );
}

#[test]
fn hashes_are_16_hex_digits_of_the_texts_sha256() {
    // The hash is part of the report's contract: this value must never change.
    assert_eq!(hash("find d.c {}"), hash("find d.c {}"));
    assert_eq!(hash("find d.c {}").len(), HASH_HEX);
    let full = Sha256::digest(b"find d.c {}");
    let hex: String = full.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hash("find d.c {}"), hex[..16]);
    assert_eq!(hash(""), "e3b0c44298fc1c14");
}

#[test]
fn keys_and_kept_strings_are_quoted_when_they_would_not_read_back() {
    assert_eq!(
        of_doc(doc! {"find": "c", "$db": "d", "filter": {"a b": 1, "x:y": 2, "": 3},
                     "sort": {"q\"": 1}, "hint": "idx \"1\""}),
        "find d.c {\"a b\": ?number, \"x:y\": ?number, \"\": ?number} sort {\"q\\\"\": 1} hint \"idx \\\"1\\\"\""
    );
}

#[test]
fn deep_long_and_malformed_inputs_are_shaped_without_panicking() {
    // Deeper than any walk follows: cut at the limit, never recursing.
    let deep = crate::wire::depth::nested(100_000);
    let mut body = rawdoc! {"find": "c", "$db": "d"};
    body.append(
        bson::raw::cstr!("sort"),
        RawDocumentBuf::from_bytes(deep.clone()).unwrap(),
    );
    let t = text(&msg(body));
    assert!(t.contains("?tooDeep"), "{t}");
    // In a filter, a field compared to a document is one value, however deep.
    let mut body = rawdoc! {"find": "c", "$db": "d"};
    body.append(
        bson::raw::cstr!("filter"),
        RawDocumentBuf::from_bytes(deep).unwrap(),
    );
    assert_eq!(text(&msg(body)), "find d.c {a: ?object}");
    // Deep $and nesting is walked, and cut at the limit.
    let mut and = doc! {"a": 1};
    for _ in 0..300 {
        and = doc! {"$and": [and]};
    }
    let t = of_doc(doc! {"find": "c", "$db": "d", "filter": and});
    assert!(t.contains("?tooDeep") && !t.contains("?number"), "{t}");
    // A text past MAX_TEXT is cut and keeps the whole text's hash after the cut.
    let mut filter = Document::new();
    for i in 0..2_000 {
        filter.insert(format!("field{i}"), i);
    }
    let long = |last: &str| {
        let mut f = filter.clone();
        f.insert(last, 1);
        of_doc(doc! {"find": "c", "$db": "d", "filter": f})
    };
    let (a, b) = (long("za"), long("zb"));
    assert!(a.len() < MAX_TEXT + 100 && a.contains("… sha256:"));
    assert_ne!(a, b);
    // Garbage inside a document: every prefix and every byte flip of a real message.
    let good = OpMsg::with_body(
        rawdoc! {"find": "c", "$db": "d", "filter": {"a": {"$in": [1, 2]}, "b": "x"},
        "sort": {"a": 1}},
        MsgFlags::empty(),
    )
    .encode(1, 0);
    let mut s = Shaper::new();
    for i in 0..good.len() {
        for flip in [0x00, 0xff, 0x01] {
            let mut bad = good.clone();
            bad[i] ^= flip;
            if let Ok(m) = Message::parse(&bad) {
                let _ = s.request(&m);
            }
        }
    }
}

#[test]
fn replies_have_no_shape() {
    let reply = msg(rawdoc! {"ok": 1.0});
    // A reply decodes as OP_MSG too: its "command" is its first key.
    assert!(Shaper::new().request(&reply).is_some());
    let r = crate::wire::legacy::OpReply {
        response_flags: 0,
        cursor_id: 0,
        starting_from: 0,
        number_returned: 0,
        documents: vec![],
    }
    .encode(1, 1);
    assert!(Shaper::new()
        .request(&Message::parse(&r).unwrap())
        .is_none());
}
