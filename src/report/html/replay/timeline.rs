//! The replay page's timelines, in buckets as wide as the run's length calls for (a 0.03 s replay
//! in 100 µs buckets, a ten-minute one in 2 s buckets); a latency line breaks over buckets without
//! a reply, and p99 over buckets of fewer than [`P99_SAMPLES`] replies (there it is the maximum, or
//! next to it: the two lines would be drawn one over the other).

use crate::figures::units;
use crate::replay::measure::buckets::{BucketTimeline, TimelinePoint};
use crate::replay::report::ReplayReport;
use crate::report::html::{LineChart, Page};

/// Replies a bucket needs for its p99 to be drawn: with fewer, the 99th percentile is the largest
/// reply or the one below it.
pub const P99_SAMPLES: u64 = 100;

pub(super) fn section(page: Page, r: &ReplayReport) -> Page {
    let (points, width_ns) = points(r);
    if points.is_empty() {
        return page;
    }
    let per_s = 1e9 / width_ns as f64;
    let note = format!(
        "In buckets of {} ({} points); operations count in the bucket their reply arrived in.",
        units::duration_ns(width_ns as f64),
        points.len()
    );
    let line = |f: &dyn Fn(&TimelinePoint) -> Option<f64>| line(&points, f);
    page.section("Over time")
        .line_chart(
            LineChart::new(
                "Throughput: operations per second",
                "time into the replay",
                "ops/s",
            )
            .x_unit("s")
            .note(&note)
            .series("ops/s", line(&|p| Some(p.ops as f64 * per_s)))
            .series("errors/s", line(&|p| Some(p.errors as f64 * per_s)))
            .color("#e15759")
            .dashed(),
        )
        .line_chart(
            LineChart::new("Latency over time", "time into the replay", "µs")
                .x_unit("s")
                .note(&format!(
                    "{note} A line breaks where a bucket had no reply; p99 is drawn only in \
                     buckets of {P99_SAMPLES} replies or more (in fewer it is the max)."
                ))
                .series("p50", line(&|p| p.p50_us))
                .series(
                    &format!("p99 ({P99_SAMPLES}+ replies)"),
                    line(&|p| p.p99_us.filter(|_| p.samples >= P99_SAMPLES)),
                )
                .series("max", line(&|p| p.max_us))
                .dashed(),
        )
}

/// `(t, f(point))`, not a number where `f` has no value: the line breaks there.
fn line(points: &[TimelinePoint], f: &dyn Fn(&TimelinePoint) -> Option<f64>) -> Vec<(f64, f64)> {
    points
        .iter()
        .map(|p| (p.t_s, f(p).unwrap_or(f64::NAN)))
        .collect()
}

/// The bucketed timeline's points, or the per-second one's for a report without it.
fn points(r: &ReplayReport) -> (Vec<TimelinePoint>, u64) {
    let b: &BucketTimeline = &r.timeline_buckets;
    if !b.buckets.is_empty() {
        return (b.points(), b.chart_width_ns());
    }
    let seconds = r
        .timeline
        .iter()
        .map(|s| {
            let busy = (s.ops > 0).then_some(());
            TimelinePoint {
                t_s: s.second as f64,
                ops: s.ops,
                errors: s.errors,
                // Reports older than `replies` count their operations.
                samples: if s.replies > 0 { s.replies } else { s.ops },
                p50_us: busy.map(|_| s.p50_us),
                p99_us: busy.map(|_| s.p99_us),
                max_us: busy.map(|_| s.max_us),
            }
        })
        .collect();
    (seconds, 1_000_000_000)
}
