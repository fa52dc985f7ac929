//! The replay report as text: what was replayed, the latency per command (the table the HTML page
//! shows too, [`ReplayReport::command_table`]), then a line per note worth reading.

use super::ReplayReport;
use crate::figures::summary::{CommandSummary, LatencySummary};
use crate::figures::table::{Column, Field, Table};
use crate::figures::text::fit_lines;
use crate::figures::units;
use crate::replay::measure::knee::KneeReport;
use crate::replay::pacing::Pacing;

/// The knee's sentence (its figures rounded), and the baselines it was measured against.
fn knee_text(k: &KneeReport) -> String {
    let mut out = format!("{}\n", k.summary);
    if k.rate_ops_per_s.is_none() && !k.baselines.is_empty() {
        let mut by_replies: Vec<_> = k.baselines.iter().collect();
        by_replies.sort_by_key(|(_, b)| std::cmp::Reverse(b.replies));
        let each: Vec<String> = by_replies
            .iter()
            .take(3)
            .map(|(c, b)| format!("{c} {}", units::rounded_us(b.p99_us)))
            .collect();
        out.push_str(&format!("  p99 baselines: {}\n", each.join(", ")));
    }
    out
}

/// Under the command table: what `rec` is, and where the other percentiles are.
const RECORDED_LEGEND: &str =
    "rec: the latency recorded through the proxy (it includes the proxy's \
hop)\np90, p99.9 and max: in the JSON and HTML reports\n";

/// Lag below this share of the p50 latency is left unremarked.
const LAG_SMALL: f64 = 0.2;

impl ReplayReport {
    /// The schedule lag, when requests had a schedule (not `--fast`, where nothing waits), and a
    /// warning when it is not small against the latency it is part of.
    fn lag_text(&self) -> String {
        if self.options.pacing == Pacing::Fast.describe() || self.lag.latency.count == 0 {
            return String::new();
        }
        let lag = &self.lag.latency;
        let mut out = format!(
            "schedule lag: p50 {} p99 {} max {}; {} ops >1 ms late\n",
            units::duration_us(lag.p50_us),
            units::duration_us(lag.p99_us),
            units::duration_us(lag.max_us),
            self.lag.behind_1ms
        );
        if self.lag.held > 0 {
            let clock = &self.lag.clock;
            out.push_str(&format!(
                "  {} of {} ops held past their time by earlier replies on their connection or \
                 the order; the rest (the clock's own lag): p50 {} p99 {}\n",
                self.lag.held,
                lag.count,
                units::duration_us(clock.p50_us),
                units::duration_us(clock.p99_us),
            ));
        }
        let from_send = &self.lag.from_send;
        if self.options.open_loop.is_some() && from_send.count > 0 {
            out.push_str(&format!(
                "  latency from the send (the server's own; the table counts from the intended \
                 time): p50 {} p99 {}\n",
                units::duration_us(from_send.p50_us),
                units::duration_us(from_send.p99_us),
            ));
        }
        let p50 = self.summary.overall.latency.p50_us;
        if p50 > 0.0 && lag.p50_us > LAG_SMALL * p50 {
            let part = if self.options.open_loop.is_some() {
                "the latencies above count from the intended send time: that much of them is the replayer's"
            } else {
                "requests went out that much later than the schedule asked"
            };
            out.push_str(&format!(
                "WARNING: lag p50 {} is {:.1}x the p50 latency ({}): {part}\n",
                units::duration_us(lag.p50_us),
                lag.p50_us / p50,
                units::duration_us(p50),
            ));
        }
        out
    }

    pub fn render_text(&self) -> String {
        let s = &self.summary;
        let mut out = String::new();
        match &self.merge {
            Some(m) => out.push_str(&format!(
                "merged {} shard report(s) of a replay of {} against {} ({})\n",
                m.merged.len(),
                self.capture,
                self.target,
                self.options.pacing
            )),
            None => out.push_str(&format!(
                "replayed {} against {} ({})\n",
                self.capture, self.target, self.options.pacing
            )),
        }
        if !self.topology.is_empty() && !self.topology.starts_with("single") {
            out.push_str(&format!("target: {}\n", self.topology));
        }
        out.push_str(&format!(
            "{} ops in {} ({} ops/s), recorded span {}, {} connection(s), {} pass(es)\n",
            s.ops,
            units::duration_s(s.wall_s),
            units::count(s.ops_per_s),
            units::duration_s(self.recorded_span_s),
            self.connections_opened,
            self.iterations
        ));
        if let Some(shard) = &self.shard {
            out.push_str(&format!("shard {} of the capture\n", shard.label));
        }
        out.push_str(&self.restore.as_ref().map_or(String::new(), |r| r.text()));
        out.push_str(&self.command_table().render());
        out.push_str(RECORDED_LEGEND);
        out.push_str(&super::shapes_text::render_text(&self.shapes));
        out.push_str(&self.why_text());
        self.push_notes(&mut out);
        if let Some(plans) = &self.plans {
            out.push_str(&crate::plan::text::text(plans));
        }
        self.push_spent(&mut out);
        self.push_endings(&mut out);
        out.push_str(&self.state.as_ref().map(|s| s.text()).unwrap_or_default());
        fit_lines(&out)
    }

