//! Writing a recorded request out for one copy ([`rewrite`]): its session, database and cursor fields
//! replaced and cluster-bound fields removed. Elements that do not change are copied as bytes; nothing
//! is decoded and re-encoded. What the request is was decided once before (`understand`). The
//! rules are listed in `docs/replay.md`.

use super::db_map::DbMap;
use super::recorded::Request;
use crate::wire::bson_raw::{self, DocWriter, ARRAY, BINARY_UUID, DOCUMENT};
use crate::wire::header::MsgHeader;
use crate::wire::{MsgFlags, OpMsgView, OpMsgWriter, SectionView, WireError};

/// A request written out for one copy: the bytes to send (request id still to be set) and where
/// the live cursor ids go.
#[derive(Debug)]
pub struct Rewritten {
    pub bytes: Vec<u8>,
    /// Offsets of int64 cursor ids in `bytes`, with the recorded id each stands for.
    pub cursor_patches: Vec<(usize, i64)>,
}

/// Writes `req` for one copy: `lsid` is the live session id (16 bytes) that replaces the recorded one.
/// The request is sent without a checksum (its bytes change) and without exhaustAllowed (the
/// replay waits for one reply per request).
pub fn rewrite(
    req: &Request,
    map: &dyn DbMap,
    lsid: Option<&[u8; 16]>,
) -> Result<Rewritten, WireError> {
    let view = OpMsgView::new(&req.msg)?;
    let flags = view.flags() - (MsgFlags::CHECKSUM_PRESENT | MsgFlags::EXHAUST_ALLOWED);
    if as_is(req, &view, map)? {
        return Ok(as_recorded(req.msg.to_vec()));
    }
    let mut out = OpMsgWriter::new(req.msg.len() + 32, flags);
    let mut patches = Vec::new();
    for section in view.sections() {
        match section? {
            SectionView::Body { document, .. } => {
                rewrite_body(req, document, map, lsid, out.body(), &mut patches)?
            }
            sequence => out.raw_section(sequence.raw()),
        }
    }
    Ok(Rewritten {
        bytes: out.finish(),
        cursor_patches: patches,
    })
}

/// As [`rewrite`], for a request's last copy: one that changes nothing takes the recorded bytes
/// out of `req` (whose `msg` is then empty) instead of copying them. When nothing else holds them
/// (the capture's record is gone, as for every request held until its recorded reply) they become
/// the copy's bytes without an allocation or a copy.
pub fn rewrite_last(
    req: &mut Request,
    map: &dyn DbMap,
    lsid: Option<&[u8; 16]>,
) -> Result<Rewritten, WireError> {
    if as_is(req, &OpMsgView::new(&req.msg)?, map)? {
        return Ok(as_recorded(Vec::from(std::mem::take(&mut req.msg))));
    }
    rewrite(req, map, lsid)
}

/// Whether a copy of `req` is its recorded bytes: nothing in it changes ([`Request::plain`]), its
/// database is not renamed, and it has no checksum or exhaust flag to drop.
fn as_is(req: &Request, view: &OpMsgView<'_>, map: &dyn DbMap) -> Result<bool, WireError> {
    let flags = view.flags() - (MsgFlags::CHECKSUM_PRESENT | MsgFlags::EXHAUST_ALLOWED);
    Ok(req.plain && flags == view.flags() && map.map_db(&req.db) == *req.db && one_body(view)?)
}

/// Whether every section reads and exactly one is a body: the one `understand` read whole. A
/// second body (which no driver sends) was not, and is written out by the rules like the first.
fn one_body(view: &OpMsgView<'_>) -> Result<bool, WireError> {
    let mut bodies = 0;
    for section in view.sections() {
        bodies += usize::from(matches!(section?, SectionView::Body { .. }));
    }
    Ok(bodies == 1)
}

/// A copy that changes nothing: the recorded bytes, with the header [`OpMsgWriter`] writes (request
/// id and responseTo 0).
fn as_recorded(mut bytes: Vec<u8>) -> Rewritten {
    MsgHeader::write_request_id(&mut bytes, 0);
    MsgHeader::write_response_to(&mut bytes, 0);
    Rewritten {
        bytes,
        cursor_patches: Vec::new(),
    }
}

