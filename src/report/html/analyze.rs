//! `mongotape analyze --html`: the report as one self-contained page with charts.

use super::{BarChart, LineChart, Page};
use crate::figures::drivers::label_for_people;
use crate::figures::units::{self, duration_ns, duration_us};
use crate::report::analyze::tables;
use crate::report::analyze::{
    AnalyzeReport, Category, ConnReport, DriverReport, Role, TimelinePoint,
};

/// Commands drawn in the latency charts (the most requested ones).
const MAX_CHART_COMMANDS: usize = 8;
/// Workload connections drawn in the per-connection chart (the longest ones).
const MAX_CHART_CONNS: usize = 30;

const SERVER: &str = "#3b6fd8";
const CLIENT: &str = "#f28e2b";
const GAPS: &str = "#c0c4cc";

pub fn render_html(r: &AnalyzeReport) -> String {
    // Drivers with workload connections: the ones the charts compare.
    let drivers: Vec<&DriverReport> = r
        .drivers
        .iter()
        .filter(|d| d.workload.connections > 0)
        .collect();
    let page = header(r);
    let page = server_or_client(page, r, &drivers);
    let page = latency(page, r, &drivers);
    let page = per_operation(page, &drivers);
    let page = over_time(page, r);
    let page = super::phases::section(
        page,
        &r.phases,
        "The capture cut at its step markers (a ping with comment mongotape:step:NAME), each phase \
         running from its marker to the next. Operations and latency count what a replay replays; \
         server and client time are summed over the workload connections.",
    );
    let page = driver_table(page, r);
    let page = shape_table(page, r);
    let page = super::why::sections(page, &r.errors, &r.slowest, r.plans.as_deref());
    let page = command_tables(page, r);
    connection_table(page, r).render()
}

/// The title, the headline figures and what could not be read.
fn header(r: &AnalyzeReport) -> Page {
    let s = &r.summary;
    let w = &r.workload;
    let mut page = Page::new(&format!("mongotape analyze: {}", s.label))
        .subtitle(&format!(
            "{} · {} · {} records over {}",
            s.source,
            r.capture.origin(),
            r.capture.records,
            units::duration_s(r.capture.duration_s)
        ))
        .facts(&[
            ("logical operations", w.ops.to_string()),
            ("requests a replay replays", s.ops.to_string()),
            ("of those per second", units::count(s.ops_per_s)),
            ("client-bound share", units::share(w.client_bound_share)),
            ("p50 latency", duration_us(s.overall.latency.p50_us)),
            ("p99 latency", duration_us(s.overall.latency.p99_us)),
            ("workload connections", w.connections.to_string()),
            ("other connections", r.other.connections.to_string()),
        ]);
    if let Some(e) = &r.capture.error {
        page = page.paragraph(&format!("The capture could not be read to its end: {e}"));
    }
    if r.capture.dropped_messages > 0 || r.capture.undecodable_messages > 0 {
        page = page.paragraph(&format!(
            "{} messages were dropped by the recorder and {} could not be decoded; the time around them is counted as unattributed.",
            r.capture.dropped_messages, r.capture.undecodable_messages
        ));
    }
    page
}

