//! The server measured around the run: its process (`--server-pid`, or the local owner of the
//! target's port), its `serverStatus` before and after, and the CPU time it and this process spent.

use super::config::ReplayConfig;
use super::report::{ReplayerReport, ServerReport};
use crate::net::HostPort;
use crate::replay::client::{Conn, ConnError, Target};
use crate::replay::measure::load::{LoadReport, MachineReading};
use crate::replay::measure::server;
use crate::replay::measure::step_phases::ReplayPhases;

/// Readings taken before and after the run; [`ServerProbe::report`] turns them into the report's.
pub struct ServerProbe {
    tick_s: f64,
    server: ServerReport,
    /// A connection of its own, for `serverStatus`.
    conn: Option<Conn>,
    server_cpu_before: Option<f64>,
    server_cpu_after: Option<f64>,
    own_cpu_before: Option<f64>,
    own_cpu_after: Option<f64>,
    /// The server's CPU rate with nothing sent (cores), read just before the run.
    idle_cores: Option<f64>,
    /// The machine's busy time and load average at both ends, and when they were read.
    machine_before: Option<(MachineReading, std::time::Instant)>,
    machine_after: Option<(MachineReading, std::time::Instant)>,
}

impl ServerProbe {
    /// Finds the server's process: the one given, or the owner of a local target's port.
    pub fn locate(config: &ReplayConfig, host: &HostPort) -> ServerProbe {
        let mut report = ServerReport {
            pid: config.server_pid,
            ..ServerReport::default()
        };
        if config.server_pid.is_some() {
            report.pid_source = Some("--server-pid".into());
        } else if is_local(&host.host) {
            report.pid = server::find_listener_pid(host.port);
            report.pid_source = report.pid.map(|_| "port".into());
        }
        ServerProbe {
            tick_s: server::clock_tick_s(),
            server: report,
            conn: None,
            server_cpu_before: None,
            server_cpu_after: None,
            own_cpu_before: None,
            own_cpu_after: None,
            idle_cores: None,
            machine_before: None,
            machine_after: None,
        }
    }

    /// A first connection (to the primary, the first mongos or the server): checks the target,
    /// credentials included, before anything starts.
    pub async fn connect(
        &mut self,
        target: &Target,
        host: &HostPort,
        timeout: std::time::Duration,
    ) -> Result<(), ConnError> {
        self.conn = Some(Conn::connect(target, host, timeout).await?);
        Ok(())
    }

    /// Reads `serverStatus` (when asked), the server's idle CPU rate over `idle` with nothing
    /// sent (when its process is known and `idle` is not zero), and the CPU times at the start.
    pub async fn before(&mut self, server_status: bool, idle: std::time::Duration) {
        if server_status {
            self.server.status_before = self.status().await;
        }
        if let (Some(pid), false) = (self.server.pid, idle.is_zero()) {
            self.idle_cores = idle_rate(pid, idle).await;
            self.server.idle_sample_s = self.idle_cores.map(|_| idle.as_secs_f64());
            self.server.idle_cpu_cores = self.idle_cores;
        }
        self.server_cpu_before = self.server_cpu();
        self.own_cpu_before = server::own_cpu_seconds(self.tick_s);
        self.machine_before =
            MachineReading::now(self.tick_s).map(|m| (m, std::time::Instant::now()));
    }

    /// Has the step phases read the server's CPU time at every marker.
    pub fn watch_phases(&self, phases: &mut ReplayPhases) {
        if let Some(pid) = self.server.pid {
            phases.measure_server(pid, self.tick_s, self.server_cpu_before);
        }
    }

    /// Reads the CPU times at the end, and `serverStatus` when asked; returns the server's CPU
    /// seconds, to close the last phase.
    pub async fn after(&mut self, server_status: bool) -> Option<f64> {
        self.server_cpu_after = self.server_cpu();
        self.own_cpu_after = server::own_cpu_seconds(self.tick_s);
        self.machine_after =
            MachineReading::now(self.tick_s).map(|m| (m, std::time::Instant::now()));
        if server_status {
            self.server.status_after = self.status().await;
        }
        if let (Some(b), Some(a)) = (&self.server.status_before, &self.server.status_after) {
            self.server.delta = Some(serde_json::json!({
                "opcounters": server::delta(&b.opcounters, &a.opcounters),
                "network": server::delta(&b.network, &a.network),
                "connections": server::delta(&b.connections, &a.connections),
            }));
        }
        self.server_cpu_after
    }

