//! Faults injected while recording (`record --fault`, docs/faults.md), counted from a capture's
//! `fault` records (kind 11): what `inspect`, `analyze` and `replay` say of a faulted capture, so
//! that its errors, delays and closes are never taken for the server's or the application's.

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
}

impl FaultsInjected {
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
                    name: e.name,
                    action: e.action,
                    ..FaultCount::default()
                });
                self.rules.len() - 1
            }
            None => self.rules.len() - 1,
        };
        self.rules[at].count += 1;
        self.rules[at].forwarded += u64::from(e.forwarded);
    }

    /// `faults were injected: 12 (rule stepdown: error 10; rule 1: close_after 2)`.
    pub fn text(&self) -> String {
        let rows: Vec<String> = self
            .rules
            .iter()
            .map(|r| format!("rule {}: {} {}", r.name, r.action, r.count))
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
            };
            f.add(&Record::json(FAULT, 3, 1, &e));
        }
        f.add(&Record::new(FAULT, 3, 1, &b"{"[..]));
        assert_eq!(f.total, 4);
        assert_eq!((f.rules[0].count, f.rules[0].forwarded), (2, 0));
        assert_eq!((f.rules[1].count, f.rules[1].forwarded), (1, 1));
        assert_eq!(
            f.text(),
            "faults were injected: 4 by record --fault (rule stepdown: error 2; rule 1: close_after 1)"
        );
    }
}
