//! Transactions, kept whole or not at all. A statement of a multi-document transaction
//! (`autocommit: false`, keyed by `lsid` and `txnNumber`) is held until its commit or abort
//! decides the transaction's fate; the slicer holds its records back meanwhile.

use super::bounded::Bounded;
use super::summary::Reason;
use std::collections::HashMap;

/// Transactions decided and still remembered (a retried commit or a late reply finds its fate).
const DECIDED_KEPT: usize = 65_536;

type Key = (Vec<u8>, i64);

#[derive(Default)]
struct Open {
    id: u64,
    /// Why the first statement outside the window was (before --since, after --until).
    outside: Option<Reason>,
    in_window: bool,
    conn_ok: bool,
    conn_left_out: bool,
    /// Some statement passed the message filters.
    matched: bool,
}

impl Open {
    /// Why the transaction is left out, `None` to keep it; `ended` when its commit or abort came.
    fn verdict(&self, ended: bool, otherwise: Reason) -> Option<Reason> {
        if !self.conn_ok {
            return Some(Reason::Connection);
        }
        if self.conn_left_out {
            return Some(Reason::TransactionConnections);
        }
        match (self.in_window, self.outside) {
            (false, Some(r)) => return Some(r),
            (_, Some(_)) => return Some(Reason::TransactionPartial),
            _ => {}
        }
        if !self.matched {
            return Some(Reason::TransactionUnmatched);
        }
        (!ended).then_some(otherwise)
    }
}

/// What one statement of a transaction says about it.
pub struct Statement<'a> {
    pub lsid: &'a [u8],
    pub txn_number: i64,
    pub start: bool,
    /// commitTransaction or abortTransaction.
    pub end: bool,
    /// Before --since or after --until.
    pub window: Option<Reason>,
    /// Its connection passes the connection filters.
    pub conn_ok: bool,
    pub matched: bool,
}

#[derive(Default)]
pub struct Txns {
    open: HashMap<Key, Open>,
    by_key: Option<Bounded<Key, u64>>,
    /// Decided transactions: `None` kept, else the reason they were dropped.
    decided: Option<Bounded<u64, Option<Reason>>>,
    open_ids: HashMap<u64, Key>,
    next_id: u64,
    pub kept: u64,
    pub dropped: u64,
}

/// A statement's fate: its transaction, or left out at once.
pub enum Verdict {
    Txn(u64),
    Drop(Reason),
}

impl Txns {
    fn decided(&mut self) -> &mut Bounded<u64, Option<Reason>> {
        self.decided
            .get_or_insert_with(|| Bounded::new(DECIDED_KEPT))
    }

    fn by_key(&mut self) -> &mut Bounded<Key, u64> {
        self.by_key
            .get_or_insert_with(|| Bounded::new(DECIDED_KEPT))
    }

    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    /// Transaction `id`'s fate: `None` while it is undecided, `Ok` kept, `Err` dropped and why.
    pub fn fate(&self, id: u64) -> Option<Result<(), Reason>> {
        if let Some(d) = self.decided.as_ref().and_then(|d| d.get(&id)) {
            return Some(d.map_or(Ok(()), Err));
        }
        match self.open_ids.contains_key(&id) {
            true => None,
            // Decided so long ago that it was forgotten.
            false => Some(Err(Reason::TransactionPartial)),
        }
    }

    /// Books one statement.
    pub fn statement(&mut self, s: Statement<'_>) -> Verdict {
        let key: Key = (s.lsid.to_vec(), s.txn_number);
        if s.start {
            if self.open.contains_key(&key) {
                // Started again without an end: the first attempt never finished.
                self.decide(&key, false, Reason::TransactionUnfinished);
            }
            let id = self.next_id;
            self.next_id += 1;
            self.open.insert(
                key.clone(),
                Open {
                    id,
                    ..Open::default()
                },
            );
            self.open_ids.insert(id, key.clone());
            self.by_key().insert(key.clone(), id);
        }
        let Some(open) = self.open.get_mut(&key) else {
            // A commit retried after the decision, or a statement whose start the slicer never saw.
            return match self.by_key.as_ref().and_then(|b| b.get(&key)).copied() {
                Some(id) => Verdict::Txn(id),
                None => Verdict::Drop(Reason::TransactionPartial),
            };
        };
        let id = open.id;
        match s.window {
            Some(r) => {
                open.outside.get_or_insert(r);
            }
            None => open.in_window = true,
        }
        open.conn_ok |= s.conn_ok;
        open.conn_left_out |= !s.conn_ok;
        open.matched |= s.matched;
        if s.end {
            self.decide(&key, true, Reason::TransactionUnfinished);
        }
        Verdict::Txn(id)
    }

    /// Decides the open transaction `key`; one not `ended` is left out for `otherwise` unless
    /// another reason comes first.
    fn decide(&mut self, key: &Key, ended: bool, otherwise: Reason) {
        let Some(open) = self.open.remove(key) else {
            return;
        };
        let reason = open.verdict(ended, otherwise);
        self.open_ids.remove(&open.id);
        match reason {
            None => self.kept += 1,
            Some(_) => self.dropped += 1,
        }
        self.decided().insert(open.id, reason);
    }

    /// Decides every open transaction as dropped for `reason` (the end of the capture, or of the
    /// window).
    pub fn drop_open(&mut self, reason: Reason) {
        let keys: Vec<Key> = self.open.keys().cloned().collect();
        for key in keys {
            self.decide(&key, false, reason);
        }
    }

    /// Drops open transaction `id` (it held too much back).
    pub fn drop_id(&mut self, id: u64, reason: Reason) {
        if let Some(key) = self.open_ids.get(&id).cloned() {
            self.decide(&key, false, reason);
        }
    }
}
