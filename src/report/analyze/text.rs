//! `mongotape analyze` as text tables.

use super::conn::TimeSplit;
use super::{AnalyzeReport, Category, CommandReport, Totals};
use crate::report::table::Table;
use crate::report::units::{self, duration_ns, duration_us};

/// Connections listed in the text report; `--json` has them all.
const MAX_CONN_ROWS: usize = 40;

/// The time-split cells every table shows: wall, server, client, gaps, client-bound share.
pub fn time_cells(t: &TimeSplit, share: Option<f64>) -> [String; 5] {
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

pub fn render_text(r: &AnalyzeReport) -> String {
    let mut s = String::new();
    overview(&mut s, r);
    driver_times(&mut s, r);
    per_operation(&mut s, r);
    if !r.phases.is_empty() {
        s.push_str(
            "\nPhases, from each step marker to the next (server and client time summed over workload connections)\n",
        );
        s.push_str(&crate::report::phases::render_text(&r.phases));
    }

    s.push_str("\nLatency per command (workload connections)\n");
    s.push_str(&command_table(&r.commands).render());
    if !r.other_commands.is_empty() {
        s.push_str("\nLatency per command (monitoring, handshake-only and idle connections)\n");
        s.push_str(&command_table(&r.other_commands).render());
    }
    connections(&mut s, r);
    s
}

/// The capture, its state and the workload in a few lines.
fn overview(s: &mut String, r: &AnalyzeReport) {
    let c = &r.capture;
    s.push_str(&format!(
        "capture       {} recorded {} from upstream {}\n",
        r.summary.source, c.start_time, c.upstream
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
            d.driver.clone(),
            w.connections.to_string(),
            w.ops.to_string(),
        ];
        row.extend(time_cells(&w.times, w.client_bound_share));
        row.extend([server_op, client_op]);
        t.row(row);
    }
    s.push_str("\nWhere the time went, per driver (workload connections, summed)\n");
    s.push_str(&t.render());
}

/// Round trips, bytes and extra commands per logical operation, per driver.
fn per_operation(s: &mut String, r: &AnalyzeReport) {
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
            d.driver.clone(),
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
    s.push_str("\nPer logical operation\n");
    s.push_str(&t.render());
}

/// The first connections, one row each.
fn connections(s: &mut String, r: &AnalyzeReport) {
    let mut t = Table::new([
        "conn",
        "driver",
        "role",
        "reqs",
        "ops",
        "wall",
        "server",
        "client",
        "gaps",
        "client-bound",
    ]);
    for c in r.connections.iter().take(MAX_CONN_ROWS) {
        let mut row = vec![
            c.id.to_string(),
            c.driver.clone(),
            c.role.map_or("-", |r| r.name()).to_string(),
            c.requests.to_string(),
            c.ops.to_string(),
        ];
        row.extend(time_cells(&c.times, c.client_bound_share));
        t.row(row);
    }
    s.push_str("\nConnections\n");
    s.push_str(&t.render());
    let more = r.connections.len().saturating_sub(MAX_CONN_ROWS) as u64 + r.connections_not_listed;
    if more > 0 {
        s.push_str(&format!(
            "... {more} more connections (--json lists up to 10,000)\n"
        ));
    }
}

fn command_table(commands: &[CommandReport]) -> Table {
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