fn rewrite_body(
    req: &Request,
    body: &[u8],
    map: &dyn DbMap,
    lsid: Option<&[u8; 16]>,
    out: &mut Vec<u8>,
    patches: &mut Vec<(usize, i64)>,
) -> Result<(), WireError> {
    let command = &*req.command;
    let mut w = DocWriter::new(out);
    for (i, e) in bson_raw::iter(body)?.enumerate() {
        let e = e?;
        match e.key {
            "getMore" if i == 0 => {
                let id = e.as_i64().unwrap_or_default();
                let at = w.i64("getMore", id);
                patches.push((at, id));
            }
            "cursors" if command == "killCursors" && e.kind == ARRAY => {
                let ids: Vec<i64> = bson_raw::elements(e.value)?
                    .iter()
                    .filter_map(|c| c.as_i64())
                    .collect();
                w.sub(ARRAY, "cursors", |a| {
                    for (k, id) in ids.iter().enumerate() {
                        let at = a.i64(&k.to_string(), *id);
                        patches.push((at, *id));
                    }
                });
            }
            "lsid" => {
                if let Some(id) = lsid {
                    w.sub(DOCUMENT, "lsid", |d| d.binary("id", BINARY_UUID, id));
                }
            }
            "$clusterTime" | "recoveryToken" => {}
            "$db" => w.str("$db", &map.map_db(e.as_str().unwrap_or_default())),
            "readConcern" if e.kind == DOCUMENT => {
                let inner = bson_raw::elements(e.value)?;
                w.sub(DOCUMENT, "readConcern", |d| {
                    for f in inner
                        .iter()
                        .filter(|f| !matches!(f.key, "afterClusterTime" | "atClusterTime"))
                    {
                        d.raw(f.raw);
                    }
                });
            }
            "renameCollection" | "to" if command == "renameCollection" => {
                w.str(e.key, &map.map_ns(e.as_str().unwrap_or_default()))
            }
            _ => w.raw(e.raw),
        }
    }
    w.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::request::understand::tests::msg;
    use crate::replay::request::understand::understand;
    use crate::wire::op_msg::MsgFlags;
    use crate::wire::Message;
    use bson::{rawdoc, RawDocumentBuf};
    use bytes::Bytes;
    use std::borrow::Cow;

    struct Suffix(&'static str);
    impl DbMap for Suffix {
        fn map_db<'a>(&'a self, db: &'a str) -> Cow<'a, str> {
            if db == "admin" {
                Cow::Borrowed(db)
            } else {
                Cow::Owned(format!("{db}{}", self.0))
            }
        }
    }

    fn body_of(bytes: &[u8]) -> RawDocumentBuf {
        match Message::parse(bytes).unwrap().body {
            crate::wire::Body::Msg(m) => m.body().clone(),
            _ => panic!("not OP_MSG"),
        }
    }

    #[test]
    fn insert_gets_new_session_db_and_loses_cluster_time() {
        let lsid = bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: vec![7; 16],
        };
        let wire = msg(
            MsgFlags::CHECKSUM_PRESENT,
            rawdoc! {
                "insert": "c", "ordered": true, "lsid": {"id": lsid}, "txnNumber": 3i64,
                "$clusterTime": {"clusterTime": bson::Timestamp{time: 1, increment: 1}},
                "readConcern": {"level": "majority", "afterClusterTime": bson::Timestamp{time: 1, increment: 1}},
                "$db": "bench",
            },
            true,
        );
        let req = understand(1, 10, &wire).unwrap();
        assert_eq!(
            (&*req.command, &*req.db, req.expects_reply),
            ("insert", "bench", true)
        );
        assert!(req.lsid.is_some());
        let out = rewrite(&req, &Suffix("_2"), Some(&[1; 16])).unwrap();
        let parsed = Message::parse(&out.bytes).unwrap();
        let body = body_of(&out.bytes);
        assert_eq!(body.get_str("$db").unwrap(), "bench_2");
        assert_eq!(body.get_i64("txnNumber").unwrap(), 3);
        assert!(body.get("$clusterTime").unwrap().is_none());
        let rc = body.get_document("readConcern").unwrap();
        assert_eq!(rc.get_str("level").unwrap(), "majority");
        assert!(rc.get("afterClusterTime").unwrap().is_none());
        let id = body.get_document("lsid").unwrap().get_binary("id").unwrap();
        assert_eq!(id.bytes, &[1; 16]);
        match parsed.body {
            crate::wire::Body::Msg(m) => {
                assert_eq!(m.sections.len(), 2);
                assert!(m.checksum.is_none());
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_last_copy_takes_the_recorded_bytes_and_never_writes_into_bytes_others_hold() {
        let body = rawdoc! {"insert": "c", "ordered": true, "$db": "bench"};
        let wire = Bytes::copy_from_slice(&msg(MsgFlags::empty(), body.clone(), true));
        let recorded_id = MsgHeader::parse(&wire).unwrap().unwrap().request_id;
        assert_ne!(recorded_id, 0);
        let mut req = understand(1, 10, &wire).unwrap();
        assert!(req.plain);
        let copy = rewrite(&req, &Suffix(""), None).unwrap();
        // The capture's record still holds the bytes: they are copied, and stay as recorded.
        let mut held = req.clone();
        let last = rewrite_last(&mut held, &Suffix(""), None).unwrap();
        assert_eq!(last.bytes, copy.bytes);
        assert_eq!(
            MsgHeader::parse(&wire).unwrap().unwrap().request_id,
            recorded_id
        );
        assert!(held.msg.is_empty());
        // Nothing else holds them: the copy is the recorded buffer itself, with the ids zeroed.
        drop((wire, held));
        let at = req.msg.as_ptr();
        let last = rewrite_last(&mut req, &Suffix(""), None).unwrap();
        assert_eq!(last.bytes.as_ptr(), at);
        assert_eq!(last.bytes, copy.bytes);
        // A copy that changes something is written out, and the request keeps its bytes.
        let mut req = understand(1, 10, &msg(MsgFlags::empty(), body, true)).unwrap();
        let mapped = rewrite_last(&mut req, &Suffix("_2"), None).unwrap();
        assert_eq!(body_of(&mapped.bytes).get_str("$db").unwrap(), "bench_2");
        assert!(!req.msg.is_empty());
    }

    #[test]
    fn a_plain_request_goes_out_as_recorded_and_equals_the_written_copy() {
        let body = rawdoc! {"insert": "c", "ordered": true, "$db": "bench"};
        let wire = msg(MsgFlags::empty(), body.clone(), true);
        let req = understand(1, 10, &wire).unwrap();
        assert!(req.plain);
        let as_is = rewrite(&req, &Suffix(""), None).unwrap();
        let written = rewrite(
            &Request {
                plain: false,
                ..req.clone()
            },
            &Suffix(""),
            None,
        )
        .unwrap();
        assert_eq!(as_is.bytes, written.bytes);
        assert_eq!(&as_is.bytes[12..], &wire[12..]);
        // A database that changes, or a checksum, is written out anew.
        let mapped = rewrite(&req, &Suffix("_2"), None).unwrap();
        assert_eq!(body_of(&mapped.bytes).get_str("$db").unwrap(), "bench_2");
        let summed = understand(1, 10, &msg(MsgFlags::CHECKSUM_PRESENT, body, true)).unwrap();
        let out = rewrite(&summed, &Suffix(""), None).unwrap();
        assert_eq!(out.bytes, written.bytes);
        // A session, a cluster time, a read concern, a getMore: never plain.
        for body in [
            rawdoc! {"find": "c", "lsid": {"id": 1}, "$db": "b"},
            rawdoc! {"find": "c", "$clusterTime": {}, "$db": "b"},
            rawdoc! {"find": "c", "readConcern": {"level": "local"}, "$db": "b"},
            rawdoc! {"getMore": 5i64, "collection": "c", "$db": "b"},
            rawdoc! {"find": "c", "$db": 3},
        ] {
            let req = understand(1, 1, &msg(MsgFlags::empty(), body, false)).unwrap();
            assert!(!req.plain, "{:?}", req.command);
        }
    }

    #[test]
    fn get_more_and_kill_cursors_carry_patch_offsets() {
        let wire = msg(
            MsgFlags::empty(),
            rawdoc! {"getMore": 55i64, "collection": "c", "$db": "bench"},
            false,
        );
        let req = understand(1, 1, &wire).unwrap();
        assert_eq!(req.cursor_refs, vec![55]);
        let mut out = rewrite(&req, &Suffix(""), None).unwrap();
        let (at, rec) = out.cursor_patches[0];
        assert_eq!(rec, 55);
        bson_raw::write_i64_at(&mut out.bytes, at, 99);
        assert_eq!(body_of(&out.bytes).get_i64("getMore").unwrap(), 99);

        let wire = msg(
            MsgFlags::empty(),
            rawdoc! {"killCursors": "c", "cursors": [1i64, 2i64], "$db": "bench"},
            false,
        );
        let req = understand(1, 1, &wire).unwrap();
        assert_eq!(req.cursor_refs, vec![1, 2]);
        let out = rewrite(&req, &Suffix(""), None).unwrap();
        assert_eq!(out.cursor_patches.len(), 2);
    }
}
