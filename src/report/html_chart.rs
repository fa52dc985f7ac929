//! Charts as inline SVG: horizontal bar charts (grouped or stacked) and line charts (linear or log
//! x axis). Generic over series of numbers so any report can draw them.

use super::html::esc;
use super::table::fmt_ns;
use std::fmt::Write;

const W: f64 = 860.0;
const PALETTE: [&str; 10] = [
    "#3b6fd8", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#7f8c8d",
];
/// Points drawn per line; longer series are thinned to this.
const MAX_POINTS: usize = 2000;
/// Points that also get a hoverable dot.
const DOT_POINTS: usize = 80;

struct Series<T> {
    name: String,
    values: Vec<T>,
    color: Option<String>,
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// A value with its unit: durations in µs or s get a readable unit, `%` stays a percentage.
pub fn fmt_value(v: f64, unit: &str) -> String {
    let v = finite(v);
    match unit {
        "µs" => fmt_ns(v * 1e3),
        "ms" => fmt_ns(v * 1e6),
        "s" => fmt_ns(v * 1e9),
        "%" => format!("{v:.1}%"),
        "x" => format!("{v:.2}x"),
        "" => fmt_num(v),
        u => format!("{} {u}", fmt_num(v)),
    }
}

fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Round tick positions from 0 (or `lo`) to at least `hi`.
fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
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

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

fn legend<T>(series: &[Series<T>], y: f64, x0: f64) -> String {
    let mut s = String::new();
    let mut x = x0;
    for (i, se) in series.iter().enumerate() {
        let name = truncate(&se.name, 40);
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

fn color<T>(se: &Series<T>, i: usize) -> String {
    se.color
        .clone()
        .unwrap_or_else(|| PALETTE[i % PALETTE.len()].to_owned())
}

fn figure(title: &str, note: &Option<String>, svg: String) -> String {
    let note = note
        .as_ref()
        .map(|n| format!("<div class=\"sub\">{}</div>", esc(n)))
        .unwrap_or_default();
    format!(
        "<figure><figcaption>{}</figcaption>{note}{svg}</figure>\n",
        esc(title)
    )
}

/// Horizontal bars, one row per category; grouped (one bar per series) or stacked.
#[derive(Default)]
pub struct BarChart {
    title: String,
    unit: String,
    note: Option<String>,
    categories: Vec<String>,
    series: Vec<Series<Option<f64>>>,
    stacked: bool,
}

impl BarChart {
    /// `unit`: `µs`, `ms`, `s`, `%`, `x`, `` or any label printed after the number.
    pub fn new(title: &str, unit: &str) -> BarChart {
        BarChart {
            title: title.to_owned(),
            unit: unit.to_owned(),
            ..Default::default()
        }
    }

    pub fn note(mut self, note: &str) -> BarChart {
        self.note = Some(note.to_owned());
        self
    }

    pub fn categories<S: Into<String>>(mut self, c: impl IntoIterator<Item = S>) -> BarChart {
        self.categories = c.into_iter().map(Into::into).collect();
        self
    }

    /// One value per category (missing values are 0).
    pub fn series(self, name: &str, values: impl IntoIterator<Item = f64>) -> BarChart {
        self.series_opt(name, values.into_iter().map(Some))
    }

    /// One value per category; `None` is drawn as "n/a" (not measured), not as a zero bar.
    pub fn series_opt(
        mut self,
        name: &str,
        values: impl IntoIterator<Item = Option<f64>>,
    ) -> BarChart {
        self.series.push(Series {
            name: name.to_owned(),
            values: values
                .into_iter()
                .map(|v| v.map(|v| finite(v).max(0.0)))
                .collect(),
            color: None,
        });
        self
    }

    /// The colour of the series added last (any CSS colour).
    pub fn color(mut self, color: &str) -> BarChart {
        if let Some(s) = self.series.last_mut() {
            s.color = Some(color.to_owned());
        }
        self
    }

    pub fn stacked(mut self) -> BarChart {
        self.stacked = true;
        self
    }

    fn value(&self, s: usize, c: usize) -> f64 {
        self.series[s]
            .values
            .get(c)
            .copied()
            .flatten()
            .unwrap_or(0.0)
    }

    pub fn render_svg(&self) -> String {
        let ncat = self.categories.len();
        let nser = self.series.len();
        if ncat == 0 || nser == 0 {
            return figure(
                &self.title,
                &self.note,
                "<p class=\"empty\">no data</p>".into(),
            );
        }
        let max = (0..ncat)
            .map(|c| {
                let vals = (0..nser).map(|s| self.value(s, c));
                if self.stacked {
                    vals.sum()
                } else {
                    vals.fold(0.0, f64::max)
                }
            })
            .fold(0.0, f64::max);
        let ticks = nice_ticks(0.0, if max > 0.0 { max } else { 1.0 }, 5);
        let top = *ticks.last().unwrap_or(&1.0);
        let label_w = self
            .categories
            .iter()
            .map(|c| truncate(c, 40).chars().count())
            .max()
            .unwrap_or(0) as f64
            * 6.6
            + 14.0;
        let x0 = label_w.clamp(60.0, 290.0);
        let x1 = W - 80.0;
        let bar_h = if self.stacked { 16.0 } else { 12.0 };
        let row_h = if self.stacked {
            24.0
        } else {
            nser as f64 * bar_h + 10.0
        };
        let y0 = 30.0;
        let h = y0 + ncat as f64 * row_h + 28.0;
        let sx = |v: f64| (v / top) * (x1 - x0);
        let mut s = format!(
            "<svg class=\"chart bar\" viewBox=\"0 0 {W} {h:.0}\" role=\"img\" aria-label=\"{}\" \
             data-categories=\"{ncat}\" data-series=\"{nser}\">",
            esc(&self.title)
        );
        s.push_str(&legend(&self.series, 14.0, x0));
        let axis_y = y0 + ncat as f64 * row_h;
        for t in &ticks {
            let x = x0 + sx(*t);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0:.1}\" y2=\"{axis_y:.1}\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                axis_y + 14.0,
                esc(&fmt_value(*t, &self.unit))
            );
        }
        for (c, cat) in self.categories.iter().enumerate() {
            let ry = y0 + c as f64 * row_h;
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\"><title>{}</title>{}</text>",
                x0 - 6.0,
                ry + row_h / 2.0 + 4.0,
                esc(cat),
                esc(&truncate(cat, 40))
            );
            let mut acc = 0.0;
            for (i, se) in self.series.iter().enumerate() {
                let v = self.value(i, c);
                let (x, y) = if self.stacked {
                    (x0 + sx(acc), ry + (row_h - bar_h) / 2.0)
                } else {
                    (x0, ry + 5.0 + i as f64 * bar_h)
                };
                if se.values.get(c).copied().flatten().is_none() {
                    if !self.stacked {
                        let _ = write!(
                            s,
                            "<text class=\"na\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">n/a \
                             <title>{} · {}: not measured</title></text>",
                            x + 4.0,
                            y + bar_h - 3.5,
                            esc(cat),
                            esc(&se.name)
                        );
                    }
                    continue;
                }
                acc += v;
                let w = sx(v);
                let _ = write!(
                    s,
                    "<rect class=\"mark\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" \
                     fill=\"{}\" data-value=\"{v}\"><title>{} · {}: {}</title></rect>",
                    bar_h - 2.0,
                    color(se, i),
                    esc(cat),
                    esc(&se.name),
                    esc(&fmt_value(v, &self.unit))
                );
                if !self.stacked {
                    let _ = write!(
                        s,
                        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{}</text>",
                        x + w + 4.0,
                        y + bar_h - 3.5,
                        esc(&fmt_value(v, &self.unit))
                    );
                }
            }
            if self.stacked {
                let _ = write!(
                    s,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{}</text>",
                    x0 + sx(acc) + 4.0,
                    ry + row_h / 2.0 + 4.0,
                    esc(&fmt_value(acc, &self.unit))
                );
            }
        }
        let _ = write!(
            s,
            "<line class=\"axis\" x1=\"{x0:.1}\" x2=\"{x0:.1}\" y1=\"{y0:.1}\" y2=\"{axis_y:.1}\"/></svg>"
        );
        figure(&self.title, &self.note, s)
    }
}

