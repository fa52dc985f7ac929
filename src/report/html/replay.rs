//! `mongotape replay --html`: the replay report (`replay::report`) as one self-contained page: the
//! summary's charts (throughput and latency per command), the
//! per-second timeline and the phases.

use super::{summary, LineChart, Page};
use crate::replay::report::ReplayReport;

pub fn render_html(r: &ReplayReport) -> String {
    let s = &r.summary;
    let mut page = Page::new(&format!("mongotape replay: {}", s.label))
        .subtitle(&format!(
            "{} replayed against {} · {} · {} connection(s), {} pass(es), recorded span {:.3}s",
            r.capture,
            r.target,
            r.options.pacing,
            r.connections_opened,
            r.iterations,
            r.recorded_span_s
        ))
        .section("Summary");
    if let Some(e) = &r.error {
        page = page.paragraph(&format!("The replay ended early: {e}"));
    }
    if let Some(e) = &r.capture_error {
        page = page.paragraph(&format!("The capture could be read only in part: {e}"));
    }
    let diverged: u64 = r.divergences.values().map(|d| d.count).sum();
    if diverged > 0 {
        page = page.paragraph(&format!(
            "{diverged} live replies differed from the recorded ones (see divergences in the JSON report)."
        ));
    }
    page = summary::summary_section(page, s);
    let tl = &r.timeline;
    let series = |f: fn(&crate::replay::measure::metrics::SecondReport) -> f64, busy: bool| {
        tl.iter()
            .filter(|p| !busy || p.ops > 0)
            .map(|p| (p.second as f64, f(p)))
            .collect::<Vec<_>>()
    };
    page = page
        .section("Over time")
        .line_chart(
            LineChart::new(
                "Throughput: operations per second",
                "seconds into the replay",
                "ops/s",
            )
            .series("ops/s", series(|p| p.ops as f64, false))
            .series("errors/s", series(|p| p.errors as f64, false)),
        )
        .line_chart(
            LineChart::new("Latency per second", "seconds into the replay", "µs")
                .note("Operations are counted in the second their reply arrived.")
                .series("p50", series(|p| p.p50_us, true))
                .series("p99", series(|p| p.p99_us, true))
                .series("max", series(|p| p.max_us, true)),
        );
    page = super::phases::section(
        page,
        &r.phases,
        "The replay cut at the capture's step markers (a ping with comment mongotape:step:NAME, \
         not sent again): each phase runs from the first replay connection reaching its marker to \
         the first reaching the next one; an operation counts in the phase its reply arrived in.",
    );
    let skipped: Vec<Vec<String>> = r
        .skipped
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| vec![k.clone(), n.to_string()])
        .collect();
    if !skipped.is_empty() {
        page = page
            .section("Not replayed")
            .table(&["why", "requests"], &skipped);
    }
    page.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::measure::metrics::SecondReport;
    use crate::report::phases::PhaseReport;

    #[test]
    fn a_report_draws_its_summary_timeline_and_phases() {
        let mut r = ReplayReport::default();
        r.summary.label = "<x>".into();
        let mut insert = crate::report::summary::CommandSummary {
            count: 20,
            ..Default::default()
        };
        insert.latency.count = 20;
        r.summary.per_command.insert("insert".into(), insert);
        r.timeline = (0..3)
            .map(|i| SecondReport {
                second: i,
                ops: 10 * i as u64,
                errors: 0,
                p50_us: 100.0,
                p99_us: 200.0,
                max_us: 300.0,
                max_lag_us: 0.0,
                ..SecondReport::default()
            })
            .collect();
        let html = render_html(&r);
        assert_eq!(html.matches("<svg class=\"chart").count(), 4);
        assert!(!html.contains("<x>"));
        r.phases.push(PhaseReport {
            name: "insert".into(),
            wall_s: 1.0,
            ops: 5,
            ..Default::default()
        });
        let html = render_html(&r);
        assert_eq!(
            html.matches("<svg class=\"chart").count(),
            5,
            "no latency: no latency chart"
        );
        assert!(html.contains("Wall time per phase"));
    }
}
