//! What every chart shares: the SVG width, the palette, a series, round
//! axis ticks, the legend and the `<figure>` around it. The charts themselves are in
//! `bar_chart` (horizontal bars) and `line_chart` (lines, linear or log x axis); both are
//! generic over series of numbers so any report can draw them.

use super::escape::esc;
use crate::figures::text::cut;
use std::fmt::Write;

pub(super) const W: f64 = 860.0;
const PALETTE: [&str; 10] = [
    "#3b6fd8", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#7f8c8d",
];

pub(super) struct Series<T> {
    pub(super) name: String,
    pub(super) values: Vec<T>,
    pub(super) color: Option<String>,
    /// A dashed line, for a series drawn over another it may hide.
    pub(super) dashed: bool,
}

pub(super) fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// Round tick positions from 0 (or `lo`) to at least `hi`.
pub(super) fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let mut ticks = Vec::new();
    let mut t = start;
    while ticks.len() < 50 {
        ticks.push(t);
        // Sums such as 33.3 + 66.7 land a hair above a round top.
        if t >= hi - step * 1e-6 {
            break;
        }
        t += step;
    }
    ticks
}

/// The legend of `series`, each with its index in the chart (its default colour).
pub(super) fn legend<'a, T: 'a>(
    series: impl IntoIterator<Item = (usize, &'a Series<T>)>,
    y: f64,
    x0: f64,
) -> String {
    let mut s = String::new();
    let mut x = x0;
    for (i, se) in series {
        let name = cut(&se.name, 40);
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" rx=\"2\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            y - 9.0,
            color(se, i),
            x + 14.0,
            y,
            esc(&name)
        );
        x += 24.0 + name.chars().count() as f64 * 6.4;
    }
    s
}

pub(super) fn color<T>(se: &Series<T>, i: usize) -> String {
    se.color
        .clone()
        .unwrap_or_else(|| PALETTE[i % PALETTE.len()].to_owned())
}

pub(super) fn figure(title: &str, note: &Option<String>, svg: String) -> String {
    let note = note
        .as_ref()
        .map(|n| format!("<div class=\"sub\">{}</div>", esc(n)))
        .unwrap_or_default();
    format!(
        "<figure><figcaption>{}</figcaption>{note}{svg}</figure>\n",
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::html::{BarChart, LineChart};

    #[test]
    fn bars_and_lines_carry_their_data() {
        let b = BarChart::new("time", "s")
            .categories(["a", "b"])
            .series("server", [1.0, 2.0])
            .series("client", [3.0, f64::INFINITY])
            .stacked()
            .render_svg();
        assert_eq!(b.matches("class=\"mark\"").count(), 4);
        assert!(!b.contains("inf") && !b.contains("NaN"));
        let l = LineChart::new("lat", "latency", "%")
            .x_log("µs")
            .series("find", vec![(0.0, 1.0), (10.0, 50.0), (1000.0, 50.0)])
            .render_svg();
        assert!(
            l.contains("data-points=\"2\""),
            "x=0 dropped on a log axis: {l}"
        );
        assert!(LineChart::new("e", "x", "")
            .render_svg()
            .contains("no data"));
        assert_eq!(nice_ticks(0.0, 7.3, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(nice_ticks(0.0, 100.000000001, 5).last(), Some(&100.0));
    }

    /// A series zero in every category draws no bar and no legend entry, and is named under the
    /// chart; a chart of only such series says so; no value draws a bar past the axis.
    #[test]
    fn zero_throughout_draws_nothing_and_says_so() {
        let b = BarChart::new("extra", "")
            .categories(["a", "b"])
            .series("getMore", [0.5, 0.25])
            .series("killCursors", [0.0, 0.0])
            .series_opt("getLastError", [Some(0.0), None])
            .stacked()
            .render_svg();
        assert_eq!(b.matches("class=\"mark\"").count(), 2, "{b}");
        assert!(
            b.contains("killCursors, getLastError: 0 throughout."),
            "{b}"
        );
        assert!(!b.contains(">killCursors</text>"), "not in the legend: {b}");
        let zero = BarChart::new("none", "")
            .categories(["a"])
            .series("x", [0.0])
            .render_svg();
        assert!(
            zero.contains("<p class=\"empty\">0 throughout</p>"),
            "{zero}"
        );
        assert!(!zero.contains("class=\"mark\""), "{zero}");
        let tiny = BarChart::new("tiny", "")
            .categories(["a", "b"])
            .series("x", [f64::from_bits(1), 0.0])
            .render_svg();
        let widths: Vec<f64> = tiny
            .split("width=\"")
            .skip(1)
            .filter_map(|w| w.split('"').next()?.parse().ok())
            .collect();
        assert!(widths.iter().all(|w| *w <= W), "{tiny}");
    }
}
