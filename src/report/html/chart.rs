//! What every chart shares: the SVG width, the palette, a series, round
//! axis ticks, the legend and the `<figure>` around it. The charts themselves are in
//! `bar_chart` (horizontal bars) and `line_chart` (lines, linear or log x axis); both are
//! generic over series of numbers so any report can draw them.

use super::escape::esc;
use crate::figures::text::cut;
use crate::figures::units;
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

/// A legend entry's text width per character, in the chart's units (11 px system-ui, with room
/// for wide letters: an estimate that errs wide, so an entry never runs past the view box).
const CHAR_W: f64 = 6.6;
/// The height of a row of the legend; the first row's baseline is at 14.
pub(super) const LEGEND_ROW: f64 = 16.0;

/// Characters of a legend entry's name at most (the whole name in its tooltip).
const LEGEND_CHARS: usize = 52;

/// A chart's legend laid out: its SVG and the rows it takes.
pub(super) struct Legend {
    pub(super) svg: String,
    pub(super) rows: usize,
}

impl Legend {
    /// What the legend's rows past the first add to the chart's height.
    pub(super) fn extra(&self) -> f64 {
        self.rows.saturating_sub(1) as f64 * LEGEND_ROW
    }
}

/// The legend of `series`, each with its index in the chart (its default colour), left to right
/// from `x0`, wrapping before `x_max` (the view box's right edge, less a margin) so that every
/// entry drawn is inside the box; a name too long for a row is cut, whole in its tooltip.
pub(super) fn legend<'a, T: 'a>(
    series: impl IntoIterator<Item = (usize, &'a Series<T>)>,
    x0: f64,
    x_max: f64,
) -> Legend {
    let mut s = String::new();
    let (mut x, mut row) = (x0, 0usize);
    let room = (((x_max - x0 - 14.0) / CHAR_W).floor() as usize).max(4);
    for (i, se) in series {
        // Two entries to a row of a full-width chart, one to a small multiple's.
        let name = cut(&se.name, room.min(LEGEND_CHARS));
        let width = 14.0 + name.chars().count() as f64 * CHAR_W;
        if x > x0 && x + width > x_max {
            (x, row) = (x0, row + 1);
        }
        let y = 14.0 + row as f64 * LEGEND_ROW;
        let tip = if name == se.name {
            String::new()
        } else {
            format!("<title>{}</title>", esc(&se.name))
        };
        let _ = write!(
            s,
            "<g class=\"legend\"><rect x=\"{x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" rx=\"2\" \
             fill=\"{}\"/><text x=\"{:.1}\" y=\"{y:.1}\">{tip}{}</text></g>",
            y - 9.0,
            color(se, i),
            x + 14.0,
            esc(&name)
        );
        x += width + 10.0;
    }
    Legend {
        svg: s,
        rows: row + 1,
    }
}

/// The labels of axis ticks in `unit`: as [`units::value`] writes them, unless two would read
/// alike (0.0005 and 0.001 are both `0.001` as a count); then every tick with as many decimals
/// as it takes for no two to read alike, in one scale (`k`, `ms`) for the whole axis.
pub(super) fn tick_labels(ticks: &[f64], unit: &str) -> Vec<String> {
    let plain: Vec<String> = ticks.iter().map(|t| units::value(*t, unit)).collect();
    if all_differ(&plain) {
        return plain;
    }
    let top = ticks.iter().fold(0.0f64, |m, t| m.max(t.abs()));
    let (scale, suffix) = scale_of(top, unit);
    // As many decimals as the step between ticks has (0.25k: 2), so each label is its tick's value.
    let step = (ticks.windows(2).map(|w| (w[1] - w[0]).abs()))
        .filter(|d| *d > 0.0)
        .fold(f64::MAX, f64::min)
        / scale;
    let exact = |d: &usize| {
        let v = step * 10f64.powi(*d as i32);
        (v - v.round()).abs() < 1e-6 * v.max(1.0)
    };
    let first = (0..=9).find(exact).unwrap_or(9);
    for decimals in first..=9 {
        let labels: Vec<String> = (ticks.iter().zip(&plain))
            .map(|(t, p)| match *t == 0.0 {
                true => p.clone(),
                false => format!("{:.decimals$}{suffix}", t / scale),
            })
            .collect();
        if all_differ(&labels) {
            return labels;
        }
    }
    plain
}

fn all_differ(labels: &[String]) -> bool {
    labels
        .iter()
        .enumerate()
        .all(|(i, l)| !labels[..i].contains(l))
}

/// What a tick's value is divided by on an axis whose largest tick is `top`, and what follows it.
fn scale_of(top: f64, unit: &str) -> (f64, String) {
    let per_ns = match unit {
        "µs" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    };
    if let Some(per_ns) = per_ns {
        let ns = top * per_ns;
        let (div, name) = [(1e9, "s"), (1e6, "ms"), (1e3, "µs")]
            .into_iter()
            .find(|(d, _)| ns >= *d)
            .unwrap_or((1.0, "ns"));
        return (div / per_ns, name.to_owned());
    }
    if unit == "%" || unit == "x" {
        return (1.0, unit.to_owned());
    }
    // As `units::count` scales: `12k` from 10,000 up.
    let (div, prefix) = [(1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")]
        .into_iter()
        .find(|(from, _, _)| top >= *from)
        .map_or((1.0, ""), |(_, d, p)| (d, p));
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    (div, format!("{prefix}{unit}"))
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
    // The title attribute: the whole title where the caption is cut to its width (small multiples).
    format!(
        "<figure><figcaption title=\"{t}\">{t}</figcaption>{note}{svg}</figure>\n",
        t = esc(title)
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

    /// The x end of every legend entry of `svg` (its text estimated at 6.6 units a character,
    /// as the layout does) and the view box's width.
    fn legend_ends(svg: &str) -> (Vec<f64>, f64) {
        let width: f64 = svg
            .split("viewBox=\"0 0 ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let ends = svg
            .split("<g class=\"legend\">")
            .skip(1)
            .map(|e| {
                let x: f64 = e
                    .split("<text x=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                let text = e.split("</text>").next().unwrap();
                let shown = text.rsplit('>').next().unwrap();
                x + shown.chars().count() as f64 * 6.6
            })
            .collect();
        (ends, width)
    }

    /// Eight long series names: every one has its entry, the legend wraps into rows inside the
    /// view box and the plot moves down under it; a small multiple's legend wraps at its own width.
    #[test]
    fn a_legend_wraps_inside_the_view_box() {
        let name = |i: usize| format!("find shop.customers {{city: ?string, zip: ?number}} #{i}");
        let chart = (0..8).fold(
            LineChart::new("shapes", "latency", "%").x_log("µs"),
            |c, i| c.series(&name(i), vec![(10.0, 50.0), (100.0, 100.0)]),
        );
        for (svg, rows) in [(chart.render_svg(), 4), (chart.small().render_svg(), 8)] {
            let (ends, width) = legend_ends(&svg);
            assert_eq!(ends.len(), 8, "{svg}");
            assert!(ends.iter().all(|e| *e <= width), "{ends:?} past {width}");
            let ys: std::collections::BTreeSet<&str> = svg
                .split("<g class=\"legend\"><rect")
                .skip(1)
                .filter_map(|e| e.split("y=\"").nth(1)?.split('"').next())
                .collect();
            assert_eq!(ys.len(), rows, "{svg}");
            assert!(
                svg.contains(&format!("<title>{}</title>", name(7))),
                "{svg}"
            );
        }
        let bars = (0..8).fold(BarChart::new("b", "µs").categories(["x"]), |c, i| {
            c.series(&name(i), [i as f64 + 1.0])
        });
        let (ends, width) = legend_ends(&bars.render_svg());
        assert_eq!(ends.len(), 8);
        assert!(ends.iter().all(|e| *e <= width), "{ends:?} past {width}");
    }

    /// A series with no point has no legend entry; it is named under the chart.
    #[test]
    fn a_series_not_drawn_has_no_legend_entry() {
        let svg = LineChart::new("latency", "t", "µs")
            .series("p50", vec![(0.0, 1.0), (1.0, 2.0)])
            .series("p99 (100+ replies)", vec![(0.0, f64::NAN), (1.0, f64::NAN)])
            .render_svg();
        assert!(svg.contains(">p50</text>"), "{svg}");
        assert!(!svg.contains(">p99 (100+ replies)</text>"), "{svg}");
        assert!(
            svg.contains("Not drawn (no point to draw): p99 (100+ replies)."),
            "{svg}"
        );
    }

    /// Ticks close together keep apart in their labels: more decimals, one scale per axis.
    #[test]
    fn tick_labels_never_repeat() {
        let ticks = nice_ticks(0.0, 0.0017, 4);
        assert_eq!(ticks.len(), 5, "{ticks:?}");
        let plain: Vec<String> = ticks.iter().map(|t| units::value(*t, "")).collect();
        assert_eq!(plain[1], plain[2], "as a count they read alike: {plain:?}");
        assert_eq!(
            tick_labels(&ticks, ""),
            ["0", "0.0005", "0.0010", "0.0015", "0.0020"]
        );
        let us = tick_labels(&[1000.0, 1000.5, 1001.0], "µs");
        assert_eq!(us, ["1.0000ms", "1.0005ms", "1.0010ms"]);
        let k = tick_labels(&[10_000.0, 10_250.0, 10_500.0], "ops/s");
        assert_eq!(k, ["10.00k ops/s", "10.25k ops/s", "10.50k ops/s"]);
        // Labels that already differ are left as every report writes them.
        assert_eq!(
            tick_labels(&[0.0, 50.0, 100.0], "%"),
            ["0.0%", "50.0%", "100.0%"]
        );
        for unit in ["", "µs", "s", "%", "x", "ops/s"] {
            for (lo, hi) in [(0.0, 1e-4), (0.0, 3.3e-3), (1e3, 1.0003e3), (0.0, 7e6)] {
                let labels = tick_labels(&nice_ticks(lo, hi, 5), unit);
                assert!(all_differ(&labels), "{unit} {lo}..{hi}: {labels:?}");
            }
        }
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
