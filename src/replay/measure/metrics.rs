//! What a replay measures: latency histograms per command and per namespace, a per-second timeline,
//! schedule lag, and divergences from the recorded replies. One lock, held for a few hundred ns per
//! operation; every figure is kept in nanoseconds. The timeline's seconds are wall-clock seconds,
//! so the timelines of shards that ran together line up.

use super::buckets::{BucketTimeline, Buckets};
use super::hdr;
use super::knee::Bucket;
use super::sample::Sample;
use super::shapes::ReplayedShapes;
use super::step_phases::ReplayPhases;
use super::timeline::Timeline;
pub use super::timeline::{coarse_histogram, SecondReport};
use crate::figures::summary::{new_ns_histogram, CommandSummary, LatencySummary};
use crate::replay::names::Name;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Examples kept per command in the divergence report.
pub const DIVERGENCE_EXAMPLES: usize = 5;

struct Stat {
    count: u64,
    errors: u64,
    latency: Histogram<u64>,
}

impl Stat {
    fn new(fine: bool) -> Stat {
        Stat {
            count: 0,
            errors: 0,
            latency: if fine {
                new_ns_histogram()
            } else {
                coarse_histogram()
            },
        }
    }

    fn add(&mut self, latency_ns: Option<u64>, error: bool) {
        self.count += 1;
        self.errors += error as u64;
        if let Some(ns) = latency_ns {
            self.latency.saturating_record(ns.max(100));
        }
    }

    fn summary(&self, wall_s: f64) -> CommandSummary {
        let latency = LatencySummary::from_ns_histogram(&self.latency);
        CommandSummary::of(self.count, self.errors, wall_s, latency)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DivergenceReport {
    pub count: u64,
    /// How often each field differed.
    pub fields: BTreeMap<String, u64>,
    pub examples: Vec<serde_json::Value>,
}

impl DivergenceReport {
    /// Several runs' divergences added up per command; the examples of the first runs kept, up
    /// to [`DIVERGENCE_EXAMPLES`].
    pub fn merge_map<'a>(
        parts: impl IntoIterator<Item = &'a BTreeMap<String, DivergenceReport>>,
    ) -> BTreeMap<String, DivergenceReport> {
        let mut out: BTreeMap<String, DivergenceReport> = BTreeMap::new();
        for (cmd, d) in parts.into_iter().flatten() {
            let e = out.entry(cmd.clone()).or_default();
            e.count += d.count;
            for (f, n) in &d.fields {
                *e.fields.entry(f.clone()).or_default() += n;
            }
            let room = DIVERGENCE_EXAMPLES.saturating_sub(e.examples.len());
            e.examples.extend(d.examples.iter().take(room).cloned());
        }
        out
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LagReport {
    /// Send time minus intended send time.
    pub latency: LatencySummary,
    /// Operations sent more than 1 ms / 100 ms after their intended time.
    pub behind_1ms: u64,
    pub behind_100ms: u64,
    /// The lag of the operations their lane reached before their intended time: what the pacing
    /// clock and the way to the socket added, the replayer's own lateness.
    #[serde(default)]
    pub clock: LatencySummary,
    /// Operations their lane reached only after their intended time, held by earlier replies on
    /// its connection, the order's rules or an open-loop backlog: their lag is not the clock's.
    #[serde(default)]
    pub held: u64,
    /// Open loop: the latency counted from the actual send (the server's own), where the
    /// summary counts from the intended send time; the two differ by the lag. Empty in closed
    /// loop.
    #[serde(default)]
    pub from_send: LatencySummary,
}

/// The summed lag histograms of several runs, for [`LagReport::merge`].
pub struct LagHistograms<'a> {
    pub lag: Option<&'a Histogram<u64>>,
    pub clock: Option<&'a Histogram<u64>>,
    pub from_send: Option<&'a Histogram<u64>>,
}

impl LagReport {
    /// Several runs' lag: percentiles from their summed histograms, counts added up.
    pub fn merge(parts: &[&LagReport], summed: LagHistograms<'_>) -> LagReport {
        let of = |h: Option<&Histogram<u64>>| {
            h.map(LatencySummary::from_ns_histogram).unwrap_or_default()
        };
        let count = |f: fn(&LagReport) -> u64| parts.iter().map(|l| f(l)).sum();
        LagReport {
            latency: of(summed.lag),
            behind_1ms: count(|l| l.behind_1ms),
            behind_100ms: count(|l| l.behind_100ms),
            clock: of(summed.clock),
            held: count(|l| l.held),
            from_send: of(summed.from_send),
        }
    }
}

/// The histograms behind the report's percentiles, serialized ([`hdr`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct HistogramsReport {
    pub format: String,
    pub overall: String,
    pub per_command: BTreeMap<String, String>,
    pub per_namespace: BTreeMap<String, String>,
    pub lag: String,
    /// The lag of the operations their lane reached in time ([`LagReport::clock`]).
    pub clock_lag: String,
    /// Open loop: the latency from the actual send ([`LagReport::from_send`]).
    pub from_send: String,
    /// Per query shape, by hash (`other` past the cap): the latency of its own requests.
    pub per_shape: BTreeMap<String, String>,
}

pub struct Metrics {
    start: Instant,
    /// The wall clock at `start`: whole Unix seconds and nanoseconds into that second.
    start_unix_s: u64,
    start_subsec_ns: u64,
    overall: Stat,
    /// Looked up for every reply (foldhash: the names come from the capture, not a hostile peer).
    per_command: HashMap<Name, Stat, foldhash::fast::RandomState>,
    per_namespace: HashMap<Name, Stat, foldhash::fast::RandomState>,
    timeline: Timeline,
    buckets: Buckets,
    lag: Histogram<u64>,
    clock_lag: Histogram<u64>,
    from_send: Histogram<u64>,
    behind_1ms: u64,
    behind_100ms: u64,
    held: u64,
    divergences: BTreeMap<String, DivergenceReport>,
    /// Requests sent with moreToCome: no reply, so no latency.
    pub unacknowledged: u64,
    /// The replay cut at the capture's step markers.
    pub phases: ReplayPhases,
    /// Figures per query shape.
    pub shapes: ReplayedShapes,
    /// `--metrics`: the same samples as live figures for a scrape.
    pub live: Option<Arc<super::live::LiveMetrics>>,
    /// Errors by code and the slowest requests.
    pub why: super::why::Why,
}

impl Metrics {
    pub fn new(start: Instant) -> Metrics {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Metrics {
            start,
            start_unix_s: wall.as_secs(),
            start_subsec_ns: wall.subsec_nanos() as u64,
            overall: Stat::new(true),
            per_command: HashMap::default(),
            per_namespace: HashMap::default(),
            timeline: Timeline::new(wall.as_secs(), wall.subsec_nanos() as u64),
            buckets: Buckets::new(wall.as_nanos() as u64),
            lag: coarse_histogram(),
            clock_lag: coarse_histogram(),
            from_send: coarse_histogram(),
            behind_1ms: 0,
            behind_100ms: 0,
            held: 0,
            divergences: BTreeMap::new(),
            unacknowledged: 0,
            phases: ReplayPhases::new(start),
            shapes: ReplayedShapes::default(),
            live: None,
            why: super::why::Why::default(),
        }
    }

