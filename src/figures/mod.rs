//! The figures and their text that every report shares, one floor below the products that print
//! them (`report/`, `replay/`, the proxy's status line), so that none of those has to import
//! another to say a number the same way.
//!
//! - [`units`]: every number as text: durations, bytes, counts, rates, shares.
//! - [`table`]: the table model of every report, rendered as text and HTML.
//! - [`text`]: text cut to fit, with `…`, and sentences wrapped to the terminal's width.
//! - [`summary`]: the summary every report carries (`compare` reads it back), and the histogram
//!   bounds every latency is kept in.
//! - [`phases`]: the figures per phase, cut at step markers, with their text table.
//! - [`buckets`]: how wide a timeline's points are, for any run's length.
//! - [`drivers`]: a client's driver name and version as people say them.
//! - [`errors`]: errors counted by command and code (`errors_by_code`), bounded.
//! - [`slowest`]: the K slowest requests, a bounded min-heap, with their bodies as JSON.
//! - [`report_file`]: reading a report file back, bounded (`merge`, `compare`).
//! - [`failures`]: the warning for a run in which a large share of the operations failed.
//!
//! Layers, bottom up: text < buckets drivers report_file summary table units < errors phases slowest < failures

pub use report_file::SCHEMA_VERSION;

pub mod buckets;
pub mod drivers;
pub mod errors;
pub mod failures;
pub mod phases;
pub mod report_file;
pub mod slowest;
pub mod summary;
pub mod table;
pub mod text;
pub mod units;
