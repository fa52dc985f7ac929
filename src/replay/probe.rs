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

    /// Reads `serverStatus` (when asked) and the CPU times at the start.
    pub async fn before(&mut self, server_status: bool) {
        if server_status {
            self.server.status_before = self.status().await;
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

    /// What the server and this process spent, in all and per operation.
    pub fn report(self, ops: u64) -> (ServerReport, ReplayerReport) {
        let per_1k = |cpu: f64| (ops > 0).then(|| cpu / ops as f64 * 1000.0);
        let mut server = self.server;
        if let (Some(b), Some(a)) = (self.server_cpu_before, self.server_cpu_after) {
            server.cpu_s = Some(a - b);
            server.cpu_s_per_1k_ops = per_1k(a - b);
        }
        let replayer = match (self.own_cpu_before, self.own_cpu_after) {
            (Some(b), Some(a)) => ReplayerReport {
                cpu_s: Some(a - b),
                cpu_us_per_op: per_1k(a - b).map(|ms| ms * 1000.0),
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

fn is_local(host: &str) -> bool {
    matches!(
        host,
        "127.0.0.1" | "localhost" | "[::1]" | "::1" | "0.0.0.0"
    ) || host.starts_with("127.")
}
