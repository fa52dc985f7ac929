//! `--progress`: a bar over the compressed bytes of the capture read so far (all passes), or over
//! time under `--duration`, with the requests sent and their rate. It only reads counters; the replay never waits for it.

use super::route::shared::{Counters, Shared};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) fn progress_bar(
    shared: Arc<Shared>,
    pos: Arc<AtomicU64>,
    len: u64,
    duration: Option<Duration>,
) -> (indicatif::ProgressBar, tokio::task::JoinHandle<()>) {
    // Under --duration the reader runs ahead of the schedule: time is what the bar follows.
    let len = duration.map_or(len, |d| d.as_millis() as u64);
    let bar = indicatif::ProgressBar::new(len.max(1));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta} {msg}",
        )
        .expect("static template"),
    );
    let b = bar.clone();
    let started = Instant::now();
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let at = match duration {
                Some(_) => started.elapsed().as_millis() as u64,
                None => pos.load(Ordering::Relaxed),
            };
            b.set_position(at.min(len));
            let sent = Counters::get(&shared.counters.sent);
            let rate = sent as f64 / started.elapsed().as_secs_f64().max(0.001);
            b.set_message(format!(
                "{sent} ops, {} ops/s",
                crate::report::units::count(rate)
            ));
        }
    });
    (bar, task)
}
