use super::request::{command_of, explain_request, explainable};
use super::summary::summarize;
use super::text::{side_by_side, table, text};
use super::{ExplainError, PlanEntry};
use crate::wire::op_msg::{MsgFlags, OpMsg, Section};
use bson::{rawdoc, RawDocumentBuf};

/// Explain replies captured from secantusd-rs 0.5.3-beta.196 (buildInfo 8.2.11) with pymongo 4.20
/// (`db.command("explain", {...}, verbosity="executionStats")`), as the BSON bytes it sent; see
/// `fixtures/capture.py` for the commands and data.
mod fixtures {
    pub const FIND_COLLSCAN: &[u8] = include_bytes!("fixtures/find_collscan.bson");
    pub const FIND_IXSCAN: &[u8] = include_bytes!("fixtures/find_ixscan.bson");
    pub const FIND_SORT: &[u8] = include_bytes!("fixtures/find_sort.bson");
    pub const AGGREGATE_GROUP: &[u8] = include_bytes!("fixtures/aggregate_group.bson");
    pub const UPDATE: &[u8] = include_bytes!("fixtures/update.bson");
    pub const DELETE: &[u8] = include_bytes!("fixtures/delete.bson");
    pub const COUNT: &[u8] = include_bytes!("fixtures/count.bson");
    pub const DISTINCT: &[u8] = include_bytes!("fixtures/distinct.bson");
    pub const FIND_AND_MODIFY: &[u8] = include_bytes!("fixtures/find_and_modify.bson");
    pub const FAILED: &[u8] = include_bytes!("fixtures/failed.bson");
    pub const ALL: &[&[u8]] = &[
        FIND_COLLSCAN,
        FIND_IXSCAN,
        FIND_SORT,
        AGGREGATE_GROUP,
        UPDATE,
        DELETE,
        COUNT,
        DISTINCT,
        FIND_AND_MODIFY,
        FAILED,
    ];
}

#[test]
fn a_collection_scan_is_collscan_with_its_documents_examined() {
    let s = summarize(fixtures::FIND_COLLSCAN).unwrap();
    assert_eq!(s.plan.as_deref().unwrap(), "COLLSCAN");
    assert!(s.indexes.is_empty());
    assert_eq!(s.keys_examined, Some(0));
    assert_eq!(s.docs_examined, Some(20));
    assert_eq!(s.n_returned, Some(10));
    assert!(s.execution_time_ms.is_some());
}

#[test]
fn an_index_scan_names_its_key_pattern_and_index() {
    let s = summarize(fixtures::FIND_IXSCAN).unwrap();
    assert_eq!(s.plan.as_deref().unwrap(), "IXSCAN {status: 1} -> FETCH");
    assert_eq!(s.indexes, vec!["status_1".to_owned()]);
    assert_eq!(s.keys_examined, Some(10));
    assert_eq!(s.docs_examined, Some(10));
    assert_eq!(s.n_returned, Some(10));
}

#[test]
fn a_sort_comes_after_its_input() {
    let s = summarize(fixtures::FIND_SORT).unwrap();
    assert_eq!(s.plan.as_deref().unwrap(), "COLLSCAN -> SORT");
}

#[test]
fn an_aggregate_names_its_cursor_plan_then_its_stages() {
    let s = summarize(fixtures::AGGREGATE_GROUP).unwrap();
    assert_eq!(
        s.plan.as_deref().unwrap(),
        "COLLSCAN -> PROJECTION_SIMPLE -> $group"
    );
    assert_eq!((s.docs_examined, s.n_returned), (Some(20), Some(10)));
}

#[test]
fn writes_and_other_reads_give_a_plan() {
    for (name, reply) in [
        ("update", fixtures::UPDATE),
        ("delete", fixtures::DELETE),
        ("count", fixtures::COUNT),
        ("distinct", fixtures::DISTINCT),
        ("findAndModify", fixtures::FIND_AND_MODIFY),
    ] {
        let s = summarize(reply).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!s.plan.as_deref().unwrap().is_empty(), "{name}: {s:?}");
        assert!(s.docs_examined.is_some(), "{name}: {s:?}");
    }
    assert!(summarize(fixtures::UPDATE)
        .unwrap()
        .plan
        .unwrap()
        .contains("UPDATE"));
    assert!(summarize(fixtures::DELETE)
        .unwrap()
        .plan
        .unwrap()
        .contains("DELETE"));
}

