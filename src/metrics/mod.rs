//! Live metrics in the Prometheus text exposition, for `record --metrics ADDR` and
//! `replay --metrics ADDR`: the pieces both share. What each one counts is beside what it
//! measures (`proxy::metrics`, `replay::measure::live`); this module holds
//!
//! - [`labels`]: bounded label sets (known commands, opcodes, error codes): a label value never
//!   comes unbounded from the network;
//! - [`histogram`]: a latency histogram of atomics, fixed buckets in seconds, no lock and no
//!   allocation per observation;
//! - [`expose`]: writing counters, gauges and histograms through `prometheus-client`'s encoder;
//! - [`http`]: the endpoint, a minimal HTTP/1.1 server on tokio answering `GET /metrics`.
//!
//! Names are prefixed `mongotape_`, in base units (seconds, bytes), counters end in `_total`.
//!
//! Layers, bottom up: histogram labels < expose < http

pub mod expose;
pub mod histogram;
pub mod http;
pub mod labels;

pub use histogram::LatencyHistogram;
pub use http::{MetricsError, MetricsServer};
