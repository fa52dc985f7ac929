//! The replay page's query shapes (docs/shapes.md): per shape, the latency distribution the replay
//! measured over the one the capture recorded (small multiples, the shapes with the most replayed
//! time, each captioned with the shape cut to the chart's width and whole in its tooltip), and a
//! sortable table of every shape with its whole text.

use crate::replay::measure::hdr;
use crate::replay::report::shapes_text;
use crate::replay::report::ReplayReport;
use crate::report::html::distribution::cdf_us;
use crate::report::html::{LineChart, Page};

/// Shapes drawn (the most replayed time); the table has them all.
const MAX_CHART_SHAPES: usize = 8;
const REPLAYED: &str = "#3b6fd8";
const RECORDED: &str = "#f28e2b";

pub(super) fn section(page: Page, r: &ReplayReport) -> Page {
    let shapes = &r.shapes;
    if shapes.shapes.is_empty() {
        return page;
    }
    let cdf = |text: Option<&String>| {
        text.and_then(|t| hdr::decode(t).ok())
            .map(|h| cdf_us(&h))
            .unwrap_or_default()
    };
    let curves: Vec<_> = shapes
        .shapes
        .iter()
        .filter(|s| s.replayed.figures.count > s.replayed.figures.no_reply)
        .take(MAX_CHART_SHAPES)
        .map(|s| {
            let hash = &s.replayed.hash;
            (
                s.replayed.shape.clone(),
                cdf(r.histograms.per_shape.get(hash)),
                cdf(r.recorded.per_shape.get(hash)),
            )
        })
        .collect();
    let xs = || {
        curves
            .iter()
            .flat_map(|c| c.1.iter().chain(&c.2).map(|p| p.0))
    };
    let (lo, hi) = (xs().fold(f64::MAX, f64::min), xs().fold(0.0, f64::max));
    let charts = curves.into_iter().map(|(title, replayed, recorded)| {
        let chart = LineChart::new(&title, "latency", "%")
            .small()
            .x_log("µs")
            .x_span(lo, hi)
            .series("replayed", replayed)
            .color(REPLAYED);
        if recorded.is_empty() {
            chart
        } else {
            chart.series("recorded", recorded).color(RECORDED)
        }
    });
    page.section("Query shapes: replayed and recorded")
        .paragraph(&format!(
            "Requests with their values replaced by type placeholders (docs/shapes.md), most \
             replayed time first; getMore and killCursors are charged to the shape of their \
             cursor. Each chart is one shape: the share of its own requests' replies at or below \
             each latency (log axis), replayed and as the capture recorded it. At most {} \
             distinct shapes are kept; the rest are counted as other.",
            shapes.shapes_cap
        ))
        .grid(charts)
        .table(&shapes_text::table(shapes, usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::report::shapes::ReplayShape;
    use crate::shape::{ShapeFigures, ShapeReport};

    #[test]
    fn every_shape_is_in_the_table_and_the_busy_ones_are_drawn_replayed_over_recorded() {
        let mut r = ReplayReport::default();
        let mut h = crate::figures::summary::new_ns_histogram();
        for v in [100_000u64, 200_000, 300_000] {
            h.record(v).unwrap();
        }
        let long = format!("find shop.orders {{{}}}", "a: ?string, ".repeat(30));
        for (i, text) in [long.as_str(), "insert shop.orders"].iter().enumerate() {
            let hash = crate::shape::hash(text);
            r.shapes.shapes.push(ReplayShape {
                replayed: ShapeReport {
                    hash: hash.clone(),
                    shape: text.to_string(),
                    figures: ShapeFigures {
                        count: 3,
                        total_us: 600.0 - i as f64,
                        ..ShapeFigures::default()
                    },
                    ..ShapeReport::default()
                },
                ..ReplayShape::default()
            });
            r.histograms.per_shape.insert(hash.clone(), hdr::encode(&h));
            if i == 0 {
                r.recorded.per_shape.insert(hash, hdr::encode(&h));
            }
        }
        let html = section(Page::new("t"), &r).render();
        assert!(html.contains("Query shapes: replayed and recorded"));
        assert!(html.contains(&long), "the whole text in the table");
        assert_eq!(html.matches("chart line small").count(), 2);
        for pair in ["replayed", "recorded"] {
            for p in ["p50", "p99"] {
                let header = format!(">{pair} {p}</th>");
                assert_eq!(html.matches(&header).count(), 1, "{header}: {html}");
            }
        }
        // Each chart's caption holds the whole shape (cut to its width by the page's style).
        assert!(html.contains(&format!("<figcaption title=\"{}\">", long)));
        assert!(html.contains("table class=\"sortable\""));
        // Nothing to draw or list without shapes.
        let empty = section(Page::new("t"), &ReplayReport::default()).render();
        assert!(!empty.contains("Query shapes"));
    }
}
