//! The passes over the capture (`--repeat`, `--duration`): each starts on schedule after the one
//! before, or once it is answered (a closed loop, or `--restore`, whose load runs in between).

use super::Feed;

impl Feed<'_> {
    /// Every pass over the capture, each starting on schedule after the one before, until the
    /// last, the deadline, an abort, or a pass with nothing to replay.
    pub(super) fn passes(&mut self) {
        loop {
            if self.cfg.repeat.is_some_and(|r| self.iteration >= r) {
                break;
            }
            if self.iteration > 0 {
                // A pass starts where the previous one ended on schedule, or later if it ran late.
                let scheduled = self.iteration * (self.result.recorded_span_ns + 1_000_000);
                let before = self.cfg.before_pass.as_ref();
                self.pass_base_ns = if self.cfg.pass_barrier || before.is_some() {
                    if !self.shared.run.budget.wait_empty(&self.shared.run.abort) {
                        break;
                    }
                    if let Some(Err(why)) = before.map(|f| f()) {
                        self.shared.run.abort.trigger(why);
                        break;
                    }
                    scheduled.max(self.shared.run.start.elapsed().as_nanos() as u64)
                } else {
                    scheduled
                };
            }
            if self.iteration > 0 && self.due_after_deadline(0) {
                break;
            }
            let seq_before = self.seq;
            let go_on = self.pass();
            self.iteration += 1;
            if !go_on
                || self.past_deadline
                || self.deadline_passed()
                || self.shared.run.abort.is_set()
            {
                break;
            }
            if self.first_ts.is_none() || self.seq == seq_before {
                // Nothing replayable (here, on this shard): repeating would spin.
                break;
            }
        }
    }
}
