//! The tables of an analyze report, built once: the text summary ([`super::text`]) and the HTML
//! page (`report::html::analyze`) render the same rows.

use super::conn::TimeSplit;
use super::{AnalyzeReport, Category, CommandReport, Totals};
use crate::figures::drivers::label_for_people;
use crate::figures::table::{Column, Field, Table};
use crate::figures::units::{self, duration_ns, duration_us};
use crate::shape::ShapeReport;

/// Wall, server, client and gap time, and the client-bound share.
fn time_cells(t: &TimeSplit, share: Option<f64>) -> [String; 5] {
    [
        duration_ns(t.wall_ns as f64),
        duration_ns(t.server_ns as f64),
        duration_ns(t.client_ns as f64),
        duration_ns(t.gaps.total_ns() as f64),
        units::share(share),
    ]
}

fn per_op(t: &Totals, key: &str) -> String {
    match &t.per_op {
        Some(p) => format!("{:.2}", p.extra.get(key).copied().unwrap_or(0.0)),
        None => "-".into(),
    }
}

/// Where the time went, per driver (workload connections, summed).
pub fn drivers(r: &AnalyzeReport) -> Table {
    let mut t = Table::new([
        "driver",
        "conns",
        "ops",
        "wall",
        "server",
        "client",
        "gaps",
        "client-bound",
        "server/op",
        "client/op",
    ]);
    for d in &r.drivers {
        let w = &d.workload;
        if w.connections == 0 {
            continue;
        }
        let (server_op, client_op) = match &w.per_op {
            Some(p) => (duration_us(p.server_us), duration_us(p.client_us)),
            None => ("-".into(), "-".into()),
        };
        let mut row = vec![
            label_for_people(&d.driver),
            w.connections.to_string(),
            w.ops.to_string(),
        ];
        row.extend(time_cells(&w.times, w.client_bound_share));
        row.extend([server_op, client_op]);
        t.row(row);
    }
    t
}

/// Round trips, bytes and extra commands per logical operation, per driver.
pub fn per_operation(r: &AnalyzeReport) -> Table {
    let mut t = Table::new([
        "driver",
        "ops",
        "round trips/op",
        "bytes/op",
        "handshake/op",
        "sessions/op",
        "getMore/op",
        "killCursors/op",
        "other conns",
        "other reqs",
    ]);
    for d in &r.drivers {
        let w = &d.workload;
        if w.connections == 0 && d.other.connections == 0 {
            continue;
        }
        let (rt, bytes) = match &w.per_op {
            Some(p) => (
                format!("{:.2}", p.round_trips),
                units::bytes(p.bytes as u64),
            ),
            None => ("-".into(), "-".into()),
        };
        t.row([
            label_for_people(&d.driver),
            w.ops.to_string(),
            rt,
            bytes,
            per_op(w, Category::Handshake.name()),
            per_op(w, Category::Sessions.name()),
            per_op(w, Category::GetMore.name()),
            per_op(w, Category::KillCursors.name()),
            d.other.connections.to_string(),
            d.other.requests.to_string(),
        ]);
    }
    t
}

/// The first `limit` connections, one row each (the client's address on the page only).
pub fn connections(r: &AnalyzeReport, limit: usize) -> Table {
    let mut t = Table::new([
        "conn",
        "client address",
        "driver",
        "role",
        "reqs",
        "ops",
        "wall",
        "server",
        "client",
        "gaps",
        "client-bound",
    ])
    .html_only(&["client address"]);
    for c in r.connections.iter().take(limit) {
        let mut row = vec![
            c.id.to_string(),
            c.client.clone(),
            label_for_people(&c.driver),
            c.role.map_or("-", |r| r.name()).to_string(),
            c.requests.to_string(),
            c.ops.to_string(),
        ];
        row.extend(time_cells(&c.times, c.client_bound_share));
        t.row(row);
    }
    t
}

/// Requests, replies, errors and latency per command.
pub fn commands(commands: &[CommandReport]) -> Table {
    let mut t = Table::new([
        "command", "kind", "requests", "replies", "no reply", "errors", "p50", "p90", "p99",
        "p99.9", "max",
    ]);
    for c in commands {
        let l = &c.latency;
        let lat = |v: f64| {
            if l.count > 0 {
                duration_us(v)
            } else {
                "-".into()
            }
        };
        t.row([
            c.command.clone(),
            c.category.map_or("-", |k| k.name()).to_string(),
            c.requests.to_string(),
            c.replies.to_string(),
            c.no_reply_expected.to_string(),
            c.errors.to_string(),
            lat(l.p50_us),
            lat(l.p90_us),
            lat(l.p99_us),
            lat(l.p999_us),
            lat(l.max_us),
        ]);
    }
    t
}

/// The query shapes, most total time first, at most `limit` of them plus `other` when it holds
/// requests. The text cuts the shape text to fit `TEXT_WIDTH` and leaves hash, getMores, mean and
/// reply bytes to the page, which keeps the whole text.
pub fn shapes(r: &AnalyzeReport, limit: usize) -> Table {
    let other = &r.shapes.shapes_other;
    let listed = r.shapes.shapes.iter().take(limit);
    let rows = listed.chain((other.figures.count + other.figures.getmores > 0).then_some(other));
    Table::of(&shape_fields(), rows)
}

/// The shape table's columns, each with its cell of a shape.
fn shape_fields() -> [Field<ShapeReport>; 12] {
    [
        (Column::new("shape").fit(), |s| s.shape.clone()),
        (Column::new("hash").html_only(), |s| s.hash.clone()),
        (Column::new("count"), |s| s.figures.count.to_string()),
        (Column::new("getMores").html_only(), |s| {
            s.figures.getmores.to_string()
        }),
        (Column::new("errors"), |s| s.figures.errors.to_string()),
        (Column::new("p50"), |s| shape_latency(s, s.figures.p50_us)),
        (Column::new("p99"), |s| shape_latency(s, s.figures.p99_us)),
        (Column::new("mean").html_only(), |s| {
            shape_latency(s, s.figures.mean_us)
        }),
        (Column::new("total"), |s| duration_us(s.figures.total_us)),
        (Column::new("share"), |s| units::share(Some(s.figures.share))),
        (Column::new("docs"), |s| s.figures.docs_returned.to_string()),
        (Column::new("reply bytes").html_only(), |s| {
            units::bytes(s.figures.reply_bytes)
        }),
    ]
}

/// A latency of a shape, `-` when none of its requests had a reply.
fn shape_latency(s: &ShapeReport, v: f64) -> String {
    if s.figures.count > s.figures.no_reply {
        duration_us(v)
    } else {
        "-".into()
    }
}
