//! Step 5 of the pipeline: what a replay measures. Below everything but `client` (serverStatus).
//!
//! - [`outcome`]: a reply's outcome read in place (recorded and live alike), and the comparison.
//! - [`buckets`]: the timeline in buckets as wide as the run's length calls for.
//! - [`hdr`]: histograms in reports, losslessly (HdrHistogram V2, base64), for exact merging.
//! - [`knee`]: the rate at which an open-loop run stops keeping up, the command that broke, and
//!   whether the server or the replayer's connections held it back.
//! - [`metrics`]: latency per command and namespace, the timeline, schedule lag, divergences.
//! - [`timeline`]: the per-second timeline (per command too in an open-loop run, for the knee).
//! - [`observed`]: what one target answered to one request, for the A/B comparison.
//! - [`sample`]: one finished operation, as metrics and the live figures take it.
//! - [`live`]: `--metrics`, the same operations as live counters and histograms for a scrape.
//! - [`step_phases`]: the replay cut at the capture's step markers ([`step_phases::Marker`]).
//! - [`shapes`]: the replayed figures of each query shape.
//! - [`why`]: errors by command and code, and the K slowest requests, with their shapes.
//! - [`server`]: the server's CPU time and `serverStatus` figures, and this process's CPU time.
//! - [`load`]: the machine's load around the run, and whether other work disturbed it.
//!
//! Layers, bottom up: hdr knee load outcome sample server why < buckets live observed shapes step_phases timeline < metrics

pub mod buckets;
pub mod hdr;
pub mod knee;
pub mod live;
pub mod load;
pub mod metrics;
pub mod observed;
pub mod outcome;
pub mod sample;
pub mod server;
pub mod shapes;
pub mod step_phases;
pub mod timeline;
pub mod why;