#[test]
fn a_failed_explain_is_its_error() {
    match summarize(fixtures::FAILED) {
        Err(ExplainError::Failed { code, errmsg, .. }) => {
            assert!(code.is_some());
            assert!(!errmsg.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn server_hashes_are_kept_when_the_server_reports_them() {
    let reply = rawdoc! {
        "queryShapeHash": "ABCDEF",
        "queryPlanner": {
            "planCacheShapeHash": "1234ABCD",
            "planCacheKey": "FEDC4321",
            "winningPlan": {"stage": "FETCH", "inputStage": {
                "stage": "IXSCAN", "keyPattern": {"a": 1, "b": -1}, "indexName": "a_1_b_-1"}},
        },
        "executionStats": {"nReturned": 3, "executionTimeMillis": 2,
            "totalKeysExamined": 4_i64, "totalDocsExamined": 3.0},
        "ok": 1.0,
    };
    let s = summarize(reply.as_bytes()).unwrap();
    assert_eq!(s.plan.as_deref().unwrap(), "IXSCAN {a: 1, b: -1} -> FETCH");
    assert_eq!(s.query_shape_hash.as_deref(), Some("ABCDEF"));
    assert_eq!(s.plan_cache_shape_hash.as_deref(), Some("1234ABCD"));
    assert_eq!(s.plan_cache_key.as_deref(), Some("FEDC4321"));
    assert_eq!(
        (s.keys_examined, s.docs_examined, s.n_returned),
        (Some(4), Some(3), Some(3))
    );
    // Before 8.0 the shape hash was queryHash.
    let old = rawdoc! {"queryPlanner": {"queryHash": "99", "winningPlan": {"stage": "COLLSCAN"}}, "ok": 1};
    let s = summarize(old.as_bytes()).unwrap();
    assert_eq!(s.plan_cache_shape_hash.as_deref(), Some("99"));
}

#[test]
fn several_inputs_nested_plans_and_shards() {
    let or = rawdoc! {"queryPlanner": {"winningPlan": {"stage": "FETCH", "inputStage": {
    "stage": "OR", "inputStages": [
        {"stage": "IXSCAN", "keyPattern": {"a": 1}, "indexName": "a_1"},
        {"stage": "IXSCAN", "keyPattern": {"b": "hashed"}, "indexName": "b_hashed"},
    ]}}}, "ok": 1};
    let s = summarize(or.as_bytes()).unwrap();
    assert_eq!(
        s.plan.as_deref().unwrap(),
        "OR(IXSCAN {a: 1}, IXSCAN {b: \"hashed\"}) -> FETCH"
    );
    assert_eq!(s.indexes, vec!["a_1", "b_hashed"]);
    let sbe = rawdoc! {"queryPlanner": {"winningPlan": {"queryPlan": {"stage": "COLLSCAN"},
    "slotBasedPlan": {"stages": "..."}}}, "ok": 1};
    assert_eq!(summarize(sbe.as_bytes()).unwrap().plan.unwrap(), "COLLSCAN");
    let sharded = rawdoc! {"queryPlanner": {"winningPlan": {"stage": "SHARD_MERGE", "shards": [
        {"shardName": "s0", "winningPlan": {"stage": "COLLSCAN"}},
        {"shardName": "s1", "winningPlan": {"stage": "FETCH", "inputStage": {"stage": "IXSCAN", "indexName": "k_1"}}},
    ]}}, "executionStats": {"totalKeysExamined": 5, "totalDocsExamined": 9, "nReturned": 2}, "ok": 1};
    let s = summarize(sharded.as_bytes()).unwrap();
    assert_eq!(
        s.plan.as_deref().unwrap(),
        "SHARD_MERGE(s0: COLLSCAN; s1: IXSCAN k_1 -> FETCH)"
    );
    assert_eq!(s.docs_examined, Some(9));
    let agg_sharded = rawdoc! {"shards": {
        "s0": {"stages": [{"$cursor": {"queryPlanner": {"winningPlan": {"stage": "COLLSCAN"}},
            "executionStats": {"totalDocsExamined": 4, "totalKeysExamined": 0, "nReturned": 2}}},
            {"$group": {}}]},
        "s1": {"queryPlanner": {"winningPlan": {"stage": "EOF"}},
            "executionStats": {"totalDocsExamined": 1, "totalKeysExamined": 0, "nReturned": 0}},
    }, "ok": 1};
    let s = summarize(agg_sharded.as_bytes()).unwrap();
    assert_eq!(
        s.plan.as_deref().unwrap(),
        "SHARDS(s0: COLLSCAN -> $group; s1: EOF)"
    );
    assert_eq!(s.docs_examined, Some(5));
    let none = rawdoc! {"ok": 1};
    assert_eq!(summarize(none.as_bytes()), Err(ExplainError::NoPlan));
}

/// A plan nested deeper than the walk goes, and wider than the line holds: cut, not a crash.
#[test]
fn deep_and_wide_plans_are_cut() {
    let mut stage = rawdoc! {"stage": "COLLSCAN"};
    for _ in 0..90 {
        stage = rawdoc! {"stage": "LIMIT", "inputStage": stage};
    }
    let reply = rawdoc! {"queryPlanner": {"winningPlan": stage}, "ok": 1};
    let s = summarize(reply.as_bytes()).unwrap();
    let line = s.plan.unwrap();
    assert!(line.contains('…'), "{line}");
    assert!(line.len() <= super::summary::MAX_LINE + 4);
}

/// Every truncation and many single-byte changes of every fixture: an error or a summary, never
/// a panic.
#[test]
fn damaged_replies_never_panic() {
    for reply in fixtures::ALL {
        for len in 0..reply.len() {
            let _ = summarize(&reply[..len]);
        }
        let mut bytes = reply.to_vec();
        for i in 0..bytes.len() {
            for v in [0x00, 0x03, 0x04, 0x7f, 0xff] {
                let old = bytes[i];
                bytes[i] = v;
                let _ = summarize(&bytes);
                bytes[i] = old;
            }
        }
    }
}

fn op_msg(body: RawDocumentBuf, sequences: Vec<(&str, Vec<RawDocumentBuf>)>) -> Vec<u8> {
    let mut sections = vec![Section::Body(body)];
    for (identifier, documents) in sequences {
        sections.push(Section::Sequence {
            identifier: identifier.into(),
            documents,
        });
    }
    OpMsg {
        flags: MsgFlags::empty(),
        sections,
        checksum: None,
    }
    .encode(7, 0)
}

#[test]
fn the_explain_leaves_out_the_session_and_concerns() {
    let msg = op_msg(
        rawdoc! {
            "find": "orders", "filter": {"status": "A"}, "limit": 5,
            "lsid": {"id": 1}, "txnNumber": 3_i64, "$clusterTime": {"clusterTime": 1},
            "readConcern": {"afterClusterTime": 1}, "$readPreference": {"mode": "primary"},
            "$db": "shop",
        },
        vec![],
    );
    let cmd = explain_request(&msg).unwrap();
    let expected = rawdoc! {
        "explain": {"find": "orders", "filter": {"status": "A"}, "limit": 5},
        "verbosity": "executionStats",
        "$db": "shop",
    };
    assert_eq!(cmd, expected);
    assert_eq!(command_of(&msg), Some(("find".into(), "shop".into())));
}

#[test]
fn an_update_sent_as_a_document_sequence_keeps_its_first_statement() {
    let msg = op_msg(
        rawdoc! {"update": "orders", "ordered": true, "writeConcern": {"w": 1}, "$db": "shop"},
        vec![(
            "updates",
            vec![
                rawdoc! {"q": {"n": 1}, "u": {"$set": {"x": 1}}},
                rawdoc! {"q": {"n": 2}, "u": {"$set": {"x": 2}}},
            ],
        )],
    );
    let cmd = explain_request(&msg).unwrap();
    let expected = rawdoc! {
        "explain": {"update": "orders", "ordered": true,
            "updates": [{"q": {"n": 1}, "u": {"$set": {"x": 1}}}]},
        "verbosity": "executionStats",
        "$db": "shop",
    };
    assert_eq!(cmd, expected);
    let inline = op_msg(
        rawdoc! {"delete": "orders", "deletes": [{"q": {"n": 1}, "limit": 1}, {"q": {}, "limit": 0}], "$db": "shop"},
        vec![],
    );
    let cmd = explain_request(&inline).unwrap();
    let expected = rawdoc! {
        "explain": {"delete": "orders", "deletes": [{"q": {"n": 1}, "limit": 1}]},
        "verbosity": "executionStats",
        "$db": "shop",
    };
    assert_eq!(cmd, expected);
}

#[test]
fn only_reads_and_writes_explain_takes_are_explained() {
    for command in ["getMore", "killCursors", "insert", "hello", "explain"] {
        let doc = bson::doc! {command: "c", "$db": "d"};
        let msg = op_msg(RawDocumentBuf::try_from(&doc).unwrap(), vec![]);
        assert!(explain_request(&msg).is_err(), "{command}");
    }
    let out = rawdoc! {"aggregate": "c", "pipeline": [{"$match": {}}, {"$out": "x"}], "$db": "d"};
    assert!(!explainable("aggregate", out.as_bytes()));
    let merge = rawdoc! {"aggregate": "c", "pipeline": [{"$merge": {"into": "x"}}], "$db": "d"};
    assert!(!explainable("aggregate", merge.as_bytes()));
    let read = rawdoc! {"aggregate": "c", "pipeline": [{"$group": {"_id": "$a"}}], "cursor": {}, "$db": "d"};
    assert!(explainable("aggregate", read.as_bytes()));
    let msg = op_msg(read, vec![]);
    assert!(explain_request(&msg).is_ok());
    let no_db = op_msg(rawdoc! {"find": "c"}, vec![]);
    assert!(explain_request(&no_db).is_err());
    assert!(explain_request(b"not a message").is_err());
}

fn entry(hash: &str, plan: Option<&str>, error: Option<&str>) -> PlanEntry {
    PlanEntry {
        hash: hash.into(),
        shape: format!("find shop.orders {{{hash}: ?string}}"),
        command: "find".into(),
        namespace: "shop.orders".into(),
        plan: plan.map(str::to_owned),
        error: error.map(str::to_owned),
        keys_examined: Some(0),
        docs_examined: Some(12_345),
        n_returned: Some(3),
        schema_changes: Some(0),
        ..PlanEntry::default()
    }
}

#[test]
fn a_b_plans_flag_the_shapes_whose_plan_changed() {
    let a = vec![
        entry("status", Some("COLLSCAN"), None),
        entry("sku", Some("COLLSCAN"), None),
        entry("bad", None, Some("explain failed")),
    ];
    let b = vec![
        entry("status", Some("IXSCAN {status: 1} -> FETCH"), None),
        entry("sku", Some("COLLSCAN"), None),
        entry("bad", Some("COLLSCAN"), None),
    ];
    let (plans, findings) = side_by_side(vec![("A".into(), a), ("B".into(), b)]);
    assert_eq!(plans.len(), 6);
    let changed: Vec<(&str, &str, Option<bool>)> = plans
        .iter()
        .map(|e| {
            (
                e.hash.as_str(),
                e.target.as_deref().unwrap(),
                e.plan_changed,
            )
        })
        .collect();
    assert_eq!(
        changed,
        vec![
            ("status", "A", Some(false)),
            ("status", "B", Some(true)),
            ("sku", "A", Some(false)),
            ("sku", "B", Some(false)),
            ("bad", "A", Some(false)),
            ("bad", "B", Some(false)),
        ]
    );
    assert_eq!(
        findings,
        vec![
            "plan changed on `find shop.orders {status: ?string}`: COLLSCAN on A, \
             IXSCAN {status: 1} -> FETCH on B"
        ]
    );
    let rendered = text(&plans);
    assert!(
        rendered.lines().all(|l| l.chars().count() <= 100),
        "{rendered}"
    );
    assert!(
        rendered.contains("B*") && !rendered.contains("A*"),
        "{rendered}"
    );
}

#[test]
fn a_copy_of_the_control_is_marked_only_when_its_own_plan_differs() {
    let on = |plan: &str| vec![entry("status", Some(plan), None)];
    let (plans, _) = side_by_side(vec![
        ("A".into(), on("COLLSCAN")),
        ("B".into(), on("IXSCAN {status: 1} -> FETCH")),
        ("A2".into(), on("COLLSCAN")),
    ]);
    let marks: Vec<Option<bool>> = plans.iter().map(|e| e.plan_changed).collect();
    assert_eq!(marks, vec![Some(false), Some(true), Some(false)]);
}

#[test]
fn plans_explained_at_other_points_of_the_schema_changes_are_not_compared() {
    let at = |plan: &str, changes: Option<u64>| {
        let mut e = entry("status", Some(plan), None);
        e.schema_changes = changes;
        vec![e]
    };
    // A explained before the capture's createIndexes, A2 after it: no plan change.
    let (plans, findings) = side_by_side(vec![
        ("A".into(), at("COLLSCAN", Some(0))),
        ("B".into(), at("IXSCAN {status: 1} -> FETCH", Some(0))),
        ("A2".into(), at("IXSCAN {status: 1} -> FETCH", Some(1))),
    ]);
    let marks: Vec<Option<bool>> = plans.iter().map(|e| e.plan_changed).collect();
    assert_eq!(marks, vec![Some(false), Some(true), Some(false)]);
    assert_eq!(findings.len(), 1, "{findings:?}");
    // A change in flight during either explain: nothing is compared.
    let (plans, findings) = side_by_side(vec![
        ("A".into(), at("COLLSCAN", None)),
        ("B".into(), at("IXSCAN {status: 1} -> FETCH", None)),
    ]);
    assert!(plans.iter().all(|e| e.plan_changed == Some(false)));
    assert!(findings.is_empty(), "{findings:?}");
}

#[test]
fn the_table_fits_100_columns_whatever_the_shape() {
    let mut long = entry("x", Some(&"IXSCAN {a: 1} -> ".repeat(20)), None);
    long.shape = "find db.c ".to_owned() + &"{field: ?string} ".repeat(30);
    long.keys_examined = Some(u64::MAX);
    let t = table(&[long.clone()]).render();
    assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
    long.target = Some("candidate".into());
    let t = table(&[long]).render();
    assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
}
