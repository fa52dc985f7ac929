//! A tap on the proxy's side channel: every record the connections hand the recorder (opens,
//! requests, replies, closes) is shown to the tap too, after the bytes were forwarded. A tap must
//! return at once (it runs on the forwarding path): `mongotape shadow` queues what it wants with
//! a bound and sheds the rest.

use crate::capture::Record;

/// What sees the proxy's records beside the recorder.
pub trait Tap: Send + Sync {
    /// Called for every record, in each connection's order; must not wait.
    fn record(&self, record: &Record);
}
