use super::*;
use crate::wire::legacy::OpReply;
use crate::wire::op_msg::{MsgFlags, OpMsg};
use bson::{rawdoc, RawDocumentBuf};

fn op_reply(flags: i32, cursor_id: i64, documents: Vec<RawDocumentBuf>) -> Vec<u8> {
    OpReply {
        response_flags: flags,
        cursor_id,
        starting_from: 0,
        number_returned: documents.len() as i32,
        documents,
    }
    .encode(1, 2)
}

#[test]
fn an_op_msg_error_gives_code_name_and_message() {
    let doc =
        rawdoc! {"ok": 0.0, "errmsg": "E11000 dup", "code": 11000, "codeName": "DuplicateKey"};
    let frame = OpMsg::with_body(doc, MsgFlags::empty()).encode(1, 2);
    let body = body(&frame).unwrap();
    let f = body.fields().unwrap();
    assert!(!f.is_ok());
    assert_eq!(
        (f.code, f.code_name, f.errmsg),
        (Some(11000), Some("DuplicateKey"), Some("E11000 dup"))
    );
}

fn ok_of(doc: RawDocumentBuf) -> bool {
    ReplyFields::of(doc.as_bytes()).unwrap().is_ok()
}

#[test]
fn ok_is_any_non_zero_number_or_true() {
    assert!(ok_of(rawdoc! {"ok": 1_i32}) && !ok_of(rawdoc! {"ok": 0_i32}));
    assert!(ok_of(rawdoc! {"ok": 2_i32}) && ok_of(rawdoc! {"ok": -1_i32}));
    assert!(ok_of(rawdoc! {"ok": 1_i64}) && !ok_of(rawdoc! {"ok": 0_i64}));
    assert!(ok_of(rawdoc! {"ok": 1.0}) && !ok_of(rawdoc! {"ok": 0.0}));
    assert!(ok_of(rawdoc! {"ok": 0.5}) && !ok_of(rawdoc! {"ok": -0.0}));
    assert!(ok_of(rawdoc! {"ok": f64::NAN}));
    assert!(ok_of(rawdoc! {"ok": true}) && !ok_of(rawdoc! {"ok": false}));
    assert!(!ok_of(rawdoc! {"n": 1}) && !ok_of(rawdoc! {"ok": "1"}));
}

#[test]
fn a_failed_command_says_its_errmsg_and_code() {
    let failed = rawdoc! {"ok": 0, "errmsg": "auth failed", "code": 18};
    assert_eq!(
        check_command(failed.as_bytes()),
        Err("auth failed (code 18)".into())
    );
    let bare = rawdoc! {"ok": 0.0};
    assert_eq!(check_command(bare.as_bytes()), Err("no errmsg".into()));
    assert_eq!(check_command(rawdoc! {"ok": 1}.as_bytes()), Ok(()));
    assert!(check_command(&[5, 0, 0]).is_err());
}

#[test]
fn write_errors_count_and_the_first_is_kept() {
    let doc = rawdoc! {"n": 1, "ok": 1, "writeErrors": [
        {"index": 1, "code": 11000, "codeName": "DuplicateKey", "errmsg": "dup"},
        {"index": 2, "code": 121, "errmsg": "invalid"},
    ]};
    let f = ReplyFields::of(doc.as_bytes()).unwrap();
    assert!(f.is_ok());
    assert_eq!((f.n, f.write_errors), (Some(1), 2));
    assert_eq!(f.error_code(), Some(11000));
    assert_eq!(f.write_error.unwrap().code_name, Some("DuplicateKey"));
    let wce = rawdoc! {"ok": 1, "writeConcernError": {"code": 64, "errmsg": "timeout"}};
    let f = ReplyFields::of(wce.as_bytes()).unwrap();
    assert_eq!(f.error_code(), Some(64));
}

