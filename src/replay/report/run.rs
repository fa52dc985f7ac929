//! The order kept between requests on different connections (`ordering`, `session_order`) as
//! text, and the run's own counters of an A/B replay ([`RunReport`]): what belongs to the run
//! (the feed, the order; `replay::route::Run`) and not to one target.

use super::{OrderingReport, SessionOrderReport};
use crate::figures::units;
use serde::{Deserialize, Serialize};

/// An A/B replay's own counters, the same for every target: requests the feed held back and the
/// order kept between connections. Each target's report leaves them out (its
/// `skipped.after_deadline` counts its own lanes' only; its `ordering` and `session_order` counts
/// read 0).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct RunReport {
    /// Requests the feed handed to no target: due after `--duration`.
    pub after_deadline: u64,
    /// `--connections N`: requests that followed a write of their namespace sent on another
    /// connection, and the waits for it; `mean_in_flight` is the control's. Null without it.
    pub ordering: Option<OrderingReport>,
    /// One lane per recorded connection: requests that waited for their logical session's
    /// previous request, sent on another connection. Null with `--connections`.
    pub session_order: Option<SessionOrderReport>,
}

impl OrderingReport {
    pub fn text(&self) -> String {
        format!(
            "order: {} request(s) followed a write on another connection, {} waited ({}); {:.1} requests in flight on average over {} connection(s) per clone\n",
            self.followed_a_write,
            self.waited,
            units::duration_s(self.wait_s),
            self.mean_in_flight,
            self.connections
        )
    }
}

impl SessionOrderReport {
    pub fn text(&self) -> String {
        format!(
            "session order: {} request(s) waited for their session's previous request on another connection ({})\n",
            self.waited,
            units::duration_s(self.wait_s)
        )
    }
}

impl RunReport {
    /// Its lines in the A/B text and page: the deadline's count, then the order's.
    pub fn text(&self) -> String {
        let mut out = format!(
            "run (all targets): {} request(s) due after --duration, sent to no target\n",
            self.after_deadline
        );
        if let Some(o) = &self.ordering {
            out.push_str(&o.text());
        }
        if let Some(o) = &self.session_order {
            out.push_str(&format!(
                "session order: {} request(s) followed their session's previous request on another connection, {} waited ({})\n",
                o.followed,
                o.waited,
                units::duration_s(o.wait_s)
            ));
        }
        out
    }
}