/// Server against client time, per driver and per workload connection.
fn server_or_client(mut page: Page, r: &AnalyzeReport, drivers: &[&DriverReport]) -> Page {
    let secs = |ns: u64| ns as f64 / 1e9;
    page = page
        .section("Server or client?")
        .paragraph(
            "Server time: a request was in flight. Client time: nothing was in flight, the client was \
             preparing its next request. Gaps: before the first request, after the last reply, and \
             unattributable time. Summed over each driver's workload connections; monitoring \
             connections are left out.",
        )
        .bar_chart(
            BarChart::new("Server vs client time per driver", "s")
                .categories(drivers.iter().map(|d| label_for_people(&d.driver)))
                .series("server", drivers.iter().map(|d| secs(d.workload.times.server_ns)))
                .color(SERVER)
                .series("client", drivers.iter().map(|d| secs(d.workload.times.client_ns)))
                .color(CLIENT)
                .series("gaps", drivers.iter().map(|d| secs(d.workload.times.gaps.total_ns())))
                .color(GAPS)
                .stacked(),
        );
    let mut conns: Vec<&ConnReport> = r
        .connections
        .iter()
        .filter(|c| c.role == Some(Role::Workload))
        .collect();
    conns.sort_by(|a, b| b.times.wall_ns.cmp(&a.times.wall_ns).then(a.id.cmp(&b.id)));
    conns.truncate(MAX_CHART_CONNS);
    conns.sort_by_key(|c| c.id);
    let share = |c: &ConnReport, v: u64| {
        if c.times.wall_ns > 0 {
            v as f64 * 100.0 / c.times.wall_ns as f64
        } else {
            0.0
        }
    };
    page.bar_chart(
        BarChart::new("Share of each workload connection's wall time", "%")
            .categories(
                conns
                    .iter()
                    .map(|c| format!("conn {} · {}", c.id, label_for_people(&c.driver))),
            )
            .series("server", conns.iter().map(|c| share(c, c.times.server_ns)))
            .color(SERVER)
            .series("client", conns.iter().map(|c| share(c, c.times.client_ns)))
            .color(CLIENT)
            .series(
                "gaps",
                conns.iter().map(|c| share(c, c.times.gaps.total_ns())),
            )
            .color(GAPS)
            .stacked(),
    )
}

/// Latency distribution and percentiles per command, and per driver when there are several.
fn latency(mut page: Page, r: &AnalyzeReport, drivers: &[&DriverReport]) -> Page {
    let cmds: Vec<_> = r
        .commands
        .iter()
        .filter(|c| c.latency.count > 0)
        .filter(|c| {
            // Handshakes and session bookkeeping are one-offs; they have their table below.
            matches!(
                c.category,
                Some(Category::Operation | Category::GetMore | Category::KillCursors)
            )
        })
        .take(MAX_CHART_COMMANDS)
        .collect();
    // One small chart per command on a shared axis: eight lines on one chart do not read.
    let xs = || {
        cmds.iter()
            .flat_map(|c| c.distribution.iter().map(|p| p[0]))
    };
    let lo = xs().filter(|x| *x > 0.0).fold(f64::MAX, f64::min);
    let hi = xs().fold(0.0, f64::max);
    // A command answered once has no distribution to draw: it is in the percentiles below.
    let dist = cmds.iter().filter(|c| c.latency.count > 1).map(|c| {
        LineChart::new(&c.command, "latency", "%")
            .small()
            .x_log("µs")
            .x_span(lo, hi)
            .series(
                "share of replies",
                c.distribution.iter().map(|p| (p[0], p[1])).collect(),
            )
    });
    page = page
        .section("Latency")
        .subsection("Latency distribution per command (request to reply)")
        .paragraph("Share of each command's replies per latency bucket (buckets √2 apart), one chart per command on a shared axis; a command answered once is only in the percentiles.")
        .grid(dist)
        .bar_chart(
        BarChart::new("Latency percentiles per command", "µs")
            .categories(cmds.iter().map(|c| c.command.clone()))
            .series("p50", cmds.iter().map(|c| c.latency.p50_us))
            .series("p90", cmds.iter().map(|c| c.latency.p90_us))
            .series("p99", cmds.iter().map(|c| c.latency.p99_us)),
    );
    if drivers.len() > 1 {
        // The same command through different drivers.
        let ops: Vec<&String> = cmds
            .iter()
            .map(|c| &c.command)
            .filter(|c| drivers.iter().any(|d| d.per_command.contains_key(*c)))
            .collect();
        let mut chart = BarChart::new("p50 latency per command and driver", "µs")
            .categories(ops.iter().map(|c| c.to_string()));
        for d in drivers {
            chart = chart.series_opt(
                &label_for_people(&d.driver),
                ops.iter().map(|c| d.per_command.get(*c).map(|l| l.p50_us)),
            );
        }
        page = page.bar_chart(chart);
    }
    page
}