#[test]
fn operation_time_is_read_as_seconds_then_increment() {
    let at = |time, increment| {
        let doc = rawdoc! {"ok": 1.0, "operationTime": bson::Timestamp { time, increment }};
        ReplyFields::of(doc.as_bytes()).unwrap().operation_time
    };
    assert_eq!(at(1_796_401_956, 4), Some((1_796_401_956, 4)));
    assert!(at(1_796_401_956, 5) > at(1_796_401_956, 4) && at(2, 0) > at(1, 9));
    let wrong_type = rawdoc! {"ok": 1.0, "operationTime": 5_i64};
    let f = ReplyFields::of(wrong_type.as_bytes()).unwrap();
    assert_eq!(f.operation_time, None);
}

#[test]
fn a_cursor_gives_its_id_and_batch() {
    let doc = rawdoc! {"cursor": {"id": 77_i64, "ns": "d.c", "firstBatch": [{"a": 1}, {"a": 2}]}, "ok": 1.0};
    let f = ReplyFields::of(doc.as_bytes()).unwrap();
    assert_eq!((f.cursor_id, f.batch_len), (Some(77), Some(2)));
}

#[test]
fn op_reply_is_a_command_reply_or_query_results_by_its_ok() {
    let command = op_reply(0, 0, vec![rawdoc! {"ismaster": true, "ok": 1.0}]);
    let body_of_command = body(&command).unwrap();
    let f = body_of_command.fields().unwrap();
    assert_eq!((f.ok, f.cursor_id), (Some(1.0), None));
    // One result document without `ok`: query results, not a failed command.
    let results = op_reply(0, 0, vec![rawdoc! {"_id": 1, "code": 5}]);
    let body_of_results = body(&results).unwrap();
    let f = body_of_results.fields().unwrap();
    assert_eq!((f.ok, f.code, f.batch_len), (Some(1.0), None, Some(1)));
    let more = op_reply(0, 9, vec![rawdoc! {"_id": 1}, rawdoc! {"_id": 2}]);
    let body_of_more = body(&more).unwrap();
    let f = body_of_more.fields().unwrap();
    assert_eq!((f.cursor_id, f.batch_len), (Some(9), Some(2)));
    let failed = op_reply(2, 0, vec![rawdoc! {"$err": "bad query", "code": 2}]);
    let body_of_failed = body(&failed).unwrap();
    let f = body_of_failed.fields().unwrap();
    assert!(!f.is_ok());
    assert_eq!((f.code, f.errmsg), (Some(2), Some("bad query")));
    assert_eq!(
        body_of_failed.legacy.unwrap().flags,
        ReplyFlags::QUERY_FAILURE
    );
}

#[test]
fn a_compressed_reply_is_inflated_by_body_and_left_alone_in_place() {
    let doc = rawdoc! {"ok": 0, "code": 13, "codeName": "Unauthorized"};
    let plain = OpMsg::with_body(doc, MsgFlags::empty()).encode(1, 2);
    let frame = compressed::compress(&plain, compressed::Compressor::Zlib).unwrap();
    assert!(body_in_place(&frame).unwrap().is_none());
    let inflated = body(&frame).unwrap();
    assert_eq!(inflated.op_code, OpCode::Msg);
    assert_eq!(inflated.fields().unwrap().code_name, Some("Unauthorized"));
}

#[test]
fn every_prefix_and_a_request_are_errors_not_panics() {
    let frame = OpMsg::with_body(rawdoc! {"ok": 1}, MsgFlags::MORE_TO_COME).encode(1, 2);
    assert!(body(&frame).unwrap().more_to_come);
    for n in 0..frame.len() {
        assert!(body(&frame[..n]).is_err(), "prefix {n}");
    }
    let query = crate::wire::legacy::OpQuery {
        flags: 0,
        full_collection_name: "admin.$cmd".into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: rawdoc! {"ping": 1},
        return_fields_selector: None,
    }
    .encode(3);
    assert!(body(&query).is_err());
}
