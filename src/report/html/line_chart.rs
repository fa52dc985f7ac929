//! Line charts as inline SVG over a shared x axis, linear or logarithmic; long series are thinned
//! and short ones get a hoverable dot per point. A point whose y is not a number (`f64::NAN`) is a
//! gap: the line stops there and starts again after it. Full width, or small for a grid of small
//! multiples ([`super::Page::grid`]).

use super::chart::{color, figure, legend, nice_ticks, tick_labels, Series, W};
use super::escape::esc;
use crate::figures::units;
use std::fmt::Write;

/// Points drawn per line; longer series are thinned to this.
const MAX_POINTS: usize = 2000;
/// Points that also get a hoverable dot.
const DOT_POINTS: usize = 80;

/// Lines over a shared x axis, linear or logarithmic.
#[derive(Default)]
pub struct LineChart {
    title: String,
    x_label: String,
    y_unit: String,
    note: Option<String>,
    x_log: bool,
    x_unit: String,
    small: bool,
    /// x values the axis spans whatever the data: small multiples share their axis.
    x_span: Option<(f64, f64)>,
    series: Vec<Series<(f64, f64)>>,
}

impl LineChart {
    /// `x_label` names the x axis; `y_unit` is formatted as in [`super::BarChart::new`] (see [`crate::figures::units::value`]).
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

    /// Half width and shorter, for a grid of small multiples.
    pub fn small(mut self) -> LineChart {
        self.small = true;
        self
    }

    /// An x axis spanning at least `lo..hi`, so small multiples read against one another.
    pub fn x_span(mut self, lo: f64, hi: f64) -> LineChart {
        if lo.is_finite() && hi.is_finite() && lo <= hi && (!self.x_log || lo > 0.0) {
            self.x_span = Some((lo, hi));
        }
        self
    }

    /// The x axis's unit, formatted as `y_unit` is (`s` for time: `5.00ms`, `1.25s`).
    pub fn x_unit(mut self, x_unit: &str) -> LineChart {
        self.x_unit = x_unit.to_owned();
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
            .filter(|(x, _)| x.is_finite() && (!log || *x > 0.0))
            .map(|(x, y)| (x, if y.is_finite() { y } else { f64::NAN }))
            .collect();
        if points.len() > MAX_POINTS {
            let stride = points.len().div_ceil(MAX_POINTS);
            points = points.into_iter().step_by(stride).collect();
        }
        self.series.push(Series {
            name: name.to_owned(),
            values: points,
            color: None,
            dashed: false,
        });
        self
    }

    /// The last series added is drawn dashed (over a line it would otherwise hide).
    pub fn dashed(mut self) -> LineChart {
        if let Some(s) = self.series.last_mut() {
            s.dashed = true;
        }
        self
    }

    pub fn color(mut self, color: &str) -> LineChart {
        if let Some(s) = self.series.last_mut() {
            s.color = Some(color.to_owned());
        }
        self
    }

    /// Whether a series has a point to draw (a series without one has no legend entry).
    fn drawn(se: &Series<(f64, f64)>) -> bool {
        se.values.iter().any(|p| p.1.is_finite())
    }

