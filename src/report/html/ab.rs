//! `mongotape replay --target A --target B --html`: one page per A/B run (`replay::ab`): the
//! findings, each target's figures, the per-command comparison with its ratio intervals, the latency
//! distributions of the targets overlaid per command, and the real reply differences with examples.

use super::{BarChart, LineChart, Page};
use crate::replay::ab::report::{AbReport, AbRow};
use crate::replay::ab::{shapes, tables};

/// Query shapes whose A2 sentence the page prints (the most moved first; the JSON has all).
const CONTROL_SHAPES: usize = 20;

/// Commands whose latency distributions are drawn (the busiest).
const DISTRIBUTIONS: usize = 6;

pub fn render_html(r: &AbReport) -> String {
    let labels: Vec<&str> = r.targets.iter().map(|t| t.label.as_str()).collect();
    let mut page = Page::new(&format!("mongotape A/B replay: {}", labels.join(" vs ")))
        .subtitle(&format!(
            "{} replayed into {} targets at once · {} · {} requests paired, {} unpaired",
            r.capture,
            r.targets.len(),
            r.options.pacing,
            r.pairs.paired,
            r.pairs.unpaired
        ))
        .section("Findings");
    if r.findings.is_empty() {
        page =
            page.paragraph("No command is significantly slower or faster, and no reply differs.");
    }
    for w in &r.warnings {
        page = page.paragraph(&format!("Warning: {w}"));
    }
    for f in &r.findings {
        page = page.paragraph(f);
    }
    page = verdicts(page, r);
    page = page.section("Targets").table(&tables::targets(r));
    for line in r.run.text().lines() {
        page = page.paragraph(line);
    }
    if let Some(load) = &r.load {
        page = page.paragraph(load.text().trim_end());
    }
    page = comparison(page, r, &labels);
    page = super::why::plans(page, r.plans.as_deref());
    for t in &r.targets {
        if !t.replay.errors.errors_by_code.is_empty() {
            page = page.paragraph(&format!("Errors on {}:", t.label));
            page = super::why::errors(page, &t.replay.errors);
        }
    }
    page = distributions(page, r, &labels);
    page = shape_distributions(page, r, &labels);
    differences(page, r).render()
}

/// The ratios set aside (clear of 1, not findings) and, with A2, what the control's copy showed
/// per command and per query shape: each candidate's ratio within it or beyond it.
fn verdicts(mut page: Page, r: &AbReport) -> Page {
    if !r.set_aside.is_empty() {
        page = page.paragraph(
            "Not findings: an interval clear of 1, but the mean and the per-request median do \
             not agree, A2 shows as much, or the run was DISTURBED and the difference is too \
             small to tell (docs/ab.md, \"What makes a finding\").",
        );
        for s in &r.set_aside {
            page = page.paragraph(s);
        }
    }
    let commands = r.control.iter().filter(|c| c.kind == "command");
    let shapes: Vec<_> = r.control.iter().filter(|c| c.kind == "shape").collect();
    let checks: Vec<_> = commands
        .chain(shapes.iter().copied().take(CONTROL_SHAPES))
        .collect();
    if checks.is_empty() {
        return page;
    }
    page = page.paragraph(
        "The control's copy (A2) against the control, per command and per query shape: a \
         candidate's ratio within what it shows is not a finding (docs/ab.md, \"The A2 rule\").",
    );
    for c in checks {
        page = page.paragraph(&c.sentence);
    }
    if shapes.len() > CONTROL_SHAPES {
        page = page.paragraph(&format!(
            "… and {} more query shapes in the JSON (`control`, kind `shape`).",
            shapes.len() - CONTROL_SHAPES
        ));
    }
    page
}

fn comparison(mut page: Page, r: &AbReport, labels: &[&str]) -> Page {
    let commands: Vec<&String> = r.per_command.keys().collect();
    page = page.section("Per command");
    for (what, pick) in [("p50", 0usize), ("p99", 1)] {
        let mut chart = BarChart::new(&format!("Latency {what} per command"), "µs")
            .categories(commands.iter().map(|c| c.as_str()));
        for (i, l) in labels.iter().enumerate() {
            chart = chart.series(
                l,
                r.per_command.values().map(|row| {
                    let s = &row.targets[i].latency;
                    if pick == 0 {
                        s.p50_us
                    } else {
                        s.p99_us
                    }
                }),
            );
        }
        page = page.bar_chart(chart);
    }
    let ratios = "Each candidate against the control on the same requests, a row per candidate \
                  (the control's copy, A2, under the candidate it judges): the mean and the \
                  per-request median latency ratios with their 95% intervals, the p99s' ratio.";
    page = page
        .table(&tables::comparison_latency(r, "command", &r.per_command))
        .paragraph(ratios)
        .table(&tables::comparison_ratios(r, "command", &r.per_command))
        .section("Per namespace")
        .table(&tables::comparison_latency(
            r,
            "namespace",
            &r.per_namespace,
        ))
        .table(&tables::comparison_ratios(r, "namespace", &r.per_namespace));
    if r.shapes.is_empty() {
        return page;
    }
    let labels: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
    page.section("Per query shape")
        .paragraph(
            "Each query shape (docs/shapes.md) on every target: its requests (on the control), \
             its p50 and p99 latency, and its share of the summed latency of every request \
             replayed into that target (not of the server's time); the shapes whose total time \
             moved most first.",
        )
        .table(&shapes::table(&r.shapes, &labels, usize::MAX))
        .paragraph(
            "Each candidate against the control per query shape, a row per candidate: its total \
             time on the shape and how far it moved, its mean and per-request median latency \
             ratios with their 95% intervals.",
        )
        .table(&shapes::ratios_table(&r.shapes, &labels))
}

