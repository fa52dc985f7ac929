//! Multi-statement transactions of mirrored writes (`--mirror all`): each statement production
//! acknowledged is held with its transaction, per client session, until production acknowledges
//! the commit; then the whole transaction (the statement that started it, its writes, the commit)
//! becomes one item of the target's queue, at the commit's place in production's order, which is
//! where its writes became visible. An aborted transaction is forgotten. A transaction whose start
//! the shadow did not see (it began before the shadow) cannot be applied: its commit sends the
//! target to reads only, its abort does not.

use super::shared::Pair;
use std::collections::HashMap;
use std::sync::Arc;

/// Sessions with a transaction remembered; past it the committed ones are forgotten, and if they
/// were all open the target goes on with reads only.
const MAX_SESSIONS: usize = 100_000;

/// One session's last transaction.
struct Txn {
    number: i64,
    statements: Vec<Arc<Pair>>,
    /// Its start was seen: what it holds is the whole transaction so far.
    whole: bool,
    committed: bool,
}

/// The transactions open in production, per session (`lsid`).
#[derive(Default)]
pub struct OpenTransactions {
    sessions: HashMap<Vec<u8>, Txn>,
    /// Bytes of the statements held.
    pub bytes: usize,
}

/// Whether a statement of a transaction has `startTransaction: true`.
pub fn starts_transaction(msg: &[u8]) -> bool {
    crate::wire::OpMsgView::new(msg)
        .ok()
        .and_then(|v| v.body().ok())
        .and_then(|b| bson::RawDocument::from_bytes(b).ok())
        .and_then(|b| b.get_bool("startTransaction").ok())
        .unwrap_or(false)
}

