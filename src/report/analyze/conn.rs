//! Where one connection's wall time went: the server's (a request in flight), the client's (nothing
//! in flight, the client preparing its next request) or a gap. Definitions: `docs/analyze.md`.
//!
//! Each interval between two consecutive events of a connection lands in exactly one bucket, so the
//! buckets always add up to the wall time, to the nanosecond.

use serde::{Deserialize, Serialize};

/// Time with no request in flight that is neither the server's nor the client's.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Gaps {
    /// From the connection opening to its first request (TCP set-up, TLS, the driver's pool).
    pub before_first_ns: u64,
    /// Nothing in flight, after the first request but before the connection's first logical
    /// operation: driver and application start-up after the handshake (mongosh spends ~0.5 s
    /// here). On a connection that never sends an operation (a monitor), all such time.
    pub before_first_op_ns: u64,
    /// From the last message to the close, with nothing in flight (the connection idle in a pool).
    pub after_last_ns: u64,
    /// Intervals spanning a recorder gap (messages forwarded but not recorded): unknown.
    pub unattributed_ns: u64,
    /// From the last message to the close while a reply was still due (a request never answered,
    /// or an exhaust stream still open, e.g. an awaitable `hello` when the client hung up).
    pub waiting_at_close_ns: u64,
}

impl Gaps {
    pub fn total_ns(&self) -> u64 {
        self.before_first_ns
            + self.before_first_op_ns
            + self.after_last_ns
            + self.unattributed_ns
            + self.waiting_at_close_ns
    }

    fn add(&mut self, o: &Gaps) {
        self.before_first_ns += o.before_first_ns;
        self.before_first_op_ns += o.before_first_op_ns;
        self.after_last_ns += o.after_last_ns;
        self.unattributed_ns += o.unattributed_ns;
        self.waiting_at_close_ns += o.waiting_at_close_ns;
    }
}

/// `wall_ns == server_ns + client_ns + gaps.total_ns()`, always.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TimeSplit {
    pub wall_ns: u64,
    /// A request was in flight: from a request to its reply (or an exhaust stream's next push).
    pub server_ns: u64,
    /// Nothing in flight: from a reply (or a fire-and-forget request) to the next request.
    pub client_ns: u64,
    pub gaps: Gaps,
}

impl TimeSplit {
    pub fn add(&mut self, o: &TimeSplit) {
        self.wall_ns += o.wall_ns;
        self.server_ns += o.server_ns;
        self.client_ns += o.client_ns;
        self.gaps.add(&o.gaps);
    }

    /// The client's share of the active time (server + client); `None` when there was none.
    pub fn client_bound_share(&self) -> Option<f64> {
        let active = self.server_ns + self.client_ns;
        (active > 0).then(|| self.client_ns as f64 / active as f64)
    }

    /// Whether the buckets add up to the wall time.
    pub fn adds_up(&self) -> bool {
        self.server_ns + self.client_ns + self.gaps.total_ns() == self.wall_ns
    }
}

/// Walks one connection's events in order and splits its time.
#[derive(Debug, Clone)]
pub struct ConnClock {
    start_ns: u64,
    cursor_ns: u64,
    started: bool,
    /// A logical operation was sent.
    operating: bool,
    /// Requests sent that wait for a reply.
    pending: u32,
    /// The last reply had moreToCome: the server will push another.
    exhaust: bool,
    /// A recorder gap happened since this connection's last event.
    tainted: bool,
    split: TimeSplit,
}

impl ConnClock {
    pub fn new(start_ns: u64) -> ConnClock {
        ConnClock {
            start_ns,
            cursor_ns: start_ns,
            started: false,
            operating: false,
            pending: 0,
            exhaust: false,
            tainted: false,
            split: TimeSplit::default(),
        }
    }

    /// Where the clock stands and the server and client time booked so far: an event's interval is
    /// the difference of this before and after it.
    pub fn booked(&self) -> (u64, u64, u64) {
        (self.cursor_ns, self.split.server_ns, self.split.client_ns)
    }

    /// True while the connection waits on the server.
    pub fn awaiting(&self) -> bool {
        self.pending > 0 || self.exhaust
    }

    /// Moves the clock to `ts_ns` and books the interval; events slightly out of order count as 0.
    fn advance(&mut self, ts_ns: u64) {
        let d = ts_ns.saturating_sub(self.cursor_ns);
        self.cursor_ns = self.cursor_ns.max(ts_ns);
        let s = &mut self.split;
        if !self.started {
            s.gaps.before_first_ns += d;
        } else if self.tainted {
            s.gaps.unattributed_ns += d;
        } else if self.pending > 0 || self.exhaust {
            s.server_ns += d;
        } else if !self.operating {
            s.gaps.before_first_op_ns += d;
        } else {
            s.client_ns += d;
        }
    }

