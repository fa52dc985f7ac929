//! `mongotape replay --html` (and `merge --html`): the replay report (`replay::report`) as one
//! self-contained page: the summary's charts, the latency per command replayed and recorded
//! ([`latency`]), per query shape likewise with a table of every shape (`shapes`), an open-loop
//! run against its schedule with its knee ([`schedule`]), the timelines ([`timeline`]), the CPU
//! spent by the server and by the replayer, the
//! divergences with their examples ([`divergences`]), the phases.
//!
//! Layers, bottom up: divergences latency schedule shapes timeline

mod divergences;
mod latency;
mod schedule;
mod shapes;
mod timeline;

use super::{summary, BarChart, Page};
use crate::figures::table::Table;
use crate::figures::units;
use crate::replay::report::ReplayReport;

pub fn render_html(r: &ReplayReport) -> String {
    let s = &r.summary;
    let mut page = Page::new(&format!("mongotape replay: {}", s.label))
        .subtitle(&format!(
            "{} replayed against {} · {} · {} connection(s), {} pass(es), recorded span {}",
            r.capture,
            r.target,
            r.options.pacing,
            r.connections_opened,
            r.iterations,
            units::duration_s(r.recorded_span_s)
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
            "{diverged} live replies differed from the recorded ones: see Divergences below."
        ));
    }
    page = summary::summary_section(page, s);
    if let Some(restore) = &r.restore {
        page = restore_section(page, restore);
    }
    page = schedule::section(page, r);
    page = latency::section(page, r);
    page = shapes::section(page, r);
    page = super::why::sections(page, &r.errors, &r.slowest, r.plans.as_deref());
    page = timeline::section(page, r);
    page = cpu(page, r);
    page = divergences::section(page, r);
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
            .table(&Table::new(["why", "requests"]).with_rows(skipped));
    }
    page.render()
}

/// The server's CPU and the replayer's own, kept apart: the replayer's is mongotape's cost, not
/// the server's.
fn cpu(mut page: Page, r: &ReplayReport) -> Page {
    let server = r.server.cpu_s_per_1k_ops.map(|s| s * 1e3);
    let replayer = r.replayer.cpu_us_per_op;
    if let Some(load) = &r.load {
        page = page
            .section("The machine around the run")
            .paragraph(load.text().trim_end());
    }
    if server.is_none() && replayer.is_none() {
        return page;
    }
    let server_name = match r.server.pid {
        Some(pid) => format!("server (pid {pid})"),
        None => "server".into(),
    };
    let total = |v: Option<f64>| v.map_or("not measured".into(), units::duration_s);
    page.section("CPU: the server's and the replayer's own")
        .facts(&[
            ("server CPU, total", total(r.server.cpu_s)),
            ("server CPU net of its idle rate", total(r.server.cpu_net_s)),
            (
                "server idle rate (before the run)",
                r.server
                    .idle_cpu_cores
                    .map_or("not measured".into(), |c| format!("{:.1}% of a core", c * 100.0)),
            ),
            ("replayer (mongotape) CPU, total", total(r.replayer.cpu_s)),
        ])
        .bar_chart(
            BarChart::new("CPU time per operation", "µs")
                .note("The replayer's CPU is what mongotape itself spent sending and measuring; it is not part of the server's.")
                .categories([server_name, "replayer (mongotape itself)".into()])
                .series_opt("CPU per operation", [server, replayer]),
        )
}

