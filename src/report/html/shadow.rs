//! `mongotape shadow --html`: the live shadow's page (`shadow::report`), rewritten with its JSON.
//! The headline figures, each target's totals, gaps and mirrored writes, then per target a table of its query
//! shapes (what was mirrored, shed, matched, how it differed, errors by code on each side, both
//! sides' latency, the ratio with its interval, the share of production's time), and a legend.

use super::{BarChart, Page};
use crate::figures::table::{Align, Column, Table};
use crate::shadow::report::{Counts, Latency, ShadowReport, ShapeEntry, TargetReport};
use std::collections::BTreeMap;

/// Shapes in the latency chart (the busiest of the first target).
const CHARTED: usize = 8;

/// Shapes per target on the page, the most differing and the busiest first (the JSON has all).
const SHAPES: usize = 100;

pub fn render_html(r: &ShadowReport) -> String {
    let mut page = Page::new(&format!("mongotape shadow of {}", r.production))
        .subtitle(&format!(
            "started {} · {:.0} s · {}",
            r.started,
            r.seconds,
            if r.complete {
                "complete (written at stop)"
            } else {
                "in progress (rewritten every --report-every)"
            }
        ))
        .facts(&facts(r))
        .section("Targets")
        .table(&targets(r));
    page = gaps(page, r);
    page = writes(page, r);
    page = latency_chart(page, r);
    for t in &r.targets {
        page = page
            .section(&format!("{} {}: per query shape", t.role, t.label))
            .table(&shapes(t));
        if t.shapes.len() > SHAPES {
            page = page.paragraph(&format!(
                "… and {} more query shapes in the JSON.",
                t.shapes.len() - SHAPES
            ));
        }
        for c in t.shapes.iter().filter_map(|s| s.control.as_ref()).take(20) {
            page = page.paragraph(&c.sentence);
        }
        page = plans(page, t);
    }
    legend(page).render()
}

/// p50 per shape, production's beside each target's, for the busiest shapes.
fn latency_chart(page: Page, r: &ShadowReport) -> Page {
    let Some(first) = r.targets.first() else {
        return page;
    };
    let mut busiest: Vec<&ShapeEntry> = first
        .shapes
        .iter()
        .filter(|s| s.production_latency_us.is_some())
        .collect();
    busiest.sort_by_key(|s| std::cmp::Reverse(s.counts.mirrored));
    busiest.truncate(CHARTED);
    if busiest.is_empty() {
        return page;
    }
    let p50 = |l: &Option<Latency>| l.as_ref().map(|l| l.p50);
    let mut chart = BarChart::new("Latency p50 per query shape", "µs")
        .categories(busiest.iter().map(|s| s.shape.clone()))
        .series_opt(
            "production",
            busiest.iter().map(|s| p50(&s.production_latency_us)),
        );
    for t in &r.targets {
        let of = |text: &str| t.shapes.iter().find(|s| s.shape == text);
        chart = chart.series_opt(
            &t.label,
            busiest
                .iter()
                .map(|s| of(&s.shape).and_then(|e| p50(&e.target_latency_us))),
        );
    }
    page.section("Latency").bar_chart(chart)
}

/// The plans of the shapes that were explained (a read that still differed, or a latency
/// shift), changed first.
fn plans(mut page: Page, t: &TargetReport) -> Page {
    let mut explained: Vec<&ShapeEntry> = t
        .shapes
        .iter()
        .filter(|s| s.plan_changed.is_some())
        .collect();
    explained.sort_by_key(|s| s.plan_changed != Some(true));
    for s in explained.into_iter().take(20) {
        let (p, c) = (s.plan_production.as_deref(), s.plan_target.as_deref());
        let why = match (s.plan_reason.as_deref(), s.latency_shift.as_deref()) {
            (Some("latency"), Some(shift)) => format!(" (explained: {shift} on the target)"),
            (Some("latency"), None) => " (explained: its latency shifted)".to_owned(),
            (Some(reason), _) => format!(" (explained: a {reason})"),
            (None, _) => String::new(),
        };
        page = page.paragraph(&format!(
            "{}: plan {}{why} — production {}, target {}",
            s.shape,
            if s.plan_changed == Some(true) {
                "changed"
            } else {
                "unchanged"
            },
            p.unwrap_or("-"),
            c.unwrap_or("-")
        ));
    }
    page
}