    pub fn render_svg(&self) -> String {
        let drawn = self
            .series
            .iter()
            .enumerate()
            .filter(|(_, se)| Self::drawn(se));
        let legend = legend(drawn, X0, self.width() - 8.0);
        let Some(sc) = self.scale(legend.extra()) else {
            return figure(
                &self.title,
                &self.note,
                "<p class=\"empty\">no data</p>".into(),
            );
        };
        let (x0, x1, y0, y1) = (X0, sc.x1, sc.y0, sc.y1);
        let (w, h) = (self.width(), sc.y1 + 40.0);
        let mut s = format!(
            "<svg class=\"chart line{}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\" \
             data-series=\"{}\" data-points=\"{}\">",
            if self.small { " small" } else { "" },
            esc(&self.title),
            self.series.len(),
            self.series
                .iter()
                .map(|se| se.values.iter().filter(|p| p.1.is_finite()).count())
                .sum::<usize>()
        );
        s.push_str(&legend.svg);
        for (t, label) in sc.yticks.iter().zip(tick_labels(&sc.yticks, &self.y_unit)) {
            let y = sc.py(*t);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{x0}\" x2=\"{x1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
                 <text class=\"tick y\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0 - 6.0,
                y + 4.0,
                esc(&label)
            );
        }
        let xticks = self.x_ticks(sc.xmin, sc.xmax);
        for (t, label) in xticks.iter().zip(tick_labels(&xticks, &self.x_unit)) {
            let x = sc.px(*t);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\"/>\
                 <text class=\"tick x\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
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
            self.draw_series(&mut s, &sc, i, se);
        }
        s.push_str("</svg>");
        figure(&self.title, &self.note_with_undrawn(), s)
    }

    /// The chart's width in its own units: the page's, or half of it for a small multiple.
    fn width(&self) -> f64 {
        if self.small {
            W / 2.0
        } else {
            W
        }
    }

    /// The note, and the series with no point to draw named after it (they have no legend entry).
    fn note_with_undrawn(&self) -> Option<String> {
        let undrawn: Vec<&str> = (self.series.iter())
            .filter(|se| !Self::drawn(se))
            .map(|se| se.name.as_str())
            .collect();
        if undrawn.is_empty() {
            return self.note.clone();
        }
        let said = format!("Not drawn (no point to draw): {}.", undrawn.join(", "));
        Some(match &self.note {
            Some(n) => format!("{n} {said}"),
            None => said,
        })
    }

    /// The axes' ranges from the data; `None` when there is no point at all.
    fn scale(&self, legend_extra: f64) -> Option<Scale> {
        let pts = || {
            self.series
                .iter()
                .flat_map(|s| s.values.iter())
                .filter(|p| p.1.is_finite())
        };
        pts().next()?;
        let x_log = self.x_log;
        let fx = |x: f64| if x_log { x.log10() } else { x };
        let span = self.x_span.into_iter().flat_map(|(lo, hi)| [lo, hi]);
        // Gaps count on the x axis: timelines over the same time line up.
        let all = self.series.iter().flat_map(|s| s.values.iter());
        let (mut xmin, mut xmax) = all
            .map(|p| p.0)
            .chain(span)
            .fold((f64::MAX, f64::MIN), |(a, b), x| {
                (a.min(fx(x)), b.max(fx(x)))
            });
        if xmax - xmin < 1e-9 {
            xmin -= 0.5;
            xmax += 0.5;
        }
        let ymax = pts().map(|p| p.1).fold(0.0, f64::max);
        let ymin = pts().map(|p| p.1).fold(0.0, f64::min);
        let yticks = nice_ticks(ymin, if ymax > ymin { ymax } else { ymin + 1.0 }, 5);
        let (ylo, yhi) = (yticks[0], *yticks.last().unwrap_or(&1.0));
        let y1 = if self.small { 200.0 } else { 260.0 } + legend_extra;
        Some(Scale {
            x1: self.width() - 20.0,
            y0: Y0 + legend_extra,
            y1,
            x_log,
            xmin,
            xmax,
            ylo,
            yhi,
            yticks,
        })
    }

    /// An x value as its axis labels it, with its unit.
    fn x_text(&self, x: f64) -> String {
        units::value(x, &self.x_unit)
    }

    /// One series: a line per stretch without gaps, a dot where a stretch is one point, and a dot
    /// with a tooltip per point when there are few.
    fn draw_series(&self, s: &mut String, sc: &Scale, i: usize, se: &Series<(f64, f64)>) {
        let c = color(se, i);
        let finite = se.values.iter().filter(|p| p.1.is_finite()).count();
        for run in se.values.split(|p| !p.1.is_finite()) {
            if run.len() == 1 && finite > DOT_POINTS {
                self.dot(s, sc, &c, &se.name, run[0]);
            }
            if run.len() < 2 {
                continue;
            }
            let mut points = String::new();
            for (x, y) in run {
                let _ = write!(points, "{:.1},{:.1} ", sc.px(*x), sc.py(*y));
            }
            let _ = write!(
                s,
                "<polyline stroke=\"{c}\"{} points=\"{}\" data-points=\"{}\"><title>{}</title></polyline>",
                if se.dashed { " stroke-dasharray=\"5 4\"" } else { "" },
                points.trim_end(),
                run.len(),
                esc(&se.name)
            );
        }
        if finite > DOT_POINTS {
            return;
        }
        for p in se.values.iter().filter(|p| p.1.is_finite()) {
            self.dot(s, sc, &c, &se.name, *p);
        }
    }

    fn dot(&self, s: &mut String, sc: &Scale, c: &str, name: &str, (x, y): (f64, f64)) {
        let _ = write!(
            s,
            "<circle class=\"mark\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.6\" fill=\"{c}\">\
             <title>{} · {} {}: {}</title></circle>",
            sc.px(x),
            sc.py(y),
            esc(name),
            esc(&self.x_label),
            esc(&self.x_text(x)),
            esc(&units::value(y, &self.y_unit))
        );
    }

    /// Tick positions in data units (not log10).
    fn x_ticks(&self, xmin: f64, xmax: f64) -> Vec<f64> {
        if !self.x_log {
            return nice_ticks(xmin, xmax, if self.small { 4 } else { 8 })
                .into_iter()
                .filter(|t| *t >= xmin - 1e-9 && *t <= xmax + 1e-9)
                .collect();
        }
        let decades = xmax - xmin;
        let dense = if self.small { 1.5 } else { 3.0 };
        let mults: &[f64] = if decades < dense {
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

/// The plot area: x from `X0` to `Scale::x1`, y from `Scale::y0` (top: `Y0` under a legend of one
/// row) to `Scale::y1` (the x axis).
const X0: f64 = 70.0;
const Y0: f64 = 30.0;

/// The data ranges a line chart maps onto its plot area (x in log10 on a log axis).
struct Scale {
    x1: f64,
    y0: f64,
    y1: f64,
    x_log: bool,
    xmin: f64,
    xmax: f64,
    ylo: f64,
    yhi: f64,
    yticks: Vec<f64>,
}

impl Scale {
    fn px(&self, x: f64) -> f64 {
        let x = if self.x_log { x.log10() } else { x };
        X0 + (x - self.xmin) / (self.xmax - self.xmin) * (self.x1 - X0)
    }

    fn py(&self, y: f64) -> f64 {
        self.y1
            - (y - self.ylo) / (self.yhi - self.ylo).max(f64::MIN_POSITIVE) * (self.y1 - self.y0)
    }
}
