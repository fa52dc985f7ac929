//! The end of a connection and the end of the capture in `mongotape analyze`: a closing connection
//! gets its role (workload, monitoring, handshake only, idle) and is added to the totals and to its
//! driver's; at the end the connections still open are closed and the report is assembled.

use super::tally::{Tally, FOLDED};
use super::{AnalyzeReport, Category, CommandReport, DriverReport, Role};
use crate::figures::summary::{CommandSummary, LatencySummary, ReportSummary};
use crate::wire::info::is_handshake_command;

/// Drivers told apart; further ones are counted under `(other drivers)`.
const MAX_DRIVERS: usize = 32;
/// Query shapes whose latency the page draws (the most total time).
const MAX_SHAPE_CHARTS: usize = 8;
const OTHER_DRIVERS: &str = "(other drivers)";
/// Connections listed one by one in the report; all of them count in the totals.
pub(super) const MAX_CONN_REPORTS: usize = 10_000;

impl Tally {
    pub(super) fn close(&mut self, conn_id: u64, ts: u64, closed: bool) {
        let folded = self.unfold(conn_id);
        if folded || conn_id != FOLDED {
            self.facts.unanswered_requests += self.pairer.close(conn_id).len() as u64;
            self.markers.retain(|k, _| k.0 != conn_id);
        }
        if folded {
            return;
        }
        let Some(mut c) = self.conns.remove(&conn_id) else {
            return;
        };
        let role = if c.workload {
            Role::Workload
        } else if c.report.requests == 0 {
            Role::Idle
        } else if c.awaitable || c.hellos >= 2 {
            Role::Monitoring
        } else {
            Role::HandshakeOnly
        };
        if !c.workload {
            let deferred = std::mem::take(&mut c.deferred);
            if deferred.requests > 0 {
                let cat = if role == Role::Monitoring {
                    Category::Monitoring
                } else {
                    Category::Handshake
                };
                *c.report.extra.entry(cat.name().into()).or_default() += deferred.requests;
            }
            self.flush(deferred, false);
        }
        c.report.role = Some(role);
        c.report.closed = closed;
        c.report.times = c.clock.close(ts);
        c.report.client_bound_share = c.report.times.client_bound_share();
        let mut key = c.report.driver_key();
        if self.drivers.len() >= MAX_DRIVERS && !self.drivers.contains_key(&key) {
            key = OTHER_DRIVERS.to_owned();
        }
        let d = self
            .drivers
            .entry(key.clone())
            .or_insert_with(|| DriverReport {
                driver: key,
                ..Default::default()
            });
        if role == Role::Workload {
            self.workload.add(&c.report);
            d.workload.add(&c.report);
        } else {
            self.other.add(&c.report);
            d.other.add(&c.report);
        }
        if conn_id == FOLDED {
            // One entry stands for every folded connection; none is listed.
            let more = self.facts.connections_folded.saturating_sub(1);
            self.workload.connections += more;
            d.workload.connections += more;
            return;
        }
        if self.done.len() < MAX_CONN_REPORTS {
            self.done.push(c.report);
        } else {
            self.conns_not_listed += 1;
        }
    }

    pub(super) fn finish(
        mut self,
        meta: crate::capture::Metadata,
        source: &str,
        label: Option<&str>,
    ) -> AnalyzeReport {
        let mut open: Vec<u64> = self.conns.keys().copied().collect();
        open.sort_unstable();
        let end = self.last_ns;
        for id in open {
            self.close(id, end, false);
        }
        self.facts.unanswered_requests += self.pairer.drain().len() as u64;
        self.facts.unanswered_untracked = self.pairer.untracked;
        self.done.sort_by_key(|c| c.id);
        self.facts.start_time = meta.start_time;
        self.facts.upstream = meta.upstream;
        self.facts.source = meta.source;
        self.facts.slice = meta.slice;
        if let Some(first) = self.first_ns {
            self.facts.duration_s = self.last_ns.saturating_sub(first) as f64 / 1e9;
        }

        let mut workload = std::mem::take(&mut self.workload);
        let mut other = std::mem::take(&mut self.other);
        let drivers = std::mem::take(&mut self.drivers);
        workload.finish();
        other.finish();
        let mut drivers: Vec<DriverReport> = drivers.into_values().collect();
        for d in &mut drivers {
            d.workload.finish();
            d.other.finish();
            if let Some(per) = self.driver_cmds.get(&d.driver) {
                d.per_command = per
                    .iter()
                    .map(|(k, h)| (k.clone(), LatencySummary::from_ns_histogram(h)))
                    .collect();
            }
        }

        let commands = std::mem::take(&mut self.workload_cmds).reports(true);
        let summary = self.summary(&commands, source, label, workload.client_bound_share);
        let timeline = self.timeline.points();
        let phases = self.phases.reports(self.first_ns.unwrap_or(0), true);
        let (errors, slowest) = self.why.report();
        AnalyzeReport {
            schema_version: crate::figures::SCHEMA_VERSION,
            summary,
            faults: self.faults.take().filter(|f| f.total > 0).map(|mut f| {
                f.finish();
                f
            }),
            capture: self.facts,
            workload,
            other,
            drivers,
            commands,
            other_commands: self.other_cmds.reports(false),
            connections: self.done,
            connections_not_listed: self.conns_not_listed,
            timeline_bucket_s: self.timeline.bucket_s(),
            timeline,
            phases,
            errors,
            slowest,
            shape_histograms: self.shapes.top_histograms(MAX_SHAPE_CHARTS),
            shapes: self.shapes.report(),
            plans: None,
        }
    }

    /// The summary `compare` reads: the operations a replay replays, over the span from the first
    /// to the last of them.
    fn summary(
        &self,
        commands: &[CommandReport],
        source: &str,
        label: Option<&str>,
        client_bound_share: Option<f64>,
    ) -> ReportSummary {
        let wall_s = self
            .span
            .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9)
            .unwrap_or(0.0);
        let overall = CommandSummary::of(
            self.replayable,
            self.replayable_errors,
            wall_s,
            self.replayable_hist
                .as_ref()
                .map(LatencySummary::from_ns_histogram)
                .unwrap_or_default(),
        );
        let per_command = commands
            .iter()
            .filter(|c| !is_handshake_command(&c.command))
            .map(|c| {
                let s = CommandSummary::of(c.requests, c.errors, wall_s, c.latency.clone());
                (c.command.clone(), s)
            })
            .collect();
        let mut s = ReportSummary::of(
            "analyze",
            label.unwrap_or(source).to_owned(),
            source.to_owned(),
            wall_s,
            overall,
            per_command,
        );
        s.client_bound_share = client_bound_share;
        s
    }
}
