//! Per-command accounting for `mongotape analyze`: requests, replies, errors, bytes and a latency
//! histogram for each command name, capped at a hundred names (the rest under `(other)`) so memory
//! stays bounded whatever the capture sends.

use super::{Category, CommandReport};
use crate::figures::summary::{new_ns_histogram, LatencySummary};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Distinct command names tracked; further names are counted under `(other)`.
pub(super) const MAX_COMMANDS: usize = 100;
pub(super) const OTHER_COMMAND: &str = "(other)";

#[derive(Default)]
pub(super) struct CmdAcc {
    hist: Option<Histogram<u64>>,
    requests: u64,
    replies: u64,
    no_reply: u64,
    errors: u64,
    request_bytes: u64,
    reply_bytes: u64,
}

impl CmdAcc {
    pub(super) fn record(&mut self, latency_ns: u64) {
        let h = self.hist.get_or_insert_with(new_ns_histogram);
        h.saturating_record(latency_ns.max(100));
    }

    pub(super) fn merge(&mut self, o: CmdAcc) {
        self.requests += o.requests;
        self.replies += o.replies;
        self.no_reply += o.no_reply;
        self.errors += o.errors;
        self.request_bytes += o.request_bytes;
        self.reply_bytes += o.reply_bytes;
    }
}

#[derive(Default)]
pub(super) struct Commands(BTreeMap<String, CmdAcc>);

impl Commands {
    pub(super) fn entry(&mut self, name: &str) -> &mut CmdAcc {
        let key = if self.0.len() >= MAX_COMMANDS && !self.0.contains_key(name) {
            OTHER_COMMAND
        } else {
            name
        };
        self.0.entry(key.to_owned()).or_default()
    }

    /// `workload`: name each command's category (on the other connections every command is
    /// monitoring or handshake, whatever its name).
    pub(super) fn reports(self, workload: bool) -> Vec<CommandReport> {
        let mut out: Vec<CommandReport> = self
            .0
            .into_iter()
            .map(|(command, acc)| {
                let (latency, distribution) = match &acc.hist {
                    Some(h) => (LatencySummary::from_ns_histogram(h), distribution(h)),
                    None => Default::default(),
                };
                CommandReport {
                    category: workload.then(|| Category::of(&command)),
                    command,
                    requests: acc.requests,
                    replies: acc.replies,
                    no_reply_expected: acc.no_reply,
                    errors: acc.errors,
                    request_bytes: acc.request_bytes,
                    reply_bytes: acc.reply_bytes,
                    latency,
                    distribution,
                }
            })
            .collect();
        out.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.command.cmp(&b.command)));
        out
    }
}

/// `[upper bound µs, share %]` in buckets a factor √2 apart, from the first non-empty one.
fn distribution(h: &Histogram<u64>) -> Vec<[f64; 2]> {
    let total = h.len();
    if total == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for v in h.iter_log(1_000, std::f64::consts::SQRT_2) {
        let n = v.count_since_last_iteration();
        if n == 0 && out.is_empty() {
            continue;
        }
        out.push([
            v.value_iterated_to() as f64 / 1e3,
            n as f64 * 100.0 / total as f64,
        ]);
        if out.len() > 200 {
            break;
        }
    }
    out
}

pub(super) fn count_request(acc: &mut CmdAcc, bytes: u64, expects_reply: bool) {
    acc.requests += 1;
    acc.request_bytes += bytes;
    if !expects_reply {
        acc.no_reply += 1;
    }
}

pub(super) fn count_reply(acc: &mut CmdAcc, bytes: u64, error: bool) {
    acc.replies += 1;
    acc.reply_bytes += bytes;
    if error {
        acc.errors += 1;
    }
}
