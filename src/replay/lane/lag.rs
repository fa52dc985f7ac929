//! How late a request went out against its intended time, whose lateness that was, and in open
//! loop its latency from the actual send beside the one from the intended time.

use crate::replay::route::run::Run;
use tokio::time::Instant;

/// How late a request went out against its intended time, and whether its lane reached it only
/// after that time.
#[derive(Clone, Copy)]
pub(super) struct Lag {
    pub ns: u64,
    pub held: bool,
    /// Open loop: the latency from the actual send.
    pub from_send: Option<u64>,
}

impl Lag {
    /// The latency of a reply read at `done`: in open loop from the intended time (the latency
    /// from the send kept in `from_send`), else from the send.
    pub fn latency(
        &mut self,
        run: &Run,
        intended: Option<Instant>,
        sent_at: Instant,
        done: Instant,
    ) -> u64 {
        let from_send = done.saturating_duration_since(sent_at).as_nanos() as u64;
        match intended.filter(|_| run.pacing.open_loop()) {
            Some(at) => {
                self.from_send = Some(from_send);
                done.saturating_duration_since(at).as_nanos() as u64
            }
            None => from_send,
        }
    }
}
