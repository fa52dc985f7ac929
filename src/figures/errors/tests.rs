//! Errors by code: counted, capped, added up and written out.
use super::*;
use bson::rawdoc;

fn fields(doc: &bson::RawDocumentBuf) -> ReplyFields<'_> {
    ReplyFields::of(doc.as_bytes()).unwrap()
}

#[test]
fn command_and_write_errors_are_counted_by_code_with_their_shapes() {
    let failed =
        rawdoc! {"ok": 0.0, "code": 26, "codeName": "NamespaceNotFound", "errmsg": "ns not found"};
    let dup = rawdoc! {"ok": 1.0, "n": 0, "writeErrors": [{"index": 0, "code": 11000,
    "errmsg": "E11000 duplicate key error collection: shop.orders index: _id_ dup key: { _id: 7 }"}]};
    let fine = rawdoc! {"ok": 1.0, "n": 1};
    assert_eq!(ErrorSeen::of(&fields(&fine)), None);
    let mut t = ErrorTally::new(10, false);
    for i in 0..5 {
        let seen = ErrorSeen::of(&fields(&dup)).unwrap();
        t.add("insert", &seen, || {
            Some((format!("h{}", i % 2), "insert shop.orders".into()))
        });
    }
    t.add("drop", &ErrorSeen::of(&fields(&failed)).unwrap(), || None);
    let r = t.report();
    assert_eq!(r.total(), 6);
    let first = &r.errors_by_code[0];
    assert_eq!(
        (first.command.as_str(), first.code, first.count),
        ("insert", Some(11000), 5)
    );
    assert_eq!(
        first.code_name.as_deref(),
        Some("DuplicateKey"),
        "filled in from wire::codes"
    );
    assert!(first.write_error);
    assert_eq!(first.shapes.len(), 2, "two distinct shapes");
    assert_eq!(
        r.errors_by_code[1].code_name.as_deref(),
        Some("NamespaceNotFound")
    );
    assert_eq!(
        r.line().unwrap(),
        "errors 6: DuplicateKey (11000) 5 on insert (write error), NamespaceNotFound (26) 1 on drop"
    );
    assert!(r
        .duplicate_key_hint()
        .unwrap()
        .contains("docs/production.md"));
}

/// An OP_MSG reply frame with `doc` as its body.
fn frame(doc: &bson::RawDocumentBuf) -> Vec<u8> {
    let mut msg = crate::wire::OpMsgWriter::new(64, crate::wire::MsgFlags::empty());
    msg.body().extend_from_slice(doc.as_bytes());
    msg.finish()
}

#[test]
fn an_unordered_batch_counts_every_write_error_under_its_own_code() {
    let dup = |i: i32| rawdoc! {"index": i, "code": 11000, "errmsg": "E11000 dup"};
    let mixed = rawdoc! {"ok": 1.0, "n": 2, "writeErrors": [
    dup(0), {"index": 1, "code": 121, "codeName": "DocumentValidationFailure",
    "errmsg": "failed validation"}, dup(2), dup(3)]};
    let mut t = ErrorTally::new(10, false);
    let f = frame(&mixed);
    for _ in 0..2 {
        ErrorSeen::of_frame(&f, |seen| t.add("insert", &seen, || None));
    }
    let r = t.report();
    let by = |code| {
        r.errors_by_code
            .iter()
            .find(|e| e.code == Some(code))
            .unwrap()
    };
    // Two replies, each with three DuplicateKey entries and one validation failure.
    assert_eq!((by(11000).count, by(11000).statements), (2, 6));
    assert_eq!((by(121).count, by(121).statements), (2, 2));
    assert_eq!(
        by(121).code_name.as_deref(),
        Some("DocumentValidationFailure")
    );
    let line = r.line().unwrap();
    assert!(
        line.contains("DuplicateKey (11000) 2 on insert (6 write errors)"),
        "{line}"
    );
    // One entry alone reads as before; a command error has no statements.
    let one = rawdoc! {"ok": 1.0, "n": 0, "writeErrors": [dup(0)]};
    let failed = rawdoc! {"ok": 0.0, "code": 26, "errmsg": "ns not found"};
    let mut t = ErrorTally::new(10, false);
    ErrorSeen::of_frame(&frame(&one), |seen| t.add("insert", &seen, || None));
    ErrorSeen::of_frame(&frame(&failed), |seen| t.add("drop", &seen, || None));
    let r = t.report();
    let of = |r: &ErrorsReport, command: &str| {
        let e = r.errors_by_code.iter().find(|e| e.command == command);
        e.map(|e| e.statements).unwrap()
    };
    assert_eq!((of(&r, "insert"), of(&r, "drop")), (1, 0));
    assert!(r.line().unwrap().contains("1 on insert (write error)"));
    let mut sum = r.clone();
    sum.add(&r, 10);
    assert_eq!(of(&sum, "insert"), 2);
}

#[test]
fn entries_past_the_cap_are_counted_apart_and_reports_add_up() {
    let mut t = ErrorTally::new(2, false);
    for code in 1..=5 {
        let seen = ErrorSeen {
            code: Some(code),
            code_name: None,
            errmsg: None,
            write_error: false,
            statements: 0,
        };
        t.add("find", &seen, || None);
    }
    let r = t.report();
    assert_eq!((r.errors_by_code.len(), r.errors_by_code_other), (2, 3));
    let mut sum = r.clone();
    sum.add(&r, 3);
    assert_eq!(sum.total(), 10);
    assert_eq!(sum.errors_by_code[0].count, 2);
    assert_eq!(r.duplicate_key_hint(), None);
}

#[test]
fn a_redacted_capture_keeps_no_quoted_value_of_a_message() {
    let m = "E11000 duplicate key error collection: shop.orders index: email_1 dup key: { email: \"ann@example.com\" }";
    let r = redacted_errmsg(m);
    assert_eq!(
        r,
        "E11000 duplicate key error collection: shop.orders index: email_1 dup key:…"
    );
    assert!(!r.contains("ann"));
    assert_eq!(grouped(1_600), "1,600");
    assert_eq!(grouped(12), "12");
    assert_eq!(grouped(1_234_567), "1,234,567");
}
