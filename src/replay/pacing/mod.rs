//! Pacing: when each request goes out (`--speed`, `--fast`, `--rate`, `--rate A..B --ramp T`),
//! and the clock that wakes a lane at that time ([`timer`]).
//!
//! Layers, bottom up: timer

pub mod timer;

use std::time::Duration;
use tokio::time::Instant;

/// When requests are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// At their recorded times divided by `speed`, each connection waiting for its replies.
    Recorded { speed: f64 },
    /// As fast as the server answers, each connection waiting for its replies (closed loop).
    Fast,
    /// Request `i` is due at `start + i / ops_per_s`; latency counts from that intended time, so a
    /// server that falls behind shows its queueing instead of slowing the schedule down.
    Rate { ops_per_s: f64 },
    /// Open loop like `Rate`, the rate rising linearly from `from` to `to` over `over_s` seconds
    /// (then held at `to`), in `steps` equal stairs when `steps > 0`.
    Ramp {
        from: f64,
        to: f64,
        over_s: f64,
        steps: u32,
    },
}

impl Pacing {
    /// The intended send time of the `seq`-th request, recorded `offset_ns` after the first one.
    pub fn due_at(&self, start: Instant, offset_ns: u64, seq: u64) -> Option<Instant> {
        let secs = match *self {
            Pacing::Recorded { speed } => offset_ns as f64 / 1e9 / speed,
            Pacing::Fast => return None,
            Pacing::Rate { ops_per_s } => seq as f64 / ops_per_s,
            Pacing::Ramp { .. } => self.ramp_time_of(seq as f64),
        };
        Some(start + Duration::from_secs_f64(secs.clamp(0.0, 1e9)))
    }

    /// How long before its first request a connection is opened, for a recorded lead of `lead_ns`:
    /// scaled by `--speed` at recorded timing, as recorded in open loop (a handshake takes as long
    /// at any rate), none in closed loop (the connection opens at once anyway).
    pub fn connect_lead(&self, lead_ns: u64) -> Duration {
        match *self {
            Pacing::Recorded { speed } => {
                Duration::try_from_secs_f64(lead_ns as f64 / 1e9 / speed).unwrap_or(Duration::MAX)
            }
            Pacing::Fast => Duration::ZERO,
            Pacing::Rate { .. } | Pacing::Ramp { .. } => Duration::from_nanos(lead_ns),
        }
    }

    /// The intended rate `t` seconds after the start (open loop only).
    pub fn rate_at(&self, t: f64) -> Option<f64> {
        match *self {
            Pacing::Rate { ops_per_s } => Some(ops_per_s),
            Pacing::Ramp {
                from,
                to,
                over_s,
                steps,
            } => Some(if t >= over_s {
                to
            } else if steps > 0 {
                let stair = (t / over_s * steps as f64).floor();
                from + (to - from) * stair / (steps as f64 - 1.0).max(1.0)
            } else {
                from + (to - from) * t / over_s
            }),
            _ => None,
        }
    }

    /// Requests due in the first `t` seconds (the integral of the rate).
    pub fn sent_by(&self, t: f64) -> f64 {
        match *self {
            Pacing::Rate { ops_per_s } => ops_per_s * t,
            Pacing::Ramp {
                from,
                to,
                over_s,
                steps,
            } => {
                if steps > 0 {
                    // Whole stairs, then the part of the current one.
                    let width = over_s / steps as f64;
                    let mut n = 0.0;
                    let mut s = 0.0;
                    while s + width <= t.min(over_s) {
                        n += self.rate_at(s).unwrap_or(to) * width;
                        s += width;
                    }
                    if t < over_s {
                        n + self.rate_at(s).unwrap_or(to) * (t - s)
                    } else {
                        n + to * (t - over_s)
                    }
                } else if t <= over_s {
                    from * t + (to - from) * t * t / (2.0 * over_s)
                } else {
                    (from + to) * over_s / 2.0 + to * (t - over_s)
                }
            }
            _ => 0.0,
        }
    }