/// `--restore`: every load into the target, then the setup commands applied after each.
fn restore_section(mut page: Page, r: &crate::state::restore_plan::RestoreReport) -> Page {
    let rows = r
        .loads
        .iter()
        .enumerate()
        .map(|(i, l)| {
            vec![
                (i + 1).to_string(),
                l.documents.to_string(),
                l.bytes.to_string(),
                l.indexes.to_string(),
                format!("{:.2}", l.seconds),
                format!("{:.0}", l.docs_per_s),
                format!("{:.1}", l.mb_per_s),
            ]
        })
        .collect();
    page = page
        .section("Restore")
        .paragraph(&format!(
            "The snapshot {} ({}) was loaded into the target before each pass.",
            r.snapshot,
            r.point.as_deref().unwrap_or("point unknown")
        ))
        .table(
            &Table::new([
                "load",
                "documents",
                "bytes",
                "indexes",
                "seconds",
                "docs/s",
                "MB/s",
            ])
            .with_rows(rows),
        );
    for s in &r.setup {
        page = page.paragraph(&format!("Then on {}: {}", s.db, s.body));
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::phases::PhaseReport;
    use crate::figures::summary::new_ns_histogram;
    use crate::replay::measure::buckets::Buckets;
    use crate::replay::measure::hdr;
    use crate::replay::measure::metrics::{DivergenceReport, SecondReport};
    use crate::replay::report::RecordedReport;

    fn report() -> ReplayReport {
        let mut r = ReplayReport::default();
        r.summary.label = "<x>".into();
        let mut insert = crate::figures::summary::CommandSummary {
            count: 20,
            ..Default::default()
        };
        insert.latency.count = 20;
        r.summary.per_command.insert("insert".into(), insert);
        let mut h = new_ns_histogram();
        let mut b = Buckets::new(0);
        for i in 0..20u64 {
            h.record(100_000 + i * 1_000).unwrap();
            // Ten operations, 20 ms of nothing, ten more.
            b.record(i * 1_000_000 + (i / 10) * 20_000_000, Some(100_000), false);
        }
        r.histograms
            .per_command
            .insert("insert".into(), hdr::encode(&h));
        r.recorded = RecordedReport::of(&[("insert".to_string(), h)].into());
        r.timeline_buckets = b.report();
        r
    }

    #[test]
    fn a_report_draws_latency_replayed_and_recorded_timelines_and_divergences() {
        let mut r = report();
        let html = render_html(&r);
        // One small chart for insert, two timelines; throughput and percentiles per command are
        // zero in this report: said, not drawn.
        assert_eq!(html.matches("<svg class=\"chart").count(), 3);
        assert_eq!(html.matches(">0 throughout</p>").count(), 2);
        assert!(html.contains("chart line small"));
        assert!(!html.contains("<x>"));
        assert_eq!(
            html.matches(">command</th>").count(),
            1,
            "one table per command, the recorded latency beside the replayed"
        );
        assert!(
            html.contains("In buckets of 1.00ms (40 points)"),
            "a 40 ms run in fine buckets"
        );
        assert!(
            html.matches("<polyline").count() >= 2 + 2 * 3,
            "the timelines break over the idle 20 ms"
        );
        r.divergences.insert(
            "insert".into(),
            DivergenceReport {
                count: 3,
                fields: [("n".to_string(), 3)].into(),
                examples: vec![
                    serde_json::json!({"fields": ["n"], "recorded": {"n": 1}, "live": {"n": 0}}),
                ],
            },
        );
        r.replayer.cpu_us_per_op = Some(20.0);
        r.phases.push(PhaseReport {
            name: "insert".into(),
            wall_s: 1.0,
            ops: 5,
            ..Default::default()
        });
        let html = render_html(&r);
        assert!(html.contains("insert, example 1 of the 1 kept (3 differed): n"));
        assert!(
            html.contains("&quot;live&quot;"),
            "the example itself is on the page"
        );
        assert!(html.contains("replayer (mongotape itself)"));
        assert!(html.contains("Wall time per phase"));
    }

    #[test]
    fn a_ramp_draws_its_schedule_and_marks_its_knee() {
        let mut r = report();
        r.options.open_loop = Some(crate::replay::report::OpenLoopReport {
            from: 100.0,
            to: 1000.0,
            over_s: 10.0,
            steps: 0,
        });
        r.options.duration_s = Some(10.0);
        r.started_at_unix_s = 99.5;
        r.timeline = (0..12)
            .map(|i| SecondReport {
                second: i,
                unix_s: 99 + i as u64,
                ops: 100 + 90 * i as u64,
                max_lag_us: 50.0 * i as f64,
                ..SecondReport::default()
            })
            .collect();
        r.knee = Some(crate::replay::measure::knee::KneeReport {
            at_s: Some(6.5),
            summary: "knee at ~730 ops/s (6.5 s in)".into(),
            ..Default::default()
        });
        r.lag.latency.count = 900;
        r.lag.latency.p50_us = 12.0;
        r.lag.latency.p99_us = 4_000.0;
        r.lag.clock.p50_us = 3.0;
        r.lag.clock.p99_us = 80.0;
        r.lag.held = 25;
        r.lag.from_send.count = 900;
        r.lag.from_send.p50_us = 210.0;
        r.lag.from_send.p99_us = 950.0;
        let html = render_html(&r);
        assert!(html.contains("Against the schedule"));
        assert!(
            html.contains("p50 3.0µs, p99 80.0µs; 25 of 900 held past their time"),
            "the lag split"
        );
        assert!(
            html.contains("own at this pace: p50 210.0µs, p99 950.0µs"),
            "the latency from the send"
        );
        assert!(html.contains("knee at ~730 ops/s (6.5 s in)."));
        // Seconds 1..=9 lie wholly inside the schedule: 9 intended, 9 achieved, 2 for the knee.
        assert!(html.contains(
            "aria-label=\"Rate intended and achieved\" data-series=\"3\" data-points=\"20\""
        ));
        assert!(
            html.contains("data-series=\"2\" data-points=\"11\""),
            "the lag and its knee"
        );
    }

    #[test]
    fn a_report_without_buckets_draws_its_seconds() {
        let mut r = report();
        r.timeline_buckets = Default::default();
        r.timeline = (0..3)
            .map(|i| SecondReport {
                second: i,
                ops: 10 * i as u64,
                p50_us: 100.0,
                ..SecondReport::default()
            })
            .collect();
        let html = render_html(&r);
        assert!(html.contains("In buckets of 1.00s (3 points)"));
    }
}
