//! `mongotape analyze` as text tables.

use super::{tables, AnalyzeReport};
use crate::figures::text::{fit_lines, wrap};
use crate::figures::units::{self, duration_ns};

/// Connections listed in the text report; `--json` has them all.
const MAX_CONN_ROWS: usize = 40;
/// Query shapes listed in the text report, most total time first; `--json` has them all.
const MAX_SHAPE_ROWS: usize = 10;

/// The report for the terminal: the overview, then its tables, every line within 100 columns.
pub fn render_text(r: &AnalyzeReport) -> String {
    // The overview's sentences hang under their values, past the 14 columns of their labels.
    let mut head = String::new();
    overview(&mut head, r);
    if let Some(faults) = &r.faults {
        head.push_str(&format!("FAULTS        {}\n", faults.text()));
    }
    let mut s = wrap(&head, 14);
    if let Some(faults) = &r.faults {
        s.push_str(&faults.table());
    }
    driver_times(&mut s, r);
    per_operation(&mut s, r);
    if !r.phases.is_empty() {
        s.push_str(
            "\nPhases, from each step marker to the next (server and client time summed over workload connections)\n",
        );
        s.push_str(&crate::figures::phases::render_text(&r.phases));
    }

    shapes(&mut s, r);
    if let Some(plans) = &r.plans {
        s.push('\n');
        s.push_str(&crate::plan::text::text(plans));
    }
    s.push_str(&crate::figures::slowest::render_text(
        &r.slowest,
        crate::figures::slowest::TEXT_ROWS,
    ));
    s.push_str("\nLatency per command (workload connections)\n");
    s.push_str(&tables::commands(&r.commands).render());
    if !r.other_commands.is_empty() {
        s.push_str("\nLatency per command (monitoring, handshake-only and idle connections)\n");
        s.push_str(&tables::commands(&r.other_commands).render());
    }
    connections(&mut s, r);
    fit_lines(&s)
}

/// The capture, its state and the workload in a few lines.
fn overview(s: &mut String, r: &AnalyzeReport) {
    let c = &r.capture;
    s.push_str(&format!(
        "capture       {} {}\n",
        r.summary.source,
        c.origin()
    ));
    let state = match (&c.error, c.complete) {
        (Some(_), _) if c.read_errors.len() > 1 => {
            format!("read stopped early: {}", c.read_errors.join("; "))
        }
        (Some(e), _) => format!("read stopped early: {e}"),
        (None, true) => "complete".into(),
        (None, false) => "no end record (the recorder did not shut down cleanly)".into(),
    };
    s.push_str(&format!(
        "state         {state}; {} records over {}\n",
        c.records,
        units::duration_s(c.duration_s)
    ));
    if c.unanswered_untracked > 0 {
        s.push_str(&format!(
            "WARNING       {} requests not kept for pairing (over the bound on unanswered requests): their replies count as unsolicited\n",
            c.unanswered_untracked
        ));
    }
    if c.connections_folded > 0 {
        s.push_str(&format!(
            "WARNING       {} connections opened while 10,000 were open: counted in the totals as workload, their time unattributed, not listed\n",
            c.connections_folded
        ));
    }
    if c.dropped_messages > 0 || c.undecodable_messages > 0 {
        s.push_str(&format!(
            "WARNING       {} messages dropped by the recorder, {} undecodable: time around them is unattributed\n",
            c.dropped_messages, c.undecodable_messages
        ));
    }
    let w = &r.workload;
    s.push_str(&format!(
        "workload      {} connections, {} logical operations; {} requests a replay would replay in {} = {} ops/s\n",
        w.connections,
        w.ops,
        r.summary.ops,
        units::duration_s(r.summary.wall_s),
        units::count(r.summary.ops_per_s)
    ));
    s.push_str(&format!(
        "client-bound  {} of the workload connections' active time (server {}, client {}, gaps {})\n",
        units::share(w.client_bound_share),
        duration_ns(w.times.server_ns as f64),
        duration_ns(w.times.client_ns as f64),
        duration_ns(w.times.gaps.total_ns() as f64),
    ));
    if let Some(line) = r.errors.line() {
        s.push_str(&format!("{line}\n"));
    }
    let o = &r.other;
    s.push_str(&format!(
        "set apart     {} monitoring / handshake-only / idle connections, {} requests, {}\n",
        o.connections,
        o.requests,
        units::bytes(o.bytes)
    ));
}

/// Where the time went, per driver.
fn driver_times(s: &mut String, r: &AnalyzeReport) {
    s.push_str("\nWhere the time went, per driver (workload connections, summed)\n");
    s.push_str(&tables::drivers(r).render());
}

/// Round trips, bytes and extra commands per logical operation, per driver.
fn per_operation(s: &mut String, r: &AnalyzeReport) {
    s.push_str("\nPer logical operation\n");
    s.push_str(&tables::per_operation(r).render());
}

/// The first connections, one row each.
fn connections(s: &mut String, r: &AnalyzeReport) {
    s.push_str("\nConnections\n");
    s.push_str(&tables::connections(r, MAX_CONN_ROWS).render());
    let more = r.connections.len().saturating_sub(MAX_CONN_ROWS) as u64 + r.connections_not_listed;
    if more > 0 {
        s.push_str(&format!(
            "... {more} more connections (--json lists up to 10,000)\n"
        ));
    }
}

/// The query shapes that took the most time.
fn shapes(s: &mut String, r: &AnalyzeReport) {
    let all = &r.shapes.shapes;
    if all.is_empty() {
        return;
    }
    s.push_str(&format!(
        "\nQuery shapes, the {} that took the most time (of {}; docs/shapes.md)\n",
        all.len().min(MAX_SHAPE_ROWS),
        all.len()
    ));
    s.push_str(&tables::shapes(r, MAX_SHAPE_ROWS).render());
    let other = &r.shapes.shapes_other.figures;
    if other.count + other.getmores > 0 {
        s.push_str(&format!(
            "... {} requests of shapes past the first {} are counted under `other` (--max-shapes)\n",
            other.count + other.getmores,
            units::count(r.shapes.shapes_cap as f64)
        ));
    }
}