    /// When request `i` is due under a ramp: `sent_by(t) = i` solved for `t`.
    fn ramp_time_of(&self, i: f64) -> f64 {
        let Pacing::Ramp {
            from,
            to,
            over_s,
            steps,
        } = *self
        else {
            return 0.0;
        };
        if steps > 0 {
            let width = over_s / steps as f64;
            let mut n = 0.0;
            let mut s = 0.0;
            while s + width <= over_s + 1e-9 {
                let r = self.rate_at(s).unwrap_or(to);
                if n + r * width > i {
                    return s + (i - n) / r;
                }
                n += r * width;
                s += width;
            }
            return over_s + (i - n) / to;
        }
        let at_end = (from + to) * over_s / 2.0;
        if i >= at_end {
            return over_s + (i - at_end) / to;
        }
        let slope = (to - from) / over_s;
        if slope.abs() < 1e-12 {
            return i / from;
        }
        (-from + (from * from + 2.0 * slope * i).max(0.0).sqrt()) / slope
    }

    /// Whether latency counts from the intended send time rather than the actual one.
    pub fn open_loop(&self) -> bool {
        matches!(self, Pacing::Rate { .. } | Pacing::Ramp { .. })
    }

    /// The same pacing for one of `shards` processes that share the load: rates divided.
    pub fn per_shard(&self, shards: u32) -> Pacing {
        let n = shards.max(1) as f64;
        match *self {
            Pacing::Rate { ops_per_s } => Pacing::Rate {
                ops_per_s: ops_per_s / n,
            },
            Pacing::Ramp {
                from,
                to,
                over_s,
                steps,
            } => Pacing::Ramp {
                from: from / n,
                to: to / n,
                over_s,
                steps,
            },
            p => p,
        }
    }

    /// Rates positive and finite, a ramp with a positive length.
    pub fn validate(&self) -> Result<(), String> {
        let ok = |v: f64| v > 0.0 && v.is_finite();
        match *self {
            Pacing::Recorded { speed } if !ok(speed) => {
                Err("--speed must be a positive number".into())
            }
            Pacing::Rate { ops_per_s } if !ok(ops_per_s) => {
                Err("--rate must be a positive number".into())
            }
            Pacing::Ramp {
                from, to, over_s, ..
            } if !(ok(from) && ok(to) && ok(over_s)) => {
                Err("--rate A..B needs positive rates and --ramp a positive duration".into())
            }
            _ => Ok(()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Pacing::Recorded { speed } => format!("recorded timing x{speed}"),
            Pacing::Fast => "fast (closed loop)".into(),
            Pacing::Rate { ops_per_s } => format!("rate {ops_per_s} ops/s (open loop)"),
            Pacing::Ramp {
                from,
                to,
                over_s,
                steps,
            } => {
                let how = if *steps > 0 {
                    format!("in {steps} steps")
                } else {
                    "linear".into()
                };
                format!("ramp {from}..{to} ops/s over {over_s} s, {how} (open loop)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linear_ramp_sends_its_integral() {
        let p = Pacing::Ramp {
            from: 100.0,
            to: 300.0,
            over_s: 10.0,
            steps: 0,
        };
        assert!((p.sent_by(10.0) - 2000.0).abs() < 1e-6);
        for i in [0.0, 1.0, 500.0, 1999.0, 2000.0, 2600.0] {
            let t = p.ramp_time_of(i);
            assert!((p.sent_by(t) - i).abs() < 1e-6, "{i} -> {t}");
        }
        assert_eq!(p.rate_at(5.0), Some(200.0));
        assert_eq!(p.rate_at(20.0), Some(300.0));
    }

    #[test]
    fn a_stepped_ramp_holds_each_stair() {
        let p = Pacing::Ramp {
            from: 100.0,
            to: 400.0,
            over_s: 8.0,
            steps: 4,
        };
        assert_eq!(p.rate_at(0.5), Some(100.0));
        assert_eq!(p.rate_at(2.5), Some(200.0));
        assert_eq!(p.rate_at(7.9), Some(400.0));
        assert!((p.sent_by(8.0) - (200.0 + 400.0 + 600.0 + 800.0)).abs() < 1e-6);
        for i in [0.0, 150.0, 200.0, 1999.0, 2500.0] {
            let t = p.ramp_time_of(i);
            assert!((p.sent_by(t) - i).abs() < 1e-6, "{i} -> {t}");
        }
    }

    #[test]
    fn shards_split_the_rate() {
        let p = Pacing::Rate { ops_per_s: 400.0 }.per_shard(4);
        assert_eq!(p, Pacing::Rate { ops_per_s: 100.0 });
    }
}