fn facts(r: &ShadowReport) -> Vec<(&'static str, String)> {
    let sum = |f: fn(&Counts) -> u64| -> u64 { r.targets.iter().map(|t| f(&t.totals)).sum() };
    vec![
        ("targets", r.targets.len().to_string()),
        ("mirrored", sum(|c| c.mirrored).to_string()),
        ("discrepancies", sum(|c| c.discrepancies).to_string()),
        ("noise", sum(|c| c.noise).to_string()),
        ("shed", sum(|c| c.shed).to_string()),
        ("filtered", r.filtered.to_string()),
    ]
}

fn num(header: &str) -> Column {
    Column::new(header).align(Align::Right)
}

fn targets(r: &ShadowReport) -> Table {
    let mut table = Table::with_columns([
        Column::new("target"),
        num("mirrored"),
        num("matched"),
        num("discrep."),
        num("noise"),
        num("settled"),
        num("unconfirmed"),
        num("shed"),
        num("lost while down"),
    ]);
    for t in &r.targets {
        let c = &t.totals;
        table.row([
            format!("{} {}", t.role, t.label),
            c.mirrored.to_string(),
            c.matched.to_string(),
            c.discrepancies.to_string(),
            c.noise.to_string(),
            c.settled.to_string(),
            c.unconfirmed.to_string(),
            c.shed.to_string(),
            c.gaps.to_string(),
        ]);
    }
    table
}

/// Each target's mirrored writes (`--mirror all`), when there are any.
fn writes(page: Page, r: &ShadowReport) -> Page {
    if r.targets.iter().all(|t| t.writes.is_none()) {
        return page;
    }
    let mut table = Table::with_columns([
        Column::new("target"),
        Column::new("state"),
        num("mirrored"),
        num("failed"),
        num("in snapshot"),
        num("queued"),
        num("queued peak"),
        num("dropped"),
    ]);
    for t in &r.targets {
        if let Some(w) = &t.writes {
            table.row([
                format!("{} {}", t.role, t.label),
                w.state.clone(),
                w.mirrored.to_string(),
                w.failed.to_string(),
                w.in_snapshot.to_string(),
                w.queued.to_string(),
                w.queued_peak.to_string(),
                w.dropped.to_string(),
            ]);
        }
    }
    page.section("Writes").table(&table)
}

/// What was not compared, and why: the intake, the filters, each target's sheds and downtime.
fn gaps(mut page: Page, r: &ShadowReport) -> Page {
    page = page.section("Gaps");
    let mut lines = Vec::new();
    if r.intake_dropped > 0 {
        lines.push(format!(
            "{} reads dropped before the mirror saw them (its intake was full): mirrored nowhere.",
            r.intake_dropped
        ));
    }
    if r.filtered > 0 {
        lines.push(format!(
            "{} reads left out by --sample, --namespace, --command or --app.",
            r.filtered
        ));
    }
    for t in &r.targets {
        let c = &t.totals;
        if c.shed + c.gaps + c.orphans + t.connection_failures > 0 {
            lines.push(format!(
                "{} {}: {} shed (a bound was full), {} lost while it was down, {} getMores \
                 without their cursor; {} connections opened, {} failed or dropped.",
                t.role, t.label, c.shed, c.gaps, c.orphans, t.connections, t.connection_failures
            ));
        }
    }
    if lines.is_empty() {
        lines.push("None: every read was mirrored to every target.".into());
    }
    for l in lines {
        page = page.paragraph(&l);
    }
    page
}

fn codes(m: &BTreeMap<String, u64>) -> String {
    let all: Vec<String> = m.iter().map(|(c, n)| format!("{c}×{n}")).collect();
    all.join(" ")
}

/// Production's and the target's figure: `120 / 180`.
fn both(s: &ShapeEntry, pick: fn(&Latency) -> f64) -> String {
    let one = |l: &Option<Latency>| {
        l.as_ref()
            .map_or_else(|| "-".into(), |l| format!("{:.0}", pick(l)))
    };
    format!(
        "{} / {}",
        one(&s.production_latency_us),
        one(&s.target_latency_us)
    )
}

