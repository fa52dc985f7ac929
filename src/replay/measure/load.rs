//! The machine's load around a run, to flag a run that other work disturbed: the 1-minute load
//! average before and after, and the CPU other processes used meanwhile (the machine's busy time
//! from `/proc/stat`, less this process's and the measured server's). The same measure as
//! `tools/compare-drivers` (`MachineLoad` in tools/lib/harness.py), with the same threshold.

use serde::{Deserialize, Serialize};

/// Other processes using more than this share of one core on average disturb a run.
pub const DISTURBED_CORES: f64 = 0.25;

/// What the report says of the machine's load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(default)]
pub struct LoadReport {
    /// The 1-minute load average before and after the run.
    #[schemars(range(min = 0))]
    pub load_before: f64,
    #[schemars(range(min = 0))]
    pub load_after: f64,
    #[schemars(range(min = 0))]
    pub wall_s: f64,
    /// CPU seconds other processes used during the run (neither mongotape nor the measured
    /// server).
    #[schemars(range(min = 0))]
    pub other_cpu_s: f64,
    /// `other_cpu_s` over the wall time: how many cores they kept busy on average.
    #[schemars(range(min = 0))]
    pub other_cores: f64,
    /// `other_cores` above [`DISTURBED_CORES`]: the figures may be off.
    pub disturbed: bool,
}

impl LoadReport {
    /// From the machine's busy seconds and the load average at both ends, less the CPU seconds
    /// of the processes measured (this one, the servers).
    pub fn of(
        before: MachineReading,
        after: MachineReading,
        wall_s: f64,
        measured_cpu_s: f64,
    ) -> LoadReport {
        let other_cpu_s = (after.busy_s - before.busy_s - measured_cpu_s).max(0.0);
        LoadReport {
            load_before: before.load_1m,
            load_after: after.load_1m,
            wall_s,
            other_cpu_s,
            other_cores: 0.0,
            disturbed: false,
        }
        .with_other(other_cpu_s)
    }

    /// The same run with `other_cpu_s` said again (an A/B run takes the other targets' servers
    /// out of it).
    pub fn with_other(mut self, other_cpu_s: f64) -> LoadReport {
        self.other_cpu_s = other_cpu_s.max(0.0);
        self.other_cores = if self.wall_s > 0.0 {
            self.other_cpu_s / self.wall_s
        } else {
            0.0
        };
        self.disturbed = self.other_cores > DISTURBED_CORES;
        self
    }

    /// One line for the text reports.
    pub fn text(&self) -> String {
        let verdict = if self.disturbed {
            "DISTURBED: the figures may be off, run again on a quiet machine"
        } else {
            "quiet"
        };
        format!(
            "machine: {verdict} (other processes {:.2} of a core; load {:.2} before, {:.2} after)\n",
            self.other_cores, self.load_before, self.load_after
        )
    }
}

/// The machine's busy CPU seconds (every core) and its 1-minute load average, now.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MachineReading {
    pub busy_s: f64,
    pub load_1m: f64,
}

impl MachineReading {
    /// `None` off Linux or when `/proc` cannot be read.
    pub fn now(tick_s: f64) -> Option<MachineReading> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
        Some(MachineReading {
            busy_s: busy_ticks(&stat)? as f64 * tick_s,
            load_1m: loadavg.split_whitespace().next()?.parse().ok()?,
        })
    }
}

/// Busy ticks of the `cpu` line: user nice system idle iowait irq softirq steal, less idle and
/// iowait (guest time is already in user).
fn busy_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if fields.len() < 8 {
        return None;
    }
    let idle = fields[3] + fields[4];
    Some(fields.iter().sum::<u64>().saturating_sub(idle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_leaves_idle_and_iowait_out_and_others_are_what_is_not_measured() {
        let stat = "cpu  100 5 50 1000 20 3 2 0 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\n";
        assert_eq!(busy_ticks(stat), Some(160));
        assert_eq!(busy_ticks("cpu 1 2\n"), None);
        let at = |busy_s, load_1m| MachineReading { busy_s, load_1m };
        let quiet = LoadReport::of(at(10.0, 0.5), at(12.1, 0.6), 2.0, 2.0);
        assert!(
            !quiet.disturbed && (quiet.other_cores - 0.05).abs() < 1e-9,
            "{quiet:?}"
        );
        let busy = LoadReport::of(at(10.0, 0.5), at(13.5, 1.6), 2.0, 2.0);
        assert!(
            busy.disturbed && (busy.other_cores - 0.75).abs() < 1e-9,
            "{busy:?}"
        );
        assert!(busy.text().contains("DISTURBED"), "{}", busy.text());
        // Measured more than the machine counted (tick rounding): never negative.
        assert_eq!(
            LoadReport::of(at(10.0, 0.5), at(10.5, 0.5), 2.0, 1.0).other_cpu_s,
            0.0
        );
        assert!(MachineReading::now(0.01).is_some());
    }
}
