//! The tables of an A/B report, built once: the text ([`super::text`]) and the HTML page
//! (`report::html::ab`) render the same rows, the page with p50 and p99 apart and every example.

use super::report::{AbReport, AbRow, FieldReport, RatioReport};
use super::stats::RatioEstimate;
use crate::figures::table::Table;
use crate::figures::text::cut;
use crate::figures::units;
use std::collections::BTreeMap;

/// Every target: its role, what it replayed and whether it finished.
pub fn targets(r: &AbReport) -> Table {
    let mut t = Table::new([
        "target",
        "role",
        "uri",
        "target uri",
        "ops",
        "ops/s",
        "errors",
        "server CPU/op (gross)",
        "server CPU/op",
        "complete",
        "error",
    ])
    .html_only(&["error", "target uri", "server CPU/op (gross)"])
    .text_only(&["uri"]);
    for x in &r.targets {
        let s = &x.replay.summary;
        t.row([
            x.label.clone(),
            x.role.clone(),
            // The host part shows first; the page has the whole string.
            cut(x.replay.target.trim_start_matches("mongodb://"), 30),
            x.replay.target.clone(),
            units::count(s.ops as f64),
            units::count(s.ops_per_s),
            units::count(s.overall.errors as f64),
            x.server_cpu_us_per_op
                .map_or("-".into(), units::duration_us),
            // Net of the server's idle rate when it was read (`--idle-sample`), else gross.
            x.server_cpu_net_us_per_op
                .or(x.server_cpu_us_per_op)
                .map_or("-".into(), units::duration_us),
            if x.complete { "yes" } else { "partial" }.into(),
            x.error.clone().unwrap_or_default(),
        ]);
    }
    t
}

/// The page's comparison, first half: all requests, then one row per `key` (command or
/// namespace), each target's count and its p50 and p99 apart (sortable).
pub fn comparison_latency(r: &AbReport, key: &str, rows: &BTreeMap<String, AbRow>) -> Table {
    let mut headers = vec![key.to_string()];
    for x in &r.targets {
        let l = &x.label;
        headers.extend([format!("{l} ops"), format!("{l} p50"), format!("{l} p99")]);
    }
    let mut t = Table::new(headers);
    let all = std::iter::once(("all", &r.overall));
    for (name, row) in all.chain(rows.iter().map(|(k, v)| (k.as_str(), v))) {
        let mut cells = vec![name.to_string()];
        for s in &row.targets {
            cells.extend([
                format!("{}{}", units::count(s.count as f64), errors(s.errors)),
                units::duration_us(s.latency.p50_us),
                units::duration_us(s.latency.p99_us),
            ]);
        }
        t.row(cells);
    }
    t
}

/// The page's comparison, second half: a row per `key` and candidate (the control's copy, A2,
/// right under the candidate it judges), its ratios against the control and whether it is a
/// finding. One column per figure however many targets: the table fits the page.
pub fn comparison_ratios(r: &AbReport, key: &str, rows: &BTreeMap<String, AbRow>) -> Table {
    let control = r.targets.first().map_or("", |t| t.label.as_str());
    let mut t = Table::new([
        key.to_string(),
        "target".into(),
        format!("mean over {control} (interval)"),
        format!("median over {control} (interval)"),
        format!("p99 over {control}"),
        "finding?".into(),
    ]);
    let all = std::iter::once(("all", &r.overall));
    for (name, row) in all.chain(rows.iter().map(|(k, v)| (k.as_str(), v))) {
        for x in &row.ratios {
            t.row([
                name.to_string(),
                x.target.clone(),
                interval(x.mean),
                interval(x.median),
                x.p99.map_or("-".into(), units::ratio),
                finding_cell(x),
            ]);
        }
    }
    t
}

/// A command or namespace longer than this is cut in the text (whole on the page and in JSON).
const KEY_WIDTH: usize = 26;
/// A target's label in a column header.
const LABEL_WIDTH: usize = 10;

/// The comparison for a terminal, in two tables that fit 100 columns with three targets: each
/// target's count and latency, then each candidate's ratios against the control (the median
/// with its interval and p99; the mean, with the p50 and p99 apart, on the page and in JSON).
pub fn comparison_text(r: &AbReport, key: &str, rows: &BTreeMap<String, AbRow>) -> [Table; 2] {
    let short = short_labels(r);
    let mut latency = vec![key.to_string(), "ops".into(), "errors".into()];
    latency.extend(short.iter().map(|l| format!("{l} p50/p99")));
    let mut ratios = vec![key.to_string()];
    for l in short.iter().skip(1) {
        ratios.push(format!("{l} median"));
        ratios.push(format!("{l} p99"));
    }
    let (mut latency, mut ratios) = (Table::new(latency), Table::new(ratios));
    let all = std::iter::once(("all", &r.overall));
    for (name, row) in all.chain(rows.iter().map(|(k, v)| (k.as_str(), v))) {
        let ops = row.targets.first().map_or(0, |s| s.count);
        let errors: Vec<String> = row
            .targets
            .iter()
            .map(|s| units::count(s.errors as f64))
            .collect();
        let name = cut(name, KEY_WIDTH);
        let mut cells = vec![name.clone(), units::count(ops as f64), errors.join("/")];
        cells.extend(row.targets.iter().map(|s| {
            format!(
                "{}/{}",
                units::duration_us(s.latency.p50_us),
                units::duration_us(s.latency.p99_us)
            )
        }));
        latency.row(cells);
        let mut cells = vec![name];
        for x in &row.ratios {
            cells.push(interval(x.median) + &not_a_finding_mark(x));
            cells.push(x.p99.map_or("-".into(), units::ratio));
        }
        ratios.row(cells);
    }
    [latency, ratios]
}

