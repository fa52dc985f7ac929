//! `--progress`: a bar with the share of the replay done and its ETA, with the requests sent and
//! their rate. Under `--duration` both follow time; otherwise they follow operations: requests sent
//! out of the requests the replay will send, which the capture read so far tells (exactly once it
//! is read to the end, by extrapolating its bytes before). It only reads counters; the replay never
//! waits for it.

use super::route::counter;
use super::route::shared::Shared;
use crate::figures::units;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bar counts in thousandths.
const STEPS: u64 = 1000;

/// Where a replay stands: what the bar draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Standing {
    /// 0..=1
    pub share: f64,
    /// Seconds left, once there is something to extrapolate from.
    pub eta_s: Option<f64>,
}

/// The counters a standing is worked out from.
pub(super) struct Counts {
    pub elapsed_s: f64,
    pub sent: u64,
    /// Requests handed to the connections so far.
    pub routed: u64,
    /// Capture bytes read so far, and in all (over every pass).
    pub read: u64,
    pub len: u64,
}

pub(super) fn standing(c: &Counts, duration: Option<Duration>) -> Standing {
    if let Some(d) = duration {
        let d = d.as_secs_f64().max(1e-9);
        return Standing {
            share: (c.elapsed_s / d).min(1.0),
            eta_s: Some((d - c.elapsed_s).max(0.0)),
        };
    }
    let read = (c.read as f64 / c.len.max(1) as f64).clamp(0.0, 1.0);
    if c.routed == 0 || read == 0.0 {
        return Standing {
            share: 0.0,
            eta_s: None,
        };
    }
    let total = c.routed as f64 / read;
    let share = (c.sent as f64 / total).min(1.0);
    Standing {
        share,
        eta_s: (share > 0.0).then(|| c.elapsed_s * (1.0 - share) / share),
    }
}

pub(super) fn progress_bar(
    shared: Arc<Shared>,
    pos: Arc<AtomicU64>,
    len: u64,
    duration: Option<Duration>,
) -> (indicatif::ProgressBar, tokio::task::JoinHandle<()>) {
    let bar = indicatif::ProgressBar::new(STEPS);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% {msg}",
        )
        .expect("static template"),
    );
    let b = bar.clone();
    let started = Instant::now();
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let c = Counts {
                elapsed_s: started.elapsed().as_secs_f64(),
                sent: shared.sent(),
                routed: counter::get(&shared.run.counters.routed.0),
                read: pos.load(Ordering::Relaxed),
                len,
            };
            let s = standing(&c, duration);
            b.set_position((s.share * STEPS as f64) as u64);
            b.set_message(format!(
                "ETA {} · {} ops, {} ops/s",
                s.eta_s.map_or("-".into(), units::clock),
                c.sent,
                units::count(c.sent as f64 / c.elapsed_s.max(0.001))
            ));
        }
    });
    (bar, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(elapsed_s: f64, sent: u64, routed: u64, read: u64) -> Counts {
        Counts {
            elapsed_s,
            sent,
            routed,
            read,
            len: 1000,
        }
    }

    #[test]
    fn the_eta_follows_time_under_duration_and_operations_otherwise() {
        let d = Some(Duration::from_secs(60));
        let s = standing(&counts(15.0, 5, 5, 1000), d);
        assert_eq!(
            s,
            Standing {
                share: 0.25,
                eta_s: Some(45.0)
            }
        );
        // Half the capture read gave 400 requests: 800 in all; 200 sent in 10 s: 30 s left.
        let s = standing(&counts(10.0, 200, 400, 500), None);
        assert_eq!(
            s,
            Standing {
                share: 0.25,
                eta_s: Some(30.0)
            }
        );
        // Read to the end: the count is exact.
        let s = standing(&counts(10.0, 500, 1000, 1000), None);
        assert_eq!(
            s,
            Standing {
                share: 0.5,
                eta_s: Some(10.0)
            }
        );
        assert_eq!(standing(&counts(1.0, 0, 0, 0), None).eta_s, None);
    }
}
