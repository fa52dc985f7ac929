//! Line charts as inline SVG over a shared x axis, linear or logarithmic; long series are thinned
//! and short ones get a hoverable dot per point.

use super::chart::{color, figure, legend, nice_ticks, Series, W};
use super::esc;
use crate::report::units;
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
    series: Vec<Series<(f64, f64)>>,
}

impl LineChart {
    /// `x_label` names the x axis; `y_unit` is formatted as in [`super::BarChart::new`] (see [`crate::report::units::value`]).
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
        let Some(sc) = self.scale() else {
            return figure(
                &self.title,
                &self.note,
                "<p class=\"empty\">no data</p>".into(),
            );
        };
        let (x0, x1, y0, y1) = (X0, X1, Y0, Y1);
        let h = 300.0;
        let mut s = format!(
            "<svg class=\"chart line\" viewBox=\"0 0 {W} {h}\" role=\"img\" aria-label=\"{}\" \
             data-series=\"{}\">",
            esc(&self.title),
            self.series.len()
        );
        s.push_str(&legend(&self.series, 14.0, x0));
        for t in &sc.yticks {
            let y = sc.py(*t);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{x0}\" x2=\"{x1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                x0 - 6.0,
                y + 4.0,
                esc(&units::value(*t, &self.y_unit))
            );
        }
        for t in self.x_ticks(sc.xmin, sc.xmax) {
            let x = sc.px(t);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y0}\" y2=\"{y1}\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                y1 + 15.0,
                esc(&self.x_text(t))
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
        figure(&self.title, &self.note, s)
    }

    /// The axes' ranges from the data; `None` when there is no point at all.
    fn scale(&self) -> Option<Scale> {
        let pts = || self.series.iter().flat_map(|s| s.values.iter());
        pts().next()?;
        let x_log = self.x_log;
        let fx = |x: f64| if x_log { x.log10() } else { x };
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
        Some(Scale {
            x_log,
            xmin,
            xmax,
            ylo,
            yhi,
            yticks,
        })
    }

    /// An x value as its axis labels it: with its unit on a log axis, as a count otherwise.
    fn x_text(&self, x: f64) -> String {
        if self.x_log {
            units::value(x, &self.x_unit)
        } else {
            units::count(x)
        }
    }

    /// One series: its line, and a dot with a tooltip per point when there are few.
    fn draw_series(&self, s: &mut String, sc: &Scale, i: usize, se: &Series<(f64, f64)>) {
        let c = color(se, i);
        let mut points = String::new();
        for (x, y) in &se.values {
            let _ = write!(points, "{:.1},{:.1} ", sc.px(*x), sc.py(*y));
        }
        let _ = write!(
            s,
            "<polyline stroke=\"{c}\" points=\"{}\" data-points=\"{}\"><title>{}</title></polyline>",
            points.trim_end(),
            se.values.len(),
            esc(&se.name)
        );
        if se.values.len() > DOT_POINTS {
            return;
        }
        for (x, y) in &se.values {
            let _ = write!(
                s,
                "<circle class=\"mark\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.6\" fill=\"{c}\">\
                 <title>{} · {} {}: {}</title></circle>",
                sc.px(*x),
                sc.py(*y),
                esc(&se.name),
                esc(&self.x_label),
                esc(&self.x_text(*x)),
                esc(&units::value(*y, &self.y_unit))
            );
        }
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

/// The plot area: x from `X0` to `X1`, y from `Y0` (top) to `Y1` (the x axis).
const X0: f64 = 70.0;
const X1: f64 = W - 20.0;
const Y0: f64 = 30.0;
const Y1: f64 = 260.0;

/// The data ranges a line chart maps onto its plot area (x in log10 on a log axis).
struct Scale {
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
        X0 + (x - self.xmin) / (self.xmax - self.xmin) * (X1 - X0)
    }

    fn py(&self, y: f64) -> f64 {
        Y1 - (y - self.ylo) / (self.yhi - self.ylo).max(f64::MIN_POSITIVE) * (Y1 - Y0)
    }
}