    /// What the server and this process spent over a run of `wall_s`, in all and per
    /// operation; the server's also net of its idle rate.
    pub fn report(self, ops: u64, wall_s: f64) -> (ServerReport, ReplayerReport) {
        let per_1k = |cpu: f64| (ops > 0).then(|| cpu / ops as f64 * 1000.0);
        let mut server = self.server;
        if let (Some(b), Some(a)) = (self.server_cpu_before, self.server_cpu_after) {
            server.cpu_s = Some(a - b);
            server.cpu_s_per_1k_ops = per_1k(a - b);
            if let Some(idle) = self.idle_cores {
                let net = net_cpu(a - b, idle, wall_s);
                server.cpu_net_s = Some(net);
                server.cpu_net_s_per_1k_ops = per_1k(net);
            }
        }
        let replayer = match (self.own_cpu_before, self.own_cpu_after) {
            (Some(b), Some(a)) => ReplayerReport {
                cpu_s: Some(a - b),
                cpu_us_per_op: per_1k(a - b).map(|ms| ms * 1000.0),
                ..ReplayerReport::default()
            },
            _ => ReplayerReport::default(),
        };
        (server, replayer)
    }

    /// The machine's load over the run: what other processes than this one and the measured
    /// server used meanwhile.
    pub fn load(&self) -> Option<LoadReport> {
        let ((before, t0), (after, t1)) = (self.machine_before?, self.machine_after?);
        let delta = |b: Option<f64>, a: Option<f64>| a.zip(b).map_or(0.0, |(a, b)| a - b);
        let measured = delta(self.own_cpu_before, self.own_cpu_after)
            + delta(self.server_cpu_before, self.server_cpu_after);
        let wall_s = t1.duration_since(t0).as_secs_f64();
        Some(LoadReport::of(before, after, wall_s, measured))
    }

    /// The server's report when the run never started.
    pub fn into_server_report(self) -> ServerReport {
        self.server
    }

    fn server_cpu(&self) -> Option<f64> {
        self.server
            .pid
            .and_then(|p| server::cpu_seconds(p, self.tick_s))
    }

    async fn status(&mut self) -> Option<server::StatusSnapshot> {
        let conn = self.conn.as_mut()?;
        match server::server_status(conn).await {
            Ok(s) => Some(s),
            Err(e) => {
                self.server.status_error = Some(e);
                None
            }
        }
    }
}

/// The server's CPU rate (cores) over `window` while nothing is sent, read from its threads'
/// run times (nanoseconds: a tick of `/proc/PID/stat` is 10 ms, as much as an idle server spends
/// in a second).
async fn idle_rate(pid: u32, window: std::time::Duration) -> Option<f64> {
    let start = std::time::Instant::now();
    let before = server::cpu_seconds_fine(pid)?;
    tokio::time::sleep(window).await;
    let after = server::cpu_seconds_fine(pid)?;
    let secs = start.elapsed().as_secs_f64();
    (secs > 0.0).then(|| ((after - before) / secs).max(0.0))
}

/// The server's CPU over a run less what it spends idle over as long: never below zero.
pub fn net_cpu(gross_s: f64, idle_cores: f64, wall_s: f64) -> f64 {
    (gross_s - idle_cores * wall_s.max(0.0)).max(0.0)
}

fn is_local(host: &str) -> bool {
    matches!(
        host,
        "127.0.0.1" | "localhost" | "[::1]" | "::1" | "0.0.0.0"
    ) || host.starts_with("127.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_cpu_takes_the_idle_rate_out_and_stays_positive() {
        // 5 s at 0.04 cores idle: 0.2 s of the 0.5 s was background.
        assert!((net_cpu(0.5, 0.04, 5.0) - 0.3).abs() < 1e-9);
        assert_eq!(net_cpu(0.1, 0.5, 5.0), 0.0);
        assert_eq!(net_cpu(0.1, 0.0, 5.0), 0.1);
    }
}