    /// The same metrics, keeping errors and the slowest requests as `why` says.
    pub fn with_why(self, why: super::why::Why) -> Metrics {
        Metrics { why, ..self }
    }

    pub fn record(&mut self, s: Sample<'_>) {
        if let Some(live) = &self.live {
            live.record(&s);
        }
        self.overall.add(s.latency_ns, s.error);
        self.phases.record(s.done, s.latency_ns, s.error);
        if let Some(shape) = &s.shape {
            self.shapes.record(shape, s.latency_ns, s.error);
        }
        match self.per_command.get_mut(s.command) {
            Some(st) => st.add(s.latency_ns, s.error),
            None => {
                let mut st = Stat::new(true);
                st.add(s.latency_ns, s.error);
                self.per_command.insert(s.command.clone(), st);
            }
        }
        match self.per_namespace.get_mut(s.namespace) {
            Some(st) => st.add(s.latency_ns, s.error),
            None => {
                let mut st = Stat::new(false);
                st.add(s.latency_ns, s.error);
                self.per_namespace.insert(s.namespace.clone(), st);
            }
        }
        if s.latency_ns.is_none() {
            self.unacknowledged += 1;
        }
        self.lag.saturating_record(s.lag_ns.max(100));
        if s.held {
            self.held += 1;
        } else {
            self.clock_lag.saturating_record(s.lag_ns.max(100));
        }
        if let Some(ns) = s.from_send_ns {
            self.from_send.saturating_record(ns.max(100));
        }
        self.behind_1ms += (s.lag_ns > 1_000_000) as u64;
        self.behind_100ms += (s.lag_ns > 100_000_000) as u64;
        let since_ns = s.done.saturating_duration_since(self.start).as_nanos() as u64;
        self.buckets.record(since_ns, s.latency_ns, s.error);
        self.timeline.record(since_ns, &s);
    }

