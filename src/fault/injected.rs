//! Faults injected while recording (`record --fault`, docs/faults.md), counted from a capture's
//! `fault` records (kind 11): what `inspect`, `analyze` and `replay` say of a faulted capture, so
//! that its errors, delays and closes are never taken for the server's or the application's.

use super::after::{self, FaultOutcomes, FaultsBy};
use super::follow::Follower;
use crate::capture::{FaultEvent, Record};
use serde::{Deserialize, Serialize};

/// Rule and action pairs told apart; more are summed in the last.
const MAX_ROWS: usize = 256;

/// The faults a capture's `fault` records say were injected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FaultsInjected {
    /// Every fault record.
    pub total: u64,
    /// Per rule and action, in the order they first fired.
    pub rules: Vec<FaultCount>,
    /// From `analyze`: what followed the faults, per driver (name and application), in the order
    /// their first fault was concluded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drivers: Vec<FaultsBy>,
    /// From `analyze`: what followed the faults, per connection (the faulted one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<FaultsBy>,
    /// Whether what followed is looked for ([`FaultsInjected::following`]).
    #[serde(skip)]
    #[schemars(skip)]
    follower: Option<Follower>,
}

/// How often one rule fired with one action.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FaultCount {
    /// The rule's index in the proxy's list when it fired.
    pub rule: usize,
    /// The rule's name, or its index as text.
    pub name: String,
    /// `error`, `reply_error`, `close_after`, `close_before`, `delay_request`, `delay_reply`,
    /// `stall` or `write_concern_error`.
    pub action: String,
    pub count: u64,
    /// Requests the fault let through to the server (reply_error, close_after, delays,
    /// write_concern_error): applied even when the client saw an error.
    pub forwarded: u64,
    /// Of the faulted requests with an `lsid` and a `txnNumber` (retryable writes, transaction
    /// statements), those the client sent again with both unchanged: the driver's own retry.
    #[serde(default)]
    pub retried: u64,
    /// The longest time from a fault to its retry, in milliseconds.
    #[serde(default)]
    pub retry_after_ms_max: f64,
    /// Faulted requests with an `lsid` and a `txnNumber` not sent again within 30 s (or by
    /// the capture's end).
    #[serde(default)]
    pub not_retried: u64,
    /// From `analyze`: what the client did after this rule's faults (absent from `inspect` and
    /// `replay`, which do not follow them).
    #[serde(default, skip_serializing_if = "FaultOutcomes::is_empty")]
    pub after: FaultOutcomes,
}

impl FaultsInjected {
    /// Counts that also look for what the client did next (`analyze`: feed it every record
    /// through [`FaultsInjected::follower`], then [`FaultsInjected::finish`]).
    pub fn following() -> FaultsInjected {
        FaultsInjected {
            follower: Some(Follower::default()),
            ..FaultsInjected::default()
        }
    }

    /// The follower that `open`, `close`, `client_metadata`, `request` and `reply` records go
    /// to (`None` unless [`FaultsInjected::following`]).
    pub fn follower(&mut self) -> Option<&mut Follower> {
        self.follower.as_mut()
    }

    /// The faults a capture's summary counted (`capture::summary`): what [`FaultsInjected::add`]
    /// of each of its fault records gives.
    pub fn from_summary(total: u64, rows: &[crate::capture::summary::FaultRow]) -> FaultsInjected {
        FaultsInjected {
            total,
            rules: rows
                .iter()
                .take(MAX_ROWS)
                .map(|r| FaultCount {
                    rule: r.rule,
                    name: r.name.clone(),
                    action: r.action.clone(),
                    count: r.count,
                    forwarded: r.forwarded,
                    ..FaultCount::default()
                })
                .collect(),
            ..FaultsInjected::default()
        }
    }

    /// Books one `fault` record; a payload that does not read is counted in `total` only.
    pub fn add(&mut self, record: &Record) {
        self.total += 1;
        let Ok(e) = record.event::<FaultEvent>() else {
            return;
        };
        let at = self
            .rules
            .iter()
            .position(|r| r.name == e.name && r.action == e.action && r.rule == e.rule);
        let at = match at {
            Some(at) => at,
            None if self.rules.len() < MAX_ROWS => {
                self.rules.push(FaultCount {
                    rule: e.rule,
                    name: e.name.clone(),
                    action: e.action.clone(),
                    ..FaultCount::default()
                });
                self.rules.len() - 1
            }
            None => self.rules.len() - 1,
        };
        self.rules[at].count += 1;
        self.rules[at].forwarded += u64::from(e.forwarded);
        if let Some(f) = &mut self.follower {
            f.fault(at, record, &e);
        }
        self.book();
    }

