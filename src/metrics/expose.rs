//! Writing metrics through `prometheus-client`'s encoder from a [`Collector`], at scrape time, out
//! of the atomics the proxy and the replayer bump. Names carry their unit (`_seconds`, `_bytes`);
//! the encoder adds `_total` to counters and the registry's `mongotape_` prefix.
//!
//! [`Collector`]: prometheus_client::collector::Collector

use super::histogram::HistogramSnapshot;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::fmt::Result;

/// One label, as the families below take them.
pub type Label = [(&'static str, String); 1];

pub fn label(key: &'static str, value: impl Into<String>) -> Label {
    [(key, value.into())]
}

pub fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> Result {
    enc.encode_descriptor(name, help, None, MetricType::Counter)?
        .encode_counter::<NoLabelSet, _, u64>(&value, None)
}

pub fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, value: f64) -> Result {
    enc.encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&value)
}

/// A counter per label set (series with a zero count are written too: a scrape names every
/// series it can have, so rates start from the first scrape).
pub fn counters<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, u64)>,
) -> Result {
    let mut metric = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in series {
        metric
            .encode_family(&labels)?
            .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    Ok(())
}

/// A histogram per label set.
pub fn histograms<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, HistogramSnapshot)>,
) -> Result {
    let mut metric = enc.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, h) in series {
        metric
            .encode_family(&labels)?
            .encode_histogram::<NoLabelSet>(
                h.sum_s,
                h.count,
                &h.buckets,
                None::<&std::collections::HashMap<usize, Exemplar<NoLabelSet, f64>>>,
            )?;
    }
    Ok(())
}

/// The whole exposition of a registry, in the Prometheus text format.
pub fn render(registry: &Registry) -> String {
    let mut out = String::with_capacity(16 * 1024);
    // Writing into a String does not fail; a collector that does leaves what it wrote.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, registry);
    out
}

/// The `Content-Type` of [`render`]'s output.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