/// Marks a ratio clear of 1 that is not a finding (the text says why under the table).
pub const NOT_A_FINDING: &str = "~";

fn not_a_finding_mark(x: &RatioReport) -> String {
    if x.not_a_finding.is_some() {
        format!(" {NOT_A_FINDING}")
    } else {
        String::new()
    }
}

/// Each target's label cut short for a column header (the targets' table gives them whole), so
/// that three targets fit in 100 columns; numbered (`2:one doc...`) when two cut alike.
fn short_labels(r: &AbReport) -> Vec<String> {
    let cut_alike: Vec<String> = r
        .targets
        .iter()
        .map(|t| cut(&t.label, LABEL_WIDTH))
        .collect();
    let unique = cut_alike
        .iter()
        .enumerate()
        .all(|(i, l)| !cut_alike[..i].contains(l));
    if unique {
        return cut_alike;
    }
    r.targets
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{}:{}", i + 1, cut(&t.label, LABEL_WIDTH - 2)))
        .collect()
}

/// A label cut for a sentence of the text report.
pub fn cut_label(label: &str) -> String {
    cut(label, 20)
}

/// A ratio and its interval, `1.73x (1.50x-1.99x)`; `-` without one.
pub fn interval(e: Option<RatioEstimate>) -> String {
    e.map_or("-".into(), |m| {
        format!(
            "{} ({}-{})",
            units::ratio(m.ratio),
            units::ratio(m.low),
            units::ratio(m.high)
        )
    })
}

/// `yes`, empty, or `no:` and the head of why not ("tail only"); the whole of it is in the
/// set-aside list above the tables.
pub fn finding_cell(r: &RatioReport) -> String {
    match (&r.not_a_finding, r.finding) {
        (Some(why), _) => format!("no: {}", why.split([':', '(']).next().unwrap_or("").trim()),
        (None, true) => "yes".into(),
        (None, false) => String::new(),
    }
}

fn errors(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} err)")
    }
}

/// Every field that differed: how often, how noisy, the verdict, and examples (the text shows the
/// first, cut to 80 bytes; the page shows them all).
pub fn differences(r: &AbReport) -> Table {
    let mut t = Table::new([
        "field",
        "compared",
        "differed",
        "unexplained",
        "noise rate",
        "verdict",
        "example",
        "examples",
    ])
    .html_only(&["unexplained", "examples", "example"])
    .folded(&["examples"]);
    for (name, f) in &r.differences.fields {
        t.row([
            name.clone(),
            units::count(f.compared as f64),
            units::count(f.differed as f64),
            units::count(f.unexplained as f64),
            units::percent(f.noise_rate * 100.0),
            verdict(name, f).into(),
            first_example(f),
            f.examples
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        ]);
    }
    t
}

fn verdict(name: &str, f: &FieldReport) -> &'static str {
    if f.real {
        "REAL"
    } else if super::diff::is_clock_field(name) {
        "noise (server clock)"
    } else if f.unexplained > 0 {
        "noise (field too noisy)"
    } else {
        "noise"
    }
}

/// Under the text's table of differences, a line per field with its first example (the table
/// itself would be too wide with them).
pub fn first_examples(r: &AbReport) -> String {
    let mut out = String::new();
    for (name, f) in &r.differences.fields {
        let example = first_example(f);
        if !example.is_empty() {
            out.push_str(&cut(&format!("  {name}: {example}"), 100));
            out.push('\n');
        }
    }
    out
}

/// The first example on one line of at most 80 bytes, cut on a character boundary.
fn first_example(f: &FieldReport) -> String {
    let Some(e) = f.examples.first() else {
        return String::new();
    };
    let mut s = format!(
        "{}: {} vs {}",
        e["command"].as_str().unwrap_or(""),
        e["control"],
        e["candidate"]
    );
    let mut cut = s.len().min(80);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_example_is_cut_on_a_character_boundary() {
        let f = FieldReport {
            examples: vec![serde_json::json!({
                "command": "find",
                "control": "é".repeat(60),
                "candidate": "x",
            })],
            ..FieldReport::default()
        };
        let s = first_example(&f);
        assert!(s.len() <= 80 && s.starts_with("find: \"éé"), "{s}");
    }

    /// A2 may agree with A on a reply whose clock B's differs on (one write apart): still noise.
    #[test]
    fn a_server_clock_field_is_never_a_real_difference() {
        use crate::replay::ab::diff::{DiffOptions, Differences, Replies};
        let reply = |i: u32| {
            let time = bson::Timestamp {
                time: 1,
                increment: i,
            };
            bson::rawdoc! { "n": i as i32, "ok": 1.0, "operationTime": time }.into_bytes()
        };
        let (a, b) = (reply(1), reply(2));
        let (mut d, opts) = (Differences::default(), DiffOptions::default());
        let replies = Replies {
            command: "find",
            namespace: "shop.orders",
            control: &a,
            candidate: &b,
            baseline: Some(&a),
            unordered: false,
        };
        d.add(&opts, &replies);
        d.finish(&opts, true);
        let clock = &d.fields["operationTime"];
        assert!(clock.unexplained == 1 && !clock.real, "{clock:?}");
        assert!(d.fields["n"].real, "{:?}", d.fields["n"]);
        let f = FieldReport {
            unexplained: 1,
            ..FieldReport::default()
        };
        assert_eq!(verdict("operationTime", &f), "noise (server clock)");
        assert_eq!(verdict("n", &f), "noise (field too noisy)");
    }
}