/// Each target's latency distribution (share of requests at or under a latency), overlaid.
fn distributions(mut page: Page, r: &AbReport, labels: &[&str]) -> Page {
    let mut busiest: Vec<(&String, &AbRow)> = r
        .per_command
        .iter()
        .filter(|(_, row)| !row.sample_us.is_empty())
        .collect();
    busiest.sort_by_key(|(_, row)| std::cmp::Reverse(row.targets.first().map_or(0, |s| s.count)));
    if busiest.is_empty() {
        return page;
    }
    page = page.section("Latency distributions");
    for (command, row) in busiest.into_iter().take(DISTRIBUTIONS) {
        let mut chart = LineChart::new(
            &format!("{command}: share of requests within a latency"),
            "latency",
            "%",
        )
        .x_log("µs")
        .note("Paired requests only (answered by every target), a bounded sample.");
        for (i, l) in labels.iter().enumerate() {
            chart = chart.series(l, cdf(&row.sample_us[i]));
        }
        page = page.line_chart(chart);
    }
    page
}

/// Per query shape, the ones whose total time moved most: the paired latencies' distribution on
/// every target (small multiples).
fn shape_distributions(mut page: Page, r: &AbReport, labels: &[&str]) -> Page {
    let drawn: Vec<_> = r
        .shapes
        .iter()
        .filter(|s| s.sample_us.len() == labels.len() && s.sample_us.iter().any(|x| x.len() > 1))
        .take(DISTRIBUTIONS)
        .collect();
    if drawn.is_empty() {
        return page;
    }
    page = page.section("Latency distributions per query shape");
    let charts = drawn.into_iter().map(|s| {
        // The caption is cut to the chart's width with an ellipsis, the whole text its tooltip.
        let mut chart = LineChart::new(&s.shape, "latency", "%").small().x_log("µs");
        for (i, l) in labels.iter().enumerate() {
            chart = chart.series(l, cdf(&s.sample_us[i]));
        }
        chart
    });
    page.grid(charts)
}

/// At most 200 points of the empirical distribution.
fn cdf(sample: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = sample
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(200).max(1);
    let mut points: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .map(|i| (v[i], (i + 1) as f64 / n as f64 * 100.0))
        .collect();
    points.push((v[n - 1], 100.0));
    points
}

fn differences(mut page: Page, r: &AbReport) -> Page {
    let d = &r.differences;
    page = page.section("Reply differences").paragraph(&format!(
        "{} replies compared. {}",
        d.compared,
        if d.baseline {
            "A field that differs between the control and its copy (A2) is noise: not counted where it did, and left out when its noise rate is above the threshold."
        } else {
            "No second baseline: server clock fields are ignored, other noise is not filtered. Add a third --target with the control's setup."
        }
    ));
    if d.fields.is_empty() {
        return page.paragraph("No field differed.");
    }
    page.folded_table(&differences_summary(r), &tables::differences(r))
}

/// Fields named in the one line of the folded differences, after the real ones.
const NAMED_NOISE: usize = 8;

/// The line over the folded table of differences: the fields that differed, the real ones first;
/// the server's clock fields (`$clusterTime.*`, `operationTime`), which differ between any two
/// servers, counted and not named.
fn differences_summary(r: &AbReport) -> String {
    let fields = &r.differences.fields;
    let clock = |name: &str| crate::replay::ab::diff::is_clock_field(name);
    let real: Vec<&str> = (fields.iter().filter(|(_, f)| f.real))
        .map(|(n, _)| n.as_str())
        .collect();
    let noise: Vec<&str> = (fields.iter().filter(|(n, f)| !f.real && !clock(n)))
        .map(|(n, _)| n.as_str())
        .collect();
    let clocks = fields.keys().filter(|n| clock(n)).count();
    let mut s = format!("{} fields differed: ", fields.len());
    s.push_str(&match real.len() {
        0 => "none beyond noise".to_owned(),
        n => format!("{n} real ({})", real.join(", ")),
    });
    if !noise.is_empty() {
        let more = noise.len().saturating_sub(NAMED_NOISE);
        let named = noise[..noise.len().min(NAMED_NOISE)].join(", ");
        s.push_str(&format!("; {} noise ({named}", noise.len()));
        s.push_str(&if more > 0 {
            format!(", {more} more)")
        } else {
            ")".into()
        });
    }
    if clocks > 0 {
        s.push_str(&format!("; {clocks} server clock fields (noise)"));
    }
    s.push_str(". The table, with examples:");
    s
}