    /// Phases, and what was not replayed, was sent again, waited or diverged, a line each.
    fn push_notes(&self, out: &mut String) {
        if !self.phases.is_empty() {
            out.push_str(
                "phases, from the first connection reaching each step marker to the next:\n",
            );
            out.push_str(&crate::figures::phases::render_text(&self.phases));
        }
        if self.unacknowledged > 0 {
            out.push_str(&format!(
                "{} unacknowledged (moreToCome) requests: counted, no latency\n",
                self.unacknowledged
            ));
        }
        let skipped: Vec<String> = self
            .skipped
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| match k.as_str() {
                "filtered" => format!("filtered {n}{}", self.filtered_reasons()),
                _ => format!("{k} {n}"),
            })
            .collect();
        if !skipped.is_empty() {
            out.push_str(&format!("not replayed: {}\n", skipped.join(", ")));
        }
        if let Some(cut) = &self.snapshot_cut {
            out.push_str(&cut_line(cut));
        }
        if let Some(l) = self
            .connection_limit
            .as_ref()
            .filter(|l| l.wanted > l.limit as u64)
        {
            out.push_str(&format!(
                "connections: at most {} open at once ({}) of the {} the capture holds open at once; {} waited for a slot, {} closed while idle to free one\n",
                l.limit, l.from, l.wanted, l.waited, l.given_up
            ));
        }
        if self.retried_not_primary > 0 {
            out.push_str(&format!(
                "{} requests sent again on the new primary after a \"not primary\" reply\n",
                self.retried_not_primary
            ));
        }
        if self.retried_dropped_connection > 0 {
            out.push_str(&format!(
                "{} requests sent again after the target dropped their connection\n",
                self.retried_dropped_connection
            ));
        }
        out.push_str(&self.lag_text());
        let diverged: u64 = self.divergences.values().map(|d| d.count).sum();
        if diverged > 0 {
            let per: Vec<String> = self
                .divergences
                .iter()
                .map(|(k, d)| format!("{k} {}", d.count))
                .collect();
            out.push_str(&format!(
                "divergences from recorded replies: {diverged} ({})\n",
                per.join(", ")
            ));
        }
    }

    /// What the server and the replayer spent, the knee, and what the order kept cost.
    fn push_spent(&self, out: &mut String) {
        match (self.server.cpu_s, self.server.cpu_s_per_1k_ops) {
            // One shard's ops against a server every shard replays into: no per-op figure.
            (Some(cpu), Some(_)) if self.shard.is_some() => out.push_str(&format!(
                "server CPU: {} (pid {}): the whole server's, shared by every shard (merge the \
                 reports for the CPU per op)\n",
                units::duration_s(cpu),
                self.server.pid.unwrap_or_default()
            )),
            (Some(cpu), Some(per)) => out.push_str(&format!(
                "server CPU: {} ({} per 1,000 ops, pid {})\n",
                units::duration_s(cpu),
                units::duration_s(per),
                self.server.pid.unwrap_or_default()
            )),
            _ => out.push_str("server CPU: not measured (no local server process found)\n"),
        }
        if let (Some(net), Some(per), Some(idle)) = (
            self.server.cpu_net_s,
            self.server.cpu_net_s_per_1k_ops,
            self.server.idle_cpu_cores,
        ) {
            // A shard's ops are not all the server's: no per-op figure there either.
            let per = match self.shard {
                Some(_) => String::new(),
                None => format!("{} per 1,000 ops; ", units::duration_s(per)),
            };
            out.push_str(&format!(
                "server CPU net of idle: {} ({per}idle {:.1}% of a core before the run)\n",
                units::duration_s(net),
                idle * 100.0
            ));
        }
        if let (Some(cpu), Some(per)) = (self.replayer.cpu_s, self.replayer.cpu_us_per_op) {
            let reader = self
                .replayer
                .reader_cpu_us_per_op
                .map(|r| format!(", {} of it reading the capture", units::duration_us(r)))
                .unwrap_or_default();
            out.push_str(&format!(
                "replayer CPU: {} ({} per op{reader})\n",
                units::duration_s(cpu),
                units::duration_us(per)
            ));
        }
        if let Some(load) = &self.load {
            out.push_str(&load.text());
        }
        if let Some(k) = &self.knee {
            out.push_str(&knee_text(k));
        }
        if let Some(o) = &self.ordering {
            out.push_str(&o.text());
        }
        if let Some(o) = self.session_order.as_ref().filter(|o| o.waited > 0) {
            out.push_str(&o.text());
        }
    }

    /// What a merged report adds up, and why the replay ended early.
    fn push_endings(&self, out: &mut String) {
        if let Some(m) = &self.merge {
            out.push_str(&format!(
                "merged {} of {} shard report(s): {}\n",
                m.merged.len(),
                m.shards_expected,
                m.merged.join(", ")
            ));
            if !m.missing.is_empty() {
                out.push_str(&format!("missing shards: {}\n", m.missing.join(", ")));
            }
            for (label, why) in &m.failed {
                out.push_str(&format!("shard {label} failed: {why}\n"));
            }
        }
        if let Some(e) = &self.capture_error {
            out.push_str(&format!("capture stopped early: {e}\n"));
        }
        if let Some(f) = &self.faults {
            out.push_str(&format!("capture: {}\n", f.text()));
        }
        if let Some(e) = &self.error {
            out.push_str(&format!("replay ended early: {e}\n"));
        }
    }

    /// Latency and throughput per command, and over all, with the recorded latency beside the
    /// replayed p50 and p99 and their ratio. The text leaves p90, p99.9 and max to the page (and
    /// the JSON), to fit 100 columns.
    pub fn command_table(&self) -> Table {
        let s = &self.summary;
        let rows: Vec<CommandRow> = (s.per_command.iter())
            .map(|(name, c)| {
                let rec = self.recorded.per_command.get(name).filter(|l| l.count > 0);
                (name.as_str(), c, rec)
            })
            .chain([("(all)", &s.overall, None)])
            .collect();
        Table::of(&command_fields(), &rows)
    }

    /// What `filtered` holds, by filter: ` (263 after --until, 456 command, namespace or
    /// connection left out)`; empty when not known (a report from before `filtered_by`).
    fn filtered_reasons(&self) -> String {
        let mut by: Vec<(&String, &u64)> =
            self.filtered_by.iter().filter(|(_, n)| **n > 0).collect();
        if by.is_empty() {
            return String::new();
        }
        by.sort_by_key(|(k, n)| (std::cmp::Reverse(**n), k.as_str()));
        let said: Vec<String> = by
            .into_iter()
            .map(|(k, n)| {
                let why = crate::slice::summary::ALL_REASONS
                    .iter()
                    .find(|r| r.name() == k)
                    .map(|r| r.for_people())
                    .unwrap_or(match k.as_str() {
                        "request_filter" => "left out by --command, --namespace or --connection",
                        other => other,
                    });
                format!("{n} {why}")
            })
            .collect();
        format!(" ({})", said.join("; "))
    }
}

