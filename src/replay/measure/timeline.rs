//! The per-second timeline of a replay: wall-clock seconds (so the timelines of shards that ran
//! together line up), each with its operations, errors, latency, schedule lag and the time its
//! replies took from send to reply (`busy`: the connections' time waiting on the server). In an
//! open-loop run each second also keeps its latency per command, for the knee ([`super::knee`]):
//! at most [`MAX_COMMANDS`] commands over the first [`MAX_COMMAND_SECONDS`], in coarse histograms.

use super::hdr;
use super::knee::{command_histogram, Bucket, CommandBucket};
use super::sample::Sample;
use crate::replay::names::Name;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Commands whose seconds are kept one by one; a later command counts only in the whole mix.
pub const MAX_COMMANDS: usize = 16;

/// A bound on the timeline's memory: a day of seconds.
const MAX_SECONDS: usize = 86_400;

/// Seconds kept per command: an hour (~200 bytes a command's second once packed: at most ~12 MB).
pub const MAX_COMMAND_SECONDS: usize = 3_600;

/// Seconds behind the newest one that stay live: an operation is counted in the second it
/// finished in, and lanes report a little out of order.
const LIVE_SECONDS: usize = 2;

pub fn coarse_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(100, 3_600_000_000_000, 2).expect("static bounds are valid")
}

/// A second's latencies: a histogram while operations may still land in it, then packed into its
/// serialized form (a few hundred bytes, where the histogram takes ~30 KB), so that a day-long
/// replay's timeline takes megabytes, not gigabytes.
enum Latency {
    Live(Histogram<u64>),
    Packed(String),
}

impl Latency {
    fn histogram(&self) -> Cow<'_, Histogram<u64>> {
        match self {
            Latency::Live(h) => Cow::Borrowed(h),
            // Packed from a histogram of ours: it decodes; an empty one otherwise.
            Latency::Packed(text) => {
                Cow::Owned(hdr::decode(text).unwrap_or_else(|_| coarse_histogram()))
            }
        }
    }

    fn live(&mut self) -> &mut Histogram<u64> {
        if let Latency::Packed(_) = self {
            *self = Latency::Live(self.histogram().into_owned());
        }
        match self {
            Latency::Live(h) => h,
            Latency::Packed(_) => unreachable!("unpacked just above"),
        }
    }

    fn pack(&mut self) {
        if let Latency::Live(h) = self {
            *self = Latency::Packed(hdr::encode(h));
        }
    }

    fn encoded(&self) -> String {
        match self {
            Latency::Live(h) => hdr::encode(h),
            Latency::Packed(text) => text.clone(),
        }
    }
}

/// One command's replies in one second.
struct CommandSecond {
    replies: u64,
    busy_ns: u64,
    latency: Latency,
}

struct Second {
    ops: u64,
    errors: u64,
    latency: Latency,
    max_lag_ns: u64,
    replies: u64,
    busy_ns: u64,
    /// By the command's place in [`Timeline::commands`].
    per_command: Vec<Option<CommandSecond>>,
}

impl Second {
    fn new() -> Second {
        Second {
            ops: 0,
            errors: 0,
            latency: Latency::Live(coarse_histogram()),
            max_lag_ns: 0,
            replies: 0,
            busy_ns: 0,
            per_command: Vec::new(),
        }
    }