/// Lines over a shared x axis, linear or logarithmic.
#[derive(Default)]
pub struct LineChart {
    title: String,
    x_label: String,
    y_unit: String,
    note: Option<String>,
    x_log: bool,
    x_unit: String,
    series: Vec<Series<(f64, f64)>>,
}

impl LineChart {
    /// `x_label` names the x axis; `y_unit` is formatted as in [`BarChart::new`].
    pub fn new(title: &str, x_label: &str, y_unit: &str) -> LineChart {
        LineChart {
            title: title.to_owned(),
            x_label: x_label.to_owned(),
            y_unit: y_unit.to_owned(),
            ..Default::default()
        }
    }

    pub fn note(mut self, note: &str) -> LineChart {
        self.note = Some(note.to_owned());
        self
    }

    /// A logarithmic x axis (non-positive x are left out); `x_unit` formats its ticks.
    pub fn x_log(mut self, x_unit: &str) -> LineChart {
        self.x_log = true;
        self.x_unit = x_unit.to_owned();
        self
    }

    pub fn series(mut self, name: &str, points: Vec<(f64, f64)>) -> LineChart {
        let log = self.x_log;
        let mut points: Vec<(f64, f64)> = points
            .into_iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log || *x > 0.0))
            .collect();
        if points.len() > MAX_POINTS {
            let stride = points.len().div_ceil(MAX_POINTS);
            points = points.into_iter().step_by(stride).collect();
        }
        self.series.push(Series {
            name: name.to_owned(),
            values: points,
            color: None,
        });
        self
    }

    pub fn color(mut self, color: &str) -> LineChart {
        if let Some(s) = self.series.last_mut() {
            s.color = Some(color.to_owned());
        }
        self
    }

    pub fn render_svg(&self) -> String {
        let pts = || self.series.iter().flat_map(|s| s.values.iter());
        if pts().next().is_none() {
            return figure(
                &self.title,
                &self.note,
                "<p class=\"empty\">no data</p>".into(),
            );
        }
        let fx = |x: f64| if self.x_log { x.log10() } else { x };
        let (mut xmin, mut xmax) = pts().fold((f64::MAX, f64::MIN), |(a, b), p| {
            (a.min(fx(p.0)), b.max(fx(p.0)))
        });
        if xmax - xmin < 1e-9 {
            xmin -= 0.5;
            xmax += 0.5;
        }
        let ymax = pts().map(|p| p.1).fold(0.0, f64::max);
        let ymin = pts().map(|p| p.1).fold(0.0, f64::min);
        let yticks = nice_ticks(ymin, if ymax > ymin { ymax } else { ymin + 1.0 }, 5);
        let (ylo, yhi) = (yticks[0], *yticks.last().unwrap_or(&1.0));
        let (x0, x1, y0, y1) = (70.0, W - 20.0, 30.0, 260.0);
        let h = 300.0;
        let px = |x: f64| x0 + (fx(x) - xmin) / (xmax - xmin) * (x1 - x0);
        let py = |y: f64| y1 - (y - ylo) / (yhi - ylo).max(f64::MIN_POSITIVE) * (y1 - y0);
        let mut s = format!(
            "<svg class=\"chart line\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"{}\" \
             data-series=\"{}\">",
            esc(&self.title),
            self.series.len()
        );
        s.push_str(&legend(&self.series, 14.0, x0));
        for t in &yticks {
            let y = py(*t);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{x0}\" x2=\"{x1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0 - 6.0,
                y + 4.0,
                esc(&fmt_value(*t, &self.y_unit))
            );
        }
        for t in self.x_ticks(xmin, xmax) {
            let x = px(t);
            let label = if self.x_log {
                fmt_value(t, &self.x_unit)
            } else {
                fmt_num(t)
            };
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y1 + 15.0,
                esc(&label)
            );
        }
        let _ = write!(
            s,
            "<line class=\"axis\" x1=\"{x0}\" x2=\"{x1}\" y1=\"{y1}\" y2=\"{y1}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            (x0 + x1) / 2.0,
            h - 6.0,
            esc(&self.x_label)
        );
        for (i, se) in self.series.iter().enumerate() {
            let c = color(se, i);
            let mut points = String::new();
            for (x, y) in &se.values {
                let _ = write!(points, "{:.1},{:.1} ", px(*x), py(*y));
            }
            let _ = write!(
                s,
                "<polyline stroke=\"{c}\" points=\"{}\" data-points=\"{}\"><title>{}</title></polyline>",
                points.trim_end(),
                se.values.len(),
                esc(&se.name)
            );
            if se.values.len() <= DOT_POINTS {
                for (x, y) in &se.values {
                    let xs = if self.x_log {
                        fmt_value(*x, &self.x_unit)
                    } else {
                        fmt_num(*x)
                    };
                    let _ = write!(
                        s,
                        "<circle class=\"mark\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.6\" fill=\"{c}\">\
                         <title>{} · {} {}: {}</title></circle>",
                        px(*x),
                        py(*y),
                        esc(&se.name),
                        esc(&self.x_label),
                        esc(&xs),
                        esc(&fmt_value(*y, &self.y_unit))
                    );
                }
            }
        }
        s.push_str("</svg>");
        figure(&self.title, &self.note, s)
    }

    /// Tick positions in data units (not log10).
    fn x_ticks(&self, xmin: f64, xmax: f64) -> Vec<f64> {
        if !self.x_log {
            return nice_ticks(xmin, xmax, 8)
                .into_iter()
                .filter(|t| *t >= xmin - 1e-9 && *t <= xmax + 1e-9)
                .collect();
        }
        let decades = xmax - xmin;
        let mults: &[f64] = if decades < 3.0 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let mut out = Vec::new();
        let mut e = xmin.floor() as i32;
        while (e as f64) <= xmax.ceil() && out.len() < 40 {
            for m in mults {
                let v = m * 10f64.powi(e);
                if v.log10() >= xmin - 1e-9 && v.log10() <= xmax + 1e-9 {
                    out.push(v);
                }
            }
            e += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