/// Round trips and extra commands per logical operation.
fn per_operation(page: Page, drivers: &[&DriverReport]) -> Page {
    let per_op = |d: &&DriverReport, k: Category| {
        d.workload
            .per_op
            .as_ref()
            .map(|p| p.extra.get(k.name()).copied().unwrap_or(0.0))
    };
    let mut chart = BarChart::new("Extra requests per logical operation, per driver", "")
        .note("Requests beyond the operations themselves, on workload connections; monitoring connections are not counted.")
        .categories(drivers.iter().map(|d| label_for_people(&d.driver)));
    for k in [
        Category::Handshake,
        Category::Sessions,
        Category::GetMore,
        Category::KillCursors,
        Category::GetLastError,
    ] {
        chart = chart.series_opt(k.name(), drivers.iter().map(|d| per_op(d, k)));
    }
    page.section("Per logical operation")
        .bar_chart(chart.stacked())
}

/// Throughput and latency over the capture.
fn over_time(page: Page, r: &AnalyzeReport) -> Page {
    let tl = &r.timeline;
    let bucket_note = format!("In buckets of {}.", duration_ns(r.timeline_bucket_s * 1e9));
    // No reply in a bucket: no latency there, and the line breaks.
    let gapped = |f: fn(&TimelinePoint) -> f64| {
        tl.iter()
            .map(|p| (p.t_s, if p.replies > 0 { f(p) } else { f64::NAN }))
            .collect::<Vec<_>>()
    };
    page.section("Over time")
        .line_chart(
            LineChart::new(
                "Throughput: logical operations per second",
                "time into the capture",
                "ops/s",
            )
            .x_unit("s")
            .note(&bucket_note)
            .series("ops/s", tl.iter().map(|p| (p.t_s, p.ops_per_s)).collect()),
        )
        .line_chart(
            LineChart::new(
                "Latency over time (logical operations)",
                "time into the capture",
                "µs",
            )
            .x_unit("s")
            .note(&format!(
                "{bucket_note} A line breaks where a bucket had no reply."
            ))
            .series("mean", gapped(|p| p.mean_us))
            .series("max", gapped(|p| p.max_us)),
        )
}

/// Per driver: where the time went, and the figures per logical operation.
fn driver_table(page: Page, r: &AnalyzeReport) -> Page {
    page.section("Per driver")
        .table(&tables::drivers(r))
        .table(&tables::per_operation(r))
}

/// Every query shape kept, with its whole text.
fn shape_table(page: Page, r: &AnalyzeReport) -> Page {
    if r.shapes.shapes.is_empty() {
        return page;
    }
    let page = page
        .section("Query shapes")
        .paragraph(&format!(
            "Requests with their values replaced by type placeholders (docs/shapes.md), most \
             total time first; getMore and killCursors are charged to the shape of their \
             cursor. At most {} distinct shapes are kept; the rest are counted as other.",
            r.shapes.shapes_cap
        ))
        .table(&tables::shapes(r, usize::MAX));
    if r.shape_histograms.is_empty() {
        return page;
    }
    // One chart, a curve per shape: the shapes side by side on one latency axis.
    let chart = r.shape_histograms.iter().fold(
        LineChart::new(
            "Latency of the shapes with the most time: share of requests within a latency",
            "latency",
            "%",
        )
        .x_log("µs"),
        // The legend cuts a name to its room, the whole text in the entry's tooltip.
        |chart, (text, h)| chart.series(text, super::distribution::cdf_us(h)),
    );
    page.line_chart(chart)
}

/// The commands on workload connections and on the others.
fn command_tables(page: Page, r: &AnalyzeReport) -> Page {
    page.section("Commands on workload connections")
        .table(&tables::commands(&r.commands))
        .section("Commands on monitoring and other connections")
        .table(&tables::commands(&r.other_commands))
}

/// One row per connection.
fn connection_table(page: Page, r: &AnalyzeReport) -> Page {
    page.section("Connections")
        .table(&tables::connections(r, usize::MAX))
}
