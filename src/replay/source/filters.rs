//! `--command`, `--namespace` and `--connection` (and their `!=` forms): which recorded requests are
//! replayed. Decided once per recorded request, before it is copied for every clone. The matching
//! is `slice::filter`'s, shared with `slice` and `cat`; `--since`, `--until` and `--app` read the
//! capture through a [`crate::slice::Slicer`] (`window`), which keeps cursors and transactions
//! whole.

use crate::replay::request::Request;
use crate::slice::filter::ns_matches;
use crate::slice::SliceOptions;

/// Which recorded requests are replayed. Empty lists accept everything.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub commands: Vec<String>,
    pub exclude_commands: Vec<String>,
    /// `db`, `db.collection`, or a pattern ending in `*`.
    pub namespaces: Vec<String>,
    pub exclude_namespaces: Vec<String>,
    pub connections: Vec<u64>,
    /// `--since`, `--until`, `--app`: applied to the records as they are read.
    pub window: SliceOptions,
    /// The same said for the report (`since=90s`).
    pub window_labels: Vec<String>,
}

impl Filters {
    pub fn accepts(&self, req: &Request) -> bool {
        let cmd = &*req.command;
        let by_command = (self.commands.is_empty() || self.commands.iter().any(|c| c == cmd))
            && !self.exclude_commands.iter().any(|c| c == cmd)
            && (self.connections.is_empty() || self.connections.contains(&req.conn_id));
        if !by_command || (self.namespaces.is_empty() && self.exclude_namespaces.is_empty()) {
            return by_command;
        }
        let ns = req.namespace();
        (self.namespaces.is_empty() || self.namespaces.iter().any(|p| ns_matches(p, &req.db, &ns)))
            && !self
                .exclude_namespaces
                .iter()
                .any(|p| ns_matches(p, &req.db, &ns))
    }
}

/// The key of `filtered_by` for `--command`, `--namespace` and `--connection`.
pub const REQUEST_FILTER: &str = "request_filter";

impl super::SourceResult {
    /// What `--since`/`--until`/`--app` left out of the first pass counts as filtered, as
    /// `--command`'s does.
    pub(super) fn left_out(&mut self, iteration: u64, slice: Option<crate::slice::SliceSummary>) {
        if let (0, Some(s)) = (iteration, slice) {
            self.requests_read += s.dropped_requests_total();
            self.filtered += s.dropped_requests_total();
            for (reason, n) in s.dropped_requests {
                *self.filtered_by.entry(reason).or_default() += n;
            }
        }
    }

    /// A request `--command`, `--namespace` or `--connection` left out (first pass).
    pub(super) fn request_filtered(&mut self) {
        self.filtered += 1;
        *self.filtered_by.entry(REQUEST_FILTER).or_default() += 1;
    }
}
