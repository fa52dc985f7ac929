//! The tables of an analyze report, built once: the text summary ([`super::text`]) and the HTML
//! page (`report::html::analyze`) render the same rows.

use super::conn::TimeSplit;
use super::{AnalyzeReport, Category, CommandReport, Totals};
use crate::figures::drivers::label_for_people;
use crate::figures::table::Table;
use crate::figures::units::{self, duration_ns, duration_us};
use crate::shape::columns;

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
    let s = &r.shapes;
    columns::table(columns::own(&s.shapes, &s.shapes_other, limit), false)
}