impl OpenTransactions {
    /// A statement of a multi-statement transaction (`pair.req.transaction` is set): held
    /// (`Ok(None)`), or at its commit the statements before it (`Ok(Some)`). `Err`: the target's
    /// state can no longer follow production's. `room`: bytes that may still be held.
    pub fn hold(
        &mut self,
        pair: &Arc<Pair>,
        room: usize,
    ) -> Result<Option<Vec<Arc<Pair>>>, String> {
        let req = &pair.req;
        let (Some(number), Some(lsid)) = (req.transaction, req.lsid.as_ref()) else {
            return Err("a transaction statement without a session".into());
        };
        match &*req.command {
            "abortTransaction" => {
                if let Some(t) = self.sessions.get_mut(lsid) {
                    if t.number == number && !t.committed {
                        self.bytes -= t.statements.iter().map(|p| p.size()).sum::<usize>();
                        self.sessions.remove(lsid);
                    }
                }
                Ok(None)
            }
            "commitTransaction" => {
                let Some(t) = self.sessions.get_mut(lsid) else {
                    return Err("a transaction committed whose start the shadow did not see".into());
                };
                if t.number == number && t.committed {
                    // The commit sent again (a retry): applied once already.
                    return Ok(None);
                }
                if t.number != number || !t.whole {
                    return Err("a transaction committed whose start the shadow did not see".into());
                }
                t.committed = true;
                let statements = std::mem::take(&mut t.statements);
                self.bytes -= statements.iter().map(|p| p.size()).sum::<usize>();
                Ok(Some(statements))
            }
            _ => {
                let size = pair.size();
                if size > room {
                    return Err("the write queue is full (--write-queue-mb)".into());
                }
                let starts = super::txn::starts_transaction(&req.msg);
                let fresh = match self.sessions.get(lsid) {
                    Some(t) => t.number != number,
                    None => true,
                };
                if fresh {
                    if !self.sessions.contains_key(lsid) && self.sessions.len() >= MAX_SESSIONS {
                        self.sessions.retain(|_, t| !t.committed);
                        if self.sessions.len() >= MAX_SESSIONS {
                            return Err("too many transactions open at once".into());
                        }
                    }
                    if let Some(old) = self.sessions.remove(lsid) {
                        // A new transaction on the session ends the one before it.
                        self.bytes -= old.statements.iter().map(|p| p.size()).sum::<usize>();
                    }
                    self.sessions.insert(
                        lsid.clone(),
                        Txn {
                            number,
                            statements: Vec::new(),
                            whole: starts,
                            committed: false,
                        },
                    );
                }
                let t = self.sessions.get_mut(lsid).expect("just inserted");
                if t.committed {
                    return Err("a statement after its transaction's commit".into());
                }
                if t.whole {
                    t.statements.push(pair.clone());
                    self.bytes += size;
                }
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::request::understand::understand;
    use crate::shadow::stats::ShapeKey;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::{rawdoc, RawDocumentBuf};

    fn item(body: RawDocumentBuf) -> Arc<Pair> {
        let wire = bytes::Bytes::from(OpMsg::with_body(body, MsgFlags::empty()).encode(7, 0));
        let req = understand(1, 0, &wire).expect("understood");
        Arc::new(Pair {
            conn_id: 1,
            req,
            key: ShapeKey {
                text: String::new(),
                command: String::new(),
                namespace: String::new(),
            },
            production: bytes::Bytes::from_static(b"reply"),
            production_ns: 1,
            answered_ns: 1,
            after_writes: 0,
            unordered: false,
            opens_cursor: None,
        })
    }

    fn lsid(k: u8) -> RawDocumentBuf {
        rawdoc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![k; 16] }}
    }

    fn statement(k: u8, n: i64, start: bool, command: &str) -> Arc<Pair> {
        let lsid = lsid(k);
        item(match (command, start) {
            ("find", true) => rawdoc! {"find": "c", "filter": {}, "lsid": lsid, "txnNumber": n,
            "autocommit": false, "startTransaction": true, "$db": "d"},
            (_, true) => rawdoc! {"insert": "c", "documents": [{"a": 1}], "lsid": lsid,
            "txnNumber": n, "autocommit": false, "startTransaction": true, "$db": "d"},
            _ => rawdoc! {"insert": "c", "documents": [{"a": 1}], "lsid": lsid, "txnNumber": n,
            "autocommit": false, "$db": "d"},
        })
    }

    fn end(k: u8, n: i64, command: &str) -> Arc<Pair> {
        let lsid = lsid(k);
        item(match command {
            "commitTransaction" => rawdoc! {"commitTransaction": 1, "lsid": lsid, "txnNumber": n,
            "autocommit": false, "$db": "admin"},
            _ => rawdoc! {"abortTransaction": 1, "lsid": lsid, "txnNumber": n,
            "autocommit": false, "$db": "admin"},
        })
    }

    #[test]
    fn a_transaction_is_held_until_its_commit_then_queued_whole() {
        let mut open = OpenTransactions::default();
        assert!(open
            .hold(&statement(1, 5, true, "find"), 1 << 20)
            .unwrap()
            .is_none());
        assert!(open
            .hold(&statement(1, 5, false, "insert"), 1 << 20)
            .unwrap()
            .is_none());
        // Another session's transaction, interleaved, aborted: forgotten.
        assert!(open
            .hold(&statement(2, 1, true, "insert"), 1 << 20)
            .unwrap()
            .is_none());
        assert!(open.bytes > 0);
        assert!(open
            .hold(&end(2, 1, "abortTransaction"), 1 << 20)
            .unwrap()
            .is_none());
        let whole = open
            .hold(&end(1, 5, "commitTransaction"), 1 << 20)
            .unwrap()
            .unwrap();
        let commands: Vec<&str> = whole.iter().map(|p| &*p.req.command).collect();
        assert_eq!(commands, ["find", "insert"]);
        assert_eq!(open.bytes, 0);
        // The commit sent again is not a second transaction.
        assert!(open
            .hold(&end(1, 5, "commitTransaction"), 1 << 20)
            .unwrap()
            .is_none());
        // The session's next transaction.
        assert!(open
            .hold(&statement(1, 6, true, "insert"), 1 << 20)
            .unwrap()
            .is_none());
        let next = open
            .hold(&end(1, 6, "commitTransaction"), 1 << 20)
            .unwrap()
            .unwrap();
        assert_eq!(next.len(), 1);
    }

    #[test]
    fn a_transaction_begun_before_the_shadow_cannot_be_committed_but_may_abort() {
        let mut open = OpenTransactions::default();
        assert!(open
            .hold(&statement(1, 3, false, "insert"), 1 << 20)
            .unwrap()
            .is_none());
        assert_eq!(open.bytes, 0, "a part of a transaction is not held");
        let err = open
            .hold(&end(1, 3, "commitTransaction"), 1 << 20)
            .unwrap_err();
        assert!(err.contains("did not see"), "{err}");
        assert!(open
            .hold(&statement(2, 3, false, "insert"), 1 << 20)
            .unwrap()
            .is_none());
        assert!(open
            .hold(&end(2, 3, "abortTransaction"), 1 << 20)
            .unwrap()
            .is_none());
        assert!(open.hold(&end(4, 1, "commitTransaction"), 1 << 20).is_err());
    }

    #[test]
    fn statements_beyond_the_room_left_are_refused() {
        let mut open = OpenTransactions::default();
        let err = open.hold(&statement(1, 1, true, "insert"), 10).unwrap_err();
        assert!(err.contains("--write-queue-mb"), "{err}");
    }
}