/// A command's row: its name, its figures, the latency the capture recorded for it.
type CommandRow<'a> = (&'a str, &'a CommandSummary, Option<&'a LatencySummary>);

/// The columns of the table per command, each with its cell.
fn command_fields<'a>() -> [Field<CommandRow<'a>>; 13] {
    [
        (Column::new("command"), |r| r.0.to_owned()),
        (Column::new("count"), |r| r.1.count.to_string()),
        (Column::new("errors"), |r| r.1.errors.to_string()),
        (Column::new("ops/s"), |r| units::count(r.1.ops_per_s)),
        (Column::new("p50"), |r| {
            units::duration_us(r.1.latency.p50_us)
        }),
        (Column::new("rec p50"), |r| recorded(r.2.map(|l| l.p50_us))),
        (Column::new("p50/rec"), |r| {
            ratio(r.1.latency.p50_us, r.2.map(|l| l.p50_us))
        }),
        (Column::new("p90").html_only(), |r| {
            units::duration_us(r.1.latency.p90_us)
        }),
        (Column::new("p99"), |r| {
            units::duration_us(r.1.latency.p99_us)
        }),
        (Column::new("rec p99"), |r| recorded(r.2.map(|l| l.p99_us))),
        (Column::new("p99/rec"), |r| {
            ratio(r.1.latency.p99_us, r.2.map(|l| l.p99_us))
        }),
        (Column::new("p99.9").html_only(), |r| {
            units::duration_us(r.1.latency.p999_us)
        }),
        (Column::new("max").html_only(), |r| {
            units::duration_us(r.1.latency.max_us)
        }),
    ]
}

fn recorded(v: Option<f64>) -> String {
    v.map_or("-".into(), units::duration_us)
}

/// The replayed figure over the recorded one, `-` without a recorded one.
fn ratio(live: f64, recorded: Option<f64>) -> String {
    recorded
        .filter(|v| *v > 0.0)
        .map_or("-".into(), |v| units::ratio(live / v))
}

/// `--skip-snapshotted`: where the replay started, and how the writes were told.
fn cut_line(c: &super::SnapshotCutReport) -> String {
    let held: u64 = c.skipped.values().sum();
    let by: Vec<String> = c.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let mut line =
        format!(
        "snapshot cut at {} by {}: {held} writes already in the snapshot left out{}, {} replayed \
         after it, {} uncertain (replayed)",
        c.t0,
        c.method,
        if by.is_empty() { String::new() } else { format!(" ({})", by.join(", ")) },
        c.replayed,
        c.uncertain
    );
    if c.by_wall_clock > 0 {
        let window = c.window_s.map_or("unknown".into(), |w| format!("{w:.3} s"));
        line.push_str(&format!(
            "; {} placed by the wall clock (no operationTime; uncertainty window {window})",
            c.by_wall_clock
        ));
    }
    for (ns, at) in &c.read_points {
        line.push_str(&format!("; {ns} read at {at}, later than T0"));
    }
    line.push('\n');
    line
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