    /// A request; `operation` when it is a logical operation (not handshake, getMore, ...).
    pub fn request(&mut self, ts_ns: u64, expects_reply: bool, operation: bool) {
        self.advance(ts_ns);
        self.operating |= operation;
        if self.tainted {
            // Replies may have been lost in the gap: start over from this request.
            self.pending = 0;
            self.exhaust = false;
            self.tainted = false;
        }
        self.started = true;
        if expects_reply {
            self.pending = self.pending.saturating_add(1);
        }
    }

    /// A reply; `answered` when it answers a request seen on this connection.
    pub fn reply(&mut self, ts_ns: u64, answered: bool, more_to_come: bool) {
        self.advance(ts_ns);
        self.tainted = false;
        if answered {
            self.pending = self.pending.saturating_sub(1);
        }
        if answered || self.exhaust {
            self.exhaust = more_to_come;
        }
    }

    /// A recorder gap: the interval up to this connection's next event is unknown.
    pub fn gap(&mut self) {
        if self.started {
            self.tainted = true;
        }
    }

    /// Closes the books at `ts_ns` (the close, or the capture's end for a connection left open).
    pub fn close(mut self, ts_ns: u64) -> TimeSplit {
        let d = ts_ns.saturating_sub(self.cursor_ns);
        self.cursor_ns = self.cursor_ns.max(ts_ns);
        let g = &mut self.split.gaps;
        if !self.started {
            g.before_first_ns += d;
        } else if self.tainted {
            g.unattributed_ns += d;
        } else if self.pending > 0 || self.exhaust {
            g.waiting_at_close_ns += d;
        } else {
            g.after_last_ns += d;
        }
        self.split.wall_ns = self.cursor_ns - self.start_ns;
        self.split
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_reply_think_time_and_idle() {
        let mut c = ConnClock::new(1_000);
        c.request(1_100, true, false); // 100 before the first request: a handshake
        c.reply(1_150, true, false); // 50 server
        c.request(1_250, true, true); // 100 start-up before the first operation
        c.reply(1_300, true, false); // 50 server
        c.request(1_600, true, true); // 300 client
        c.reply(1_620, true, false); // 20 server
        let s = c.close(2_150); // 530 idle after
        assert_eq!(s.wall_ns, 1_150);
        assert_eq!(s.server_ns, 120);
        assert_eq!(s.client_ns, 300);
        assert_eq!(s.gaps.before_first_op_ns, 100);
        assert_eq!(s.gaps.before_first_ns, 100);
        assert_eq!(s.gaps.after_last_ns, 530);
        assert!(s.adds_up());
        assert_eq!(s.client_bound_share(), Some(300.0 / 420.0));
    }

    #[test]
    fn fire_and_forget_is_client_time_and_exhaust_is_server_time() {
        let mut c = ConnClock::new(0);
        c.request(10, false, true);
        c.request(30, false, true); // 20 client: nothing in flight
        c.request(40, true, true); // 10 client
        c.reply(50, true, true); // 10 server, exhaust opens
        c.reply(80, false, true); // 30 server: a push
        c.reply(90, false, false); // 10 server, stream ends
        let s = c.close(100);
        assert_eq!(
            (s.client_ns, s.server_ns, s.gaps.after_last_ns),
            (30, 50, 10)
        );
        assert!(s.adds_up());
    }

    #[test]
    fn unanswered_gap_and_out_of_order_events() {
        let mut c = ConnClock::new(100);
        c.request(200, true, true);
        c.reply(150, true, false); // earlier than the cursor: 0
        c.request(300, true, true); // 100 client
        c.gap();
        c.reply(400, true, false); // 100 unattributed
        c.request(500, true, true); // 100 client
        let s = c.close(50); // before the cursor: 0 waiting
        assert_eq!(s.wall_ns, 400);
        assert_eq!(s.gaps.unattributed_ns, 100);
        assert_eq!(s.client_ns, 200);
        assert!(s.adds_up());
        let mut c = ConnClock::new(0);
        c.request(10, true, false);
        let s = c.close(60);
        assert_eq!(s.gaps.waiting_at_close_ns, 50);
        assert!(s.adds_up());
    }
}