    /// Books the faults the follower has concluded (call after feeding it a record).
    pub fn book(&mut self) {
        let Some(f) = &mut self.follower else {
            return;
        };
        for done in f.take_done() {
            let s = &done.seen;
            let row = &mut self.rules[done.row];
            if s.had_session && s.write_retried {
                row.retried += 1;
                let ms = s.retry_after_ns as f64 / 1e6;
                row.retry_after_ms_max = row.retry_after_ms_max.max(ms);
            } else if s.had_session {
                row.not_retried += 1;
            }
            row.after.add(s);
            after::book(&mut self.drivers, after::driver_name(&done), s);
            after::book(&mut self.connections, format!("conn {}", done.conn_id), s);
        }
    }

    /// At the capture's end: the faults still followed are concluded.
    pub fn finish(&mut self) {
        if let Some(f) = &mut self.follower {
            f.finish();
        }
        self.book();
    }

    /// The text table of what followed, per rule, driver and connection (empty unless
    /// `analyze` followed the faults).
    pub fn table(&self) -> String {
        if self.rules.iter().all(|r| r.after.faults == 0) {
            return String::new();
        }
        let rules = self
            .rules
            .iter()
            .map(|r| (format!("rule {}: {}", r.name, r.action), &r.after));
        let by = self.drivers.iter().chain(&self.connections);
        after::table(rules.chain(by.map(|b| (b.name.clone(), &b.after))))
    }

    /// `faults were injected: 12 (rule stepdown: error 10; rule 1: close_after 2)`.
    pub fn text(&self) -> String {
        let rows: Vec<String> = self
            .rules
            .iter()
            .map(|r| {
                let mut row = format!("rule {}: {} {}", r.name, r.action, r.count);
                if r.retried > 0 || r.not_retried > 0 {
                    row.push_str(&format!(
                        ", {} retried with the same lsid and txnNumber (within {:.0} ms), {} not retried",
                        r.retried, r.retry_after_ms_max, r.not_retried
                    ));
                }
                row
            })
            .collect();
        format!(
            "faults were injected: {} by record --fault ({})",
            self.total,
            rows.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::FAULT;
    use crate::fault::facts::session_of;
    use crate::wire::{Message, RequestInfo};

    #[test]
    fn counts_per_rule_and_action() {
        let mut f = FaultsInjected::default();
        for (rule, action) in [(0, "error"), (1, "close_after"), (0, "error")] {
            let e = FaultEvent {
                rule,
                name: if rule == 0 {
                    "stepdown".into()
                } else {
                    "1".into()
                },
                action: action.into(),
                conn_id: 3,
                request_id: 7,
                command: "insert".into(),
                ns: "a.b".into(),
                forwarded: action != "error",
                lsid: None,
                txn_number: None,
            };
            f.add(&Record::json(FAULT, 3, 1, &e));
        }
        f.add(&Record::new(FAULT, 3, 1, &b"{"[..]));
        f.finish();
        assert_eq!(f.total, 4);
        assert_eq!((f.rules[0].count, f.rules[0].forwarded), (2, 0));
        assert_eq!((f.rules[1].count, f.rules[1].forwarded), (1, 1));
        assert_eq!(
            f.text(),
            "faults were injected: 4 by record --fault (rule stepdown: error 2; rule 1: close_after 1)"
        );
    }

    #[test]
    fn a_resend_with_the_same_lsid_and_txn_number_is_a_retry() {
        use crate::wire::{MsgFlags, OpMsg};
        let insert = |txn: i64| {
            let body = bson::rawdoc! {
                "insert": "c", "lsid": { "id": 7 }, "txnNumber": txn, "$db": "d"
            };
            OpMsg::with_body(body, MsgFlags::empty()).encode(1, 0)
        };
        let msg = Message::parse(&insert(5)).unwrap();
        let (lsid, txn) = session_of(&RequestInfo::of(&msg)).unwrap();
        let fault = |ts| {
            let e = FaultEvent {
                rule: 0,
                name: "0".into(),
                action: "error".into(),
                conn_id: 1,
                request_id: 1,
                command: "insert".into(),
                ns: "d.c".into(),
                forwarded: false,
                lsid: Some(lsid.clone()),
                txn_number: Some(txn),
            };
            Record::json(FAULT, 1, ts, &e)
        };
        let request =
            |txn, ts| Record::new(crate::capture::RecordKind::Request, 2, ts, insert(txn));
        let mut f = FaultsInjected::following();
        f.add(&fault(1_000_000_000));
        for r in [request(6, 1_100_000_000), request(5, 1_500_000_000)] {
            f.follower().unwrap().request(&r);
        }
        f.add(&fault(2_000_000_000));
        f.finish();
        let row = &f.rules[0];
        assert_eq!((row.count, row.retried, row.not_retried), (2, 1, 1));
        assert_eq!(row.retry_after_ms_max, 500.0);
        assert!(f
            .text()
            .contains("1 retried with the same lsid and txnNumber (within 500 ms)"));
    }
}