fn shapes(t: &TargetReport) -> Table {
    let mut table = Table::with_columns([
        Column::new("shape"),
        num("mirrored"),
        num("shed"),
        num("matched"),
        num("discrep."),
        num("noise"),
        Column::new("errors prod. / target"),
        num("p50 µs prod. / target"),
        num("p99 µs prod. / target"),
        Column::new("ratio (interval)"),
        num("share of prod. time"),
    ]);
    for s in t.shapes.iter().take(SHAPES) {
        table.row(shape_row(s));
    }
    table
}

fn shape_row(s: &ShapeEntry) -> Vec<String> {
    let c = &s.counts;
    let errors = match (s.errors_production.is_empty(), s.errors_target.is_empty()) {
        (true, true) => String::new(),
        _ => format!(
            "{} / {}",
            codes(&s.errors_production),
            codes(&s.errors_target)
        ),
    };
    vec![
        s.shape.clone(),
        c.mirrored.to_string(),
        c.shed.to_string(),
        c.matched.to_string(),
        c.discrepancies.to_string(),
        c.noise.to_string(),
        errors,
        both(s, |l| l.p50),
        both(s, |l| l.p99),
        s.ratio.as_ref().map_or_else(
            || "-".into(),
            |r| format!("{:.2}x ({:.2}-{:.2}x)", r.ratio, r.low, r.high),
        ),
        format!("{:.1}%", s.share_of_production_time * 100.0),
    ]
}

fn legend(page: Page) -> Page {
    page.section("Legend")
        .paragraph(
            "mirrored: reads sent to the target and answered. shed: not sent, a bound was full \
             (--queue-mb, --max-outstanding). lost while down: the target was down or waiting \
             out its backoff. orphans: getMores whose cursor the target does not have.",
        )
        .paragraph(
            "matched: the target's reply equals production's (document order ignored without a \
             sort, clock fields and --ignore-field left out). discrep. (discrepancies): differed, \
             and still differed when sent again to both sides. noise: the control differed the \
             same way. settled: differed, then matched when sent again. unconfirmed: could not \
             be sent again.",
        )
        .paragraph(
            "errors: error replies by code (code×count) on production, then on the target, for \
             the same reads. p50 and p99: production's, then the target's. Latency: production's as the proxy saw it, the target's as the mirror \
             measured its round trip. ratio: the target's mean latency over production's on the \
             same reads, with its 95% bootstrap interval (above 1: slower). share of prod. time: the \
             shape's part of production's time over the mirrored reads. docs/shadow.md.",
        )
        .paragraph(
            "Writes (--mirror all): state restoring (the snapshot is taken or restored; writes \
             wait), mirroring, or reads_only (writes were dropped). mirrored: applied to the \
             target in production's order. failed: the target refused what production took. in \
             snapshot: acknowledged before T0, already in the restored state. dropped: not \
             applied since the target went to reads only.",
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shadow::stats::{Answered, CandidateStats, ShapeKey};

    #[test]
    fn a_page_with_a_shape_per_target() {
        let stats = CandidateStats::new(10);
        let key = ShapeKey {
            text: "find shop.items {_id: ?number} <b>".into(),
            command: "find".into(),
            namespace: "shop.items".into(),
        };
        for i in 1..50u64 {
            let a = Answered {
                production_ns: 1000 * i,
                candidate_ns: 1500 * i,
                production_error: None,
                candidate_error: (i == 3).then_some(50),
                matched: i != 3,
            };
            stats.answered(&key, a);
        }
        let targets = [("cand:27017".to_string(), "candidate", &stats)];
        let r = crate::shadow::report::build(("prod:27017", 3.0, true, 0, 7), &targets, "now");
        let html = render_html(&r);
        assert!(html.contains("find shop.items {_id: ?number} &lt;b&gt;"));
        assert!(html.contains("50×1"));
        assert!(html.contains("7 reads left out"));
        assert!(html.contains("Legend"));
    }
}