    fn pack(&mut self) {
        self.latency.pack();
        for c in self.per_command.iter_mut().flatten() {
            c.latency.pack();
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct SecondReport {
    /// Seconds since the first bucket.
    pub second: usize,
    /// The wall-clock second (Unix time) this bucket covers.
    pub unix_s: u64,
    pub ops: u64,
    pub errors: u64,
    #[schemars(range(min = 0))]
    pub p50_us: f64,
    #[schemars(range(min = 0))]
    pub p99_us: f64,
    #[schemars(range(min = 0))]
    pub max_us: f64,
    #[schemars(range(min = 0))]
    pub max_lag_us: f64,
    /// The second's latency histogram (see [`hdr`]), for exact merging.
    pub hdr: String,
    /// Operations answered, and their time from send to reply summed: the connections' busy time.
    pub replies: u64,
    /// The second's replies' time from send to reply, summed: the connections' busy time.
    #[schemars(range(min = 0))]
    pub busy_us: f64,
    /// Open loop only: the same per command (at most [`MAX_COMMANDS`]), for the knee.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_command: BTreeMap<String, CommandSecondReport>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CommandSecondReport {
    pub replies: u64,
    #[schemars(range(min = 0))]
    pub busy_us: f64,
    #[schemars(range(min = 0))]
    pub p99_us: f64,
    pub hdr: String,
}

/// The per-second timeline as operations finish.
pub struct Timeline {
    start_unix_s: u64,
    start_subsec_ns: u64,
    seconds: Vec<Second>,
    /// Seconds before this one are packed.
    packed: usize,
    /// `Some` when seconds are kept per command: the commands, in the order first seen.
    commands: Option<Vec<Name>>,
}

impl Timeline {
    pub fn new(start_unix_s: u64, start_subsec_ns: u64) -> Timeline {
        Timeline {
            start_unix_s,
            start_subsec_ns,
            seconds: Vec::new(),
            packed: 0,
            commands: None,
        }
    }

    /// Seconds kept per command too (an open-loop run: the knee compares them).
    pub fn per_command(mut self) -> Timeline {
        self.commands = Some(Vec::new());
        self
    }

    /// One operation that finished `since_start_ns` after the start.
    pub fn record(&mut self, since_start_ns: u64, s: &Sample<'_>) {
        let sec = (since_start_ns.saturating_add(self.start_subsec_ns) / 1_000_000_000) as usize;
        if sec >= MAX_SECONDS {
            return;
        }
        if sec >= self.seconds.len() {
            // The seconds now well behind the newest are done: packed.
            let done = sec.saturating_sub(LIVE_SECONDS).min(self.seconds.len());
            if done > self.packed {
                for t in &mut self.seconds[self.packed..done] {
                    t.pack();
                }
                self.packed = done;
            }
        }
        while self.seconds.len() <= sec {
            self.seconds.push(Second::new());
        }
        let command = if sec < MAX_COMMAND_SECONDS {
            self.command_index(s.command)
        } else {
            None
        };
        let t = &mut self.seconds[sec];
        t.ops += 1;
        t.errors += s.error as u64;
        t.max_lag_ns = t.max_lag_ns.max(s.lag_ns);
        let Some(ns) = s.latency_ns else {
            return;
        };
        // A very late operation reopens its packed second; it is packed again later.
        if sec < self.packed {
            self.packed = sec;
        }
        // Open loop: latency counts from the intended send; the send was `lag_ns` after it.
        let busy_ns = ns.saturating_sub(s.lag_ns);
        t.replies += 1;
        t.busy_ns += busy_ns;
        t.latency.live().saturating_record(ns.max(100));
        if let Some(i) = command {
            if t.per_command.len() <= i {
                t.per_command.resize_with(i + 1, || None);
            }
            let c = t.per_command[i].get_or_insert_with(|| CommandSecond {
                replies: 0,
                busy_ns: 0,
                latency: Latency::Live(command_histogram()),
            });
            c.replies += 1;
            c.busy_ns += busy_ns;
            c.latency.live().saturating_record(ns.max(1_000));
        }
    }

    /// The command's place in `commands`, when seconds are kept per command and it has one.
    fn command_index(&mut self, command: &Name) -> Option<usize> {
        let commands = self.commands.as_mut()?;
        match commands.iter().position(|c| c == command) {
            Some(i) => Some(i),
            None if commands.len() < MAX_COMMANDS => {
                commands.push(command.clone());
                Some(commands.len() - 1)
            }
            None => None,
        }
    }

    fn name(&self, i: usize) -> &str {
        self.commands
            .as_ref()
            .and_then(|c| c.get(i))
            .map_or("", |c| c)
    }

    pub fn report(&self) -> Vec<SecondReport> {
        let us = |ns: u64| ns as f64 / 1000.0;
        self.seconds
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let h = t.latency.histogram();
                SecondReport {
                    second: i,
                    unix_s: self.start_unix_s + i as u64,
                    hdr: t.latency.encoded(),
                    ops: t.ops,
                    errors: t.errors,
                    p50_us: us(h.value_at_quantile(0.5)),
                    p99_us: us(h.value_at_quantile(0.99)),
                    max_us: us(h.max()),
                    max_lag_us: us(t.max_lag_ns),
                    replies: t.replies,
                    busy_us: us(t.busy_ns),
                    per_command: t
                        .per_command
                        .iter()
                        .enumerate()
                        .filter_map(|(c, s)| Some((self.name(c).to_owned(), s.as_ref()?)))
                        .map(|(name, c)| {
                            let report = CommandSecondReport {
                                replies: c.replies,
                                busy_us: us(c.busy_ns),
                                p99_us: us(c.latency.histogram().value_at_quantile(0.99)),
                                hdr: c.latency.encoded(),
                            };
                            (name, report)
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// The seconds as the knee reads them.
    pub fn buckets(&self) -> Vec<Bucket<'_>> {
        self.seconds
            .iter()
            .enumerate()
            .map(|(i, t)| Bucket {
                unix_s: self.start_unix_s + i as u64,
                ops: t.ops,
                latency: t.latency.histogram(),
                busy_ns: t.busy_ns,
                max_lag_ns: t.max_lag_ns,
                commands: t
                    .per_command
                    .iter()
                    .enumerate()
                    .filter_map(|(c, s)| {
                        let s = s.as_ref()?;
                        Some(CommandBucket {
                            command: Cow::Borrowed(self.name(c)),
                            replies: s.replies,
                            busy_ns: s.busy_ns,
                            latency: s.latency.histogram(),
                        })
                    })
                    .collect(),
            })
            .collect()
    }

    /// Seconds whose histograms are still live (the rest are packed), for the tests.
    #[cfg(test)]
    pub fn live_seconds(&self) -> usize {
        self.seconds
            .iter()
            .filter(|t| matches!(t.latency, Latency::Live(_)))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn an_open_loop_second_keeps_a_few_commands_and_the_busy_time() {
        let names: Vec<Name> = (0..MAX_COMMANDS + 3)
            .map(|i| Name::Counted(std::sync::Arc::from(format!("c{i}"))))
            .collect();
        let mut t = Timeline::new(1_000, 0).per_command();
        for (i, name) in names.iter().enumerate() {
            t.record(
                500_000_000,
                &Sample {
                    command: name,
                    namespace: name,
                    // 3 ms from the intended send, 1 ms of it late: 2 ms from send to reply.
                    latency_ns: Some(3_000_000),
                    error: false,
                    code: None,
                    lag_ns: 1_000_000 + i as u64,
                    held: false,
                    from_send_ns: None,
                    done: Instant::now(),
                    shape: None,
                },
            );
        }
        let report = t.report();
        assert_eq!(report.len(), 1);
        let s = &report[0];
        assert_eq!(
            (s.ops, s.replies),
            (MAX_COMMANDS as u64 + 3, MAX_COMMANDS as u64 + 3)
        );
        assert!(
            (s.busy_us / s.replies as f64 - 2_000.0).abs() < 1.0,
            "{}",
            s.busy_us
        );
        assert_eq!(
            s.per_command.len(),
            MAX_COMMANDS,
            "the later commands only in the mix"
        );
        let c0 = &s.per_command["c0"];
        assert_eq!(c0.replies, 1);
        assert!((c0.p99_us - 3_000.0).abs() < 200.0, "{}", c0.p99_us);
        let b = t.buckets();
        assert_eq!(b[0].commands.len(), MAX_COMMANDS);
        // A closed-loop run keeps no seconds per command.
        let mut plain = Timeline::new(1_000, 0);
        plain.record(
            0,
            &Sample {
                command: &names[0],
                namespace: &names[0],
                latency_ns: Some(1_000),
                error: false,
                code: None,
                lag_ns: 0,
                held: false,
                from_send_ns: None,
                done: Instant::now(),
                shape: None,
            },
        );
        assert!(plain.report()[0].per_command.is_empty());
    }
}
