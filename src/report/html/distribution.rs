//! Latency histograms as chart series: the share of operations at or below each latency (a CDF),
//! for a line chart on a log latency axis.

use hdrhistogram::Histogram;

/// Quantiles a CDF is drawn through: every percent, and the tail in finer steps.
fn quantiles() -> impl Iterator<Item = f64> {
    (1..100)
        .map(|p| p as f64 / 100.0)
        .chain([0.995, 0.999, 0.9995, 0.9999, 1.0])
}

/// `(latency µs, % of operations at or below it)` of a nanosecond histogram, one point per distinct
/// latency; empty for an empty histogram.
pub fn cdf_us<T: hdrhistogram::Counter>(h: &Histogram<T>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    if h.is_empty() {
        return out;
    }
    for q in quantiles() {
        let x = h.value_at_quantile(q) as f64 / 1e3;
        match out.last_mut() {
            Some(last) if last.0 == x => last.1 = q * 100.0,
            _ => out.push((x, q * 100.0)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::summary::new_ns_histogram;

    #[test]
    fn a_cdf_rises_to_100_percent_one_point_per_latency() {
        let mut h = new_ns_histogram();
        for v in [100_000u64, 100_000, 200_000, 5_000_000] {
            h.record(v).unwrap();
        }
        let c = cdf_us(&h);
        assert_eq!(c.len(), 3, "{c:?}");
        assert!((c[0].0 - 100.0).abs() < 0.1 && c[0].1 == 50.0, "{c:?}");
        assert_eq!(c[1].1, 75.0);
        assert_eq!(c[2].1, 100.0);
        assert!((c[2].0 - 5000.0).abs() < 5.0);
        assert!(c.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(cdf_us(&new_ns_histogram()).is_empty());
    }
}
