//! What followed the faults, summed (`analyze`'s `faults`): per rule, per driver and per
//! connection, and the text table of docs/faults.md#what-the-client-did-next.

use super::follow::{Followed, Seen};
use serde::{Deserialize, Serialize};

/// Drivers and connections told apart in [`FaultOutcomes`] rows; more are summed in the last.
const MAX_BY: usize = 64;

/// What the client did after the faults of a rule, a driver or a connection, each fault counted
/// once per column (a fault can be followed by a reconnection and a retry both). Looked for
/// within 30 s of each fault (or by the capture's end), by the same client: the same peer host,
/// driver name and application name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FaultOutcomes {
    /// Faults followed.
    pub faults: u64,
    /// (a) Sent again with the same `lsid` and `txnNumber`: a retryable write's (or a
    /// transaction statement's) retry by the driver.
    pub write_retried: u64,
    /// (b) A read (any command but insert, update, delete, findAndModify, bulkWrite) sent again
    /// with the same command and body, on any connection of the same client.
    pub read_retried: u64,
    /// (f) A write's documents sent again without the same `lsid` and `txnNumber` (an
    /// application's own retry, or a driver with retryable writes off): same command, namespace,
    /// options and documents, leaving out `lsid`, `txnNumber`, `$clusterTime` and an inserted
    /// document's ObjectId `_id`.
    pub resent: u64,
    /// (f) Of `resent`, those after a fault that let the write through (reply_error,
    /// close_after, delays, write_concern_error) whose resend the server acknowledged (`ok: 1`,
    /// no write error, `n` above 0): the write was applied twice.
    pub applied_twice: u64,
    /// (c) Neither retried nor resent: the error was given up to the application.
    pub given_up: u64,
    /// (d) A connection of the same client opened after the fault and said hello: a new
    /// connection with its handshake.
    pub reconnected: u64,
    /// (e) A hello on a monitoring connection of the same client (one that only ever sent
    /// hello/isMaster) after the fault: a server selection round, or a heartbeat that happened
    /// to fall in the window.
    pub server_selection: u64,
}

impl FaultOutcomes {
    /// No fault followed: not reported.
    pub fn is_empty(&self) -> bool {
        self.faults == 0
    }

    pub fn add(&mut self, s: &Seen) {
        self.faults += 1;
        self.write_retried += u64::from(s.write_retried);
        self.read_retried += u64::from(s.read_retried);
        self.resent += u64::from(s.resent);
        self.applied_twice += u64::from(s.applied_twice);
        self.given_up += u64::from(s.given_up());
        self.reconnected += u64::from(s.reconnected);
        self.server_selection += u64::from(s.server_selection);
    }

    fn cells(&self) -> String {
        format!(
            "{:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
            self.faults,
            self.write_retried,
            self.read_retried,
            self.resent,
            self.applied_twice,
            self.given_up,
            self.reconnected,
            self.server_selection
        )
    }
}

/// What followed the faults of one driver or one connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FaultsBy {
    /// The driver's name and the application's (`nodejs app=orders`), or the connection's id
    /// (`conn 12`); past 64 rows, the last is `other`: the 64th and every later one summed.
    pub name: String,
    #[serde(flatten)]
    pub after: FaultOutcomes,
}

/// Books a followed fault in `rows` under `name`.
pub fn book(rows: &mut Vec<FaultsBy>, name: String, seen: &Seen) {
    let at = match rows.iter().position(|r| r.name == name) {
        Some(at) => at,
        None if rows.len() < MAX_BY => {
            rows.push(FaultsBy {
                name,
                ..FaultsBy::default()
            });
            rows.len() - 1
        }
        None => {
            rows[MAX_BY - 1].name = "other".into();
            MAX_BY - 1
        }
    };
    rows[at].after.add(seen);
}

/// The driver row's name of a followed fault.
pub fn driver_name(f: &Followed) -> String {
    let driver = if f.client.driver.is_empty() {
        "unknown driver"
    } else {
        &f.client.driver
    };
    if f.client.app.is_empty() {
        driver.to_owned()
    } else {
        format!("{driver} app={}", f.client.app)
    }
}

/// The text table: one line per row, `(a)` to `(e)` as in [`FaultOutcomes`].
pub fn table<'r>(rows: impl Iterator<Item = (String, &'r FaultOutcomes)>) -> String {
    let mut out = format!(
        "  {:<28} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}\n",
        "after the faults",
        "faults",
        "w-retr",
        "r-retr",
        "resent",
        "twice",
        "gaveup",
        "reconn",
        "select"
    );
    for (name, o) in rows {
        let name: String = name.chars().take(28).collect();
        out.push_str(&format!("  {name:<28} {}\n", o.cells()));
    }
    out
}
