//! An open-loop replay (`--rate`, a ramp) against its schedule: per second, the rate intended and
//! the rate achieved, how late requests went out, and the knee marked on both charts with its
//! sentence ([`crate::replay::measure::knee`]).

use crate::figures::units;
use crate::replay::measure::metrics::SecondReport;
use crate::replay::report::ReplayReport;
use crate::report::html::{LineChart, Page};

pub(super) fn section(page: Page, r: &ReplayReport) -> Page {
    let Some(open) = &r.options.open_loop else {
        return page;
    };
    let pacing = open.pacing();
    let duration_s = r.options.duration_s.unwrap_or(r.summary.wall_s);
    // Each second at its middle, in seconds from the schedule's start; the partial first and
    // last seconds left out (their operations are a fraction of a second's).
    let seconds: Vec<(f64, &SecondReport)> = r
        .timeline
        .iter()
        .map(|s| (s.unix_s as f64 - r.started_at_unix_s + 0.5, s))
        .filter(|(t, _)| *t >= 0.5 && *t <= duration_s - 0.5)
        .collect();
    if seconds.is_empty() {
        return page;
    }
    let intended: Vec<(f64, f64)> = seconds
        .iter()
        .map(|(t, _)| (*t, pacing.rate_at(*t).unwrap_or(f64::NAN)))
        .collect();
    let achieved: Vec<(f64, f64)> = seconds.iter().map(|(t, s)| (*t, s.ops as f64)).collect();
    let lag: Vec<(f64, f64)> = seconds
        .iter()
        .map(|(t, s)| (*t, s.max_lag_us / 1e3))
        .collect();
    let top = |points: &[(f64, f64)]| {
        points
            .iter()
            .map(|p| p.1)
            .filter(|y| y.is_finite())
            .fold(0.0, f64::max)
    };
    let knee_at = r.knee.as_ref().and_then(|k| k.at_s).map(|t| t + 0.5);
    let marker = |y: f64| knee_at.map(|t| vec![(t, 0.0), (t, y)]);
    let mut rates = LineChart::new(
        "Rate intended and achieved",
        "time into the schedule",
        "ops/s",
    )
    .x_unit("s")
    .note("Per whole second of the schedule (at its middle): the rate the schedule asked for, and the operations answered in that second.")
    .series("intended", intended.clone())
    .dashed()
    .series("achieved", achieved.clone());
    let mut late = LineChart::new(
        "Schedule lag: the latest send in each second",
        "time into the schedule",
        "ms",
    )
    .x_unit("s")
    .note("How long after its intended time the latest request of each second went out. A lag that grows is a queue: the server, or the replayer's connections, did not keep up.")
    .series("max lag", lag.clone())
    .color("#e15759");
    if let Some(line) = marker(top(&intended).max(top(&achieved))) {
        rates = rates.series("knee", line).color("#444444").dashed();
    }
    if let Some(line) = marker(top(&lag)) {
        late = late.series("knee", line).color("#444444").dashed();
    }
    let mut page = page.section("Against the schedule");
    if let Some(k) = &r.knee {
        page = page.paragraph(&format!("{}.", k.summary));
    }
    page.paragraph(&whose_lag(r))
        .line_chart(rates)
        .line_chart(late)
}

/// The lag in one sentence: the clock's own, how many requests earlier work held, and the
/// latency from the send beside the table's, which counts from the intended time.
fn whose_lag(r: &ReplayReport) -> String {
    let (lag, clock, from_send) = (&r.lag.latency, &r.lag.clock, &r.lag.from_send);
    let mut out = format!(
        "Schedule lag p50 {}, p99 {}; the clock's own (the requests reached before their time) \
         p50 {}, p99 {}; {} of {} held past their time by earlier replies or the order.",
        units::duration_us(lag.p50_us),
        units::duration_us(lag.p99_us),
        units::duration_us(clock.p50_us),
        units::duration_us(clock.p99_us),
        r.lag.held,
        lag.count,
    );
    if from_send.count > 0 {
        out.push_str(&format!(
            " Latency from the send, the server's own at this pace: p50 {}, p99 {} (the tables \
             count from the intended time).",
            units::duration_us(from_send.p50_us),
            units::duration_us(from_send.p99_us),
        ));
    }
    out
}
