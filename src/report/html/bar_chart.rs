//! Horizontal bar charts as inline SVG, one row per category, the series grouped (one bar each) or
//! stacked. A value that was not measured is drawn as "n/a", not as a zero bar; a series that is
//! zero in every category is not drawn but named under the chart ("0 throughout").

use super::chart::{color, figure, finite, legend, nice_ticks, tick_labels, Legend, Series, W};
use super::escape::esc;
use crate::figures::text::cut;
use crate::figures::units;
use std::fmt::Write;

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
            dashed: false,
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

    /// True when the series is zero wherever it was measured (and measured somewhere).
    fn zero_throughout(&self, s: usize) -> bool {
        let values = &self.series[s].values;
        values.iter().any(Option::is_some) && values.iter().flatten().all(|v| *v == 0.0)
    }

    pub fn render_svg(&self) -> String {
        let (ncat, nser) = (self.categories.len(), self.series.len());
        if ncat == 0 || nser == 0 {
            return figure(
                &self.title,
                &self.note,
                "<p class=\"empty\">no data</p>".into(),
            );
        }
        let (zero, drawn): (Vec<usize>, Vec<usize>) =
            (0..nser).partition(|&i| self.zero_throughout(i));
        let mut note = self.note.clone();
        if !zero.is_empty() {
            let names: Vec<&str> = zero.iter().map(|&i| self.series[i].name.as_str()).collect();
            let said = format!("{}: 0 throughout.", names.join(", "));
            note = Some(match note {
                Some(n) => format!("{n} {said}"),
                None => said,
            });
        }
        if drawn.is_empty() {
            let empty = "<p class=\"empty\">0 throughout</p>".to_owned();
            return figure(&self.title, &note, empty);
        }
        let legend = legend(
            drawn.iter().map(|&i| (i, &self.series[i])),
            self.axis_x0(),
            W - 8.0,
        );
        let g = self.geometry(&drawn, &legend);
        let nser = drawn.len();
        let mut s = format!(
            "<svg class=\"chart bar\" viewBox=\"0 0 {W} {:.0}\" role=\"img\" aria-label=\"{}\" \
             data-categories=\"{ncat}\" data-series=\"{nser}\">",
            g.height(ncat),
            esc(&self.title)
        );
        s.push_str(&legend.svg);
        let axis_y = g.y0 + ncat as f64 * g.row_h;
        for (t, label) in g.ticks.iter().zip(tick_labels(&g.ticks, &self.unit)) {
            let x = g.x0 + g.sx(*t);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{axis_y:.1}\"/>\
                 <text class=\"tick x\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                g.y0,
                axis_y + 14.0,
                esc(&label)
            );
        }
        for (c, cat) in self.categories.iter().enumerate() {
            self.draw_row(&mut s, &g, &drawn, c, cat);
        }
        let _ = write!(
            s,
            "<line class=\"axis\" x1=\"{x0:.1}\" x2=\"{x0:.1}\" y1=\"{:.1}\" y2=\"{axis_y:.1}\"/></svg>",
            g.y0,
            x0 = g.x0
        );
        figure(&self.title, &note, s)
    }

    /// Where the value axis (and the legend) starts: after the column of category labels.
    fn axis_x0(&self) -> f64 {
        let longest = (self.categories.iter())
            .map(|c| cut(c, 40).chars().count())
            .max()
            .unwrap_or(0);
        (longest as f64 * 6.6 + 14.0).clamp(60.0, 290.0)
    }

    /// Where things go: the value axis from the longest row, the label column from the longest
    /// category name, the row height from the number of bars in a row (the `drawn` series), the
    /// first row under the legend's rows.
    fn geometry(&self, drawn: &[usize], legend: &Legend) -> Geometry {
        let max = (0..self.categories.len())
            .map(|c| {
                let vals = drawn.iter().map(|&s| self.value(s, c));
                if self.stacked {
                    vals.sum()
                } else {
                    vals.fold(0.0, f64::max)
                }
            })
            .fold(0.0, f64::max);
        let ticks = nice_ticks(0.0, if max > 0.0 { max } else { 1.0 }, 5);
        // A top of 0 (ticks of a subnormal maximum) would draw every bar across the whole axis.
        let top = ticks
            .last()
            .copied()
            .filter(|t| t.is_normal() && *t > 0.0)
            .unwrap_or(1.0);
        let bar_h = if self.stacked { 16.0 } else { 12.0 };
        let row_h = if self.stacked {
            24.0
        } else {
            drawn.len() as f64 * bar_h + 10.0
        };
        Geometry {
            ticks,
            top,
            x0: self.axis_x0(),
            x1: W - 80.0,
            y0: 30.0 + legend.extra(),
            bar_h,
            row_h,
        }
    }

    /// One category: its label, its bars (or "n/a"), and their values.
    fn draw_row(&self, s: &mut String, g: &Geometry, drawn: &[usize], c: usize, cat: &str) {
        let (x0, bar_h, row_h) = (g.x0, g.bar_h, g.row_h);
        let ry = g.y0 + c as f64 * row_h;
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\"><title>{}</title>{}</text>",
            x0 - 6.0,
            ry + row_h / 2.0 + 4.0,
            esc(cat),
            esc(&cut(cat, 40))
        );
        let mut acc = 0.0;
        for (k, &i) in drawn.iter().enumerate() {
            let se = &self.series[i];
            let v = self.value(i, c);
            let (x, y) = if self.stacked {
                (x0 + g.sx(acc), ry + (row_h - bar_h) / 2.0)
            } else {
                (x0, ry + 5.0 + k as f64 * bar_h)
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
            let w = g.sx(v);
            let _ = write!(
                s,
                "<rect class=\"mark\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" \
                 fill=\"{}\" data-value=\"{v}\"><title>{} · {}: {}</title></rect>",
                bar_h - 2.0,
                color(se, i),
                esc(cat),
                esc(&se.name),
                esc(&units::value(v, &self.unit))
            );
            if !self.stacked {
                let _ = write!(
                    s,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{}</text>",
                    x + w + 4.0,
                    y + bar_h - 3.5,
                    esc(&units::value(v, &self.unit))
                );
            }
        }
        if self.stacked {
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{}</text>",
                x0 + g.sx(acc) + 4.0,
                ry + row_h / 2.0 + 4.0,
                esc(&units::value(acc, &self.unit))
            );
        }
    }
}

/// The positions a bar chart is drawn at.
struct Geometry {
    ticks: Vec<f64>,
    /// The value at the right end of the axis.
    top: f64,
    /// Left and right end of the value axis; first row's top.
    x0: f64,
    x1: f64,
    y0: f64,
    bar_h: f64,
    row_h: f64,
}

impl Geometry {
    /// A value's length along the axis.
    fn sx(&self, v: f64) -> f64 {
        ((v / self.top) * (self.x1 - self.x0)).clamp(0.0, self.x1 - self.x0)
    }

    fn height(&self, ncat: usize) -> f64 {
        self.y0 + ncat as f64 * self.row_h + 28.0
    }
}