    pub fn diverged(
        &mut self,
        command: &str,
        fields: &[&'static str],
        example: impl FnOnce() -> serde_json::Value,
    ) {
        let d = self.divergences.entry(command.to_owned()).or_default();
        d.count += 1;
        for f in fields {
            *d.fields.entry((*f).to_owned()).or_default() += 1;
        }
        if d.examples.len() < DIVERGENCE_EXAMPLES {
            d.examples.push(example());
        }
    }

    pub fn ops(&self) -> u64 {
        self.overall.count
    }

    pub fn overall(&self, wall_s: f64) -> CommandSummary {
        self.overall.summary(wall_s)
    }

    pub fn per_command(&self, wall_s: f64) -> BTreeMap<String, CommandSummary> {
        self.per_command
            .iter()
            .map(|(k, v)| (k.to_string(), v.summary(wall_s)))
            .collect()
    }

    pub fn per_namespace(&self, wall_s: f64) -> BTreeMap<String, CommandSummary> {
        self.per_namespace
            .iter()
            .map(|(k, v)| (k.to_string(), v.summary(wall_s)))
            .collect()
    }

    pub fn timeline(&self) -> Vec<SecondReport> {
        self.timeline.report()
    }

    /// The timeline in buckets sized for the run's length.
    pub fn bucket_timeline(&self) -> BucketTimeline {
        self.buckets.report()
    }

    /// The wall clock at the start, in Unix seconds.
    pub fn started_at_unix_s(&self) -> f64 {
        self.start_unix_s as f64 + self.start_subsec_ns as f64 / 1e9
    }

    /// The timeline's seconds, for the knee.
    pub fn buckets(&self) -> Vec<Bucket<'_>> {
        self.timeline.buckets()
    }

    /// In an open-loop run (`open_loop`), the timeline's seconds kept per command too, for the
    /// knee (its baselines, and the server's time against them).
    pub fn with_command_seconds(mut self, open_loop: bool) -> Metrics {
        if open_loop {
            self.timeline = self.timeline.per_command();
        }
        self
    }

    pub fn histograms(&self) -> HistogramsReport {
        let all = |m: &HashMap<Name, Stat, foldhash::fast::RandomState>| {
            m.iter()
                .map(|(k, v)| (k.to_string(), hdr::encode(&v.latency)))
                .collect()
        };
        HistogramsReport {
            format: hdr::FORMAT.into(),
            overall: hdr::encode(&self.overall.latency),
            per_command: all(&self.per_command),
            per_namespace: all(&self.per_namespace),
            lag: hdr::encode(&self.lag),
            clock_lag: hdr::encode(&self.clock_lag),
            from_send: hdr::encode(&self.from_send),
            per_shape: BTreeMap::new(),
        }
    }

    pub fn lag(&self) -> LagReport {
        LagReport {
            latency: LatencySummary::from_ns_histogram(&self.lag),
            behind_1ms: self.behind_1ms,
            behind_100ms: self.behind_100ms,
            clock: LatencySummary::from_ns_histogram(&self.clock_lag),
            held: self.held,
            from_send: LatencySummary::from_ns_histogram(&self.from_send),
        }
    }

    pub fn divergences(&self) -> BTreeMap<String, DivergenceReport> {
        self.divergences.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample<'a>(cmd: &'a Name, start: Instant, at_ms: u64, latency_us: u64) -> Sample<'a> {
        Sample {
            command: cmd,
            namespace: cmd,
            latency_ns: Some(latency_us * 1000),
            error: false,
            code: None,
            lag_ns: 0,
            held: false,
            from_send_ns: None,
            done: start + Duration::from_millis(at_ms),
            shape: None,
        }
    }

    #[test]
    fn finished_seconds_are_packed_and_report_the_same() {
        let cmd = Name::from("find");
        let start = Instant::now();
        let mut m = Metrics::new(start);
        // 300 seconds, 50 operations each, at 100 + second µs.
        for sec in 0..300u64 {
            for i in 0..50 {
                m.record(sample(&cmd, start, sec * 1000 + i * 19, 100 + sec));
            }
        }
        let live = m.timeline.live_seconds();
        assert!(live <= 4, "{live} seconds still live");
        // A late operation reopens its second, and is counted.
        m.record(sample(&cmd, start, 5_500, 5_000));
        let timeline = m.timeline();
        assert!(timeline.len() >= 300);
        let t = timeline.iter().find(|t| t.p50_us >= 150.0).unwrap();
        assert!((t.p50_us - (100.0 + t.second as f64)).abs() <= 2.0, "{t:?}");
        let late = timeline.iter().find(|t| t.ops == 51).expect("the late one");
        assert!(late.max_us >= 4_900.0, "{late:?}");
        // What the report carries for a packed second decodes to the same histogram.
        let h = hdr::decode(&timeline[100].hdr).unwrap();
        assert_eq!(h.len(), 50);
        // The knee's view of the seconds sees the packed ones too.
        assert_eq!(
            m.buckets().iter().map(|b| b.latency.len()).sum::<u64>(),
            15_001
        );
    }
}
