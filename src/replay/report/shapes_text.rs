//! The replay's query shapes as a table, built once for the text summary (the ten that took the
//! most replayed time, shape text cut to fit 100 columns) and the page (every shape, whole text).

use super::shapes::{ReplayShape, ReplayShapes};
use crate::figures::table::Table;
use crate::figures::units::{self, duration_us};

/// Shapes the text summary lists.
pub const TEXT_ROWS: usize = 10;
/// The width the text table fits in.
pub const TEXT_WIDTH: usize = 100;

const HEADERS: [&str; 12] = [
    "shape",
    "hash",
    "count",
    "getMores",
    "errors",
    "p50",
    "p99",
    "recorded p50",
    "recorded p99",
    "total",
    "share",
    "docs",
];
const HTML_ONLY: [&str; 3] = ["hash", "getMores", "recorded p99"];

/// `text` cut to `width` characters, the last one `…` when cut.
pub fn ellipsis(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn cells(s: &ReplayShape) -> Vec<String> {
    let r = &s.replayed;
    let lat = |count: u64, no_reply: u64, v: f64| {
        if count > no_reply {
            duration_us(v)
        } else {
            "-".into()
        }
    };
    let rec = &s.recorded;
    vec![
        r.shape.clone(),
        r.hash.clone(),
        r.count.to_string(),
        r.getmores.to_string(),
        r.errors.to_string(),
        lat(r.count, r.no_reply, r.p50_us),
        lat(r.count, r.no_reply, r.p99_us),
        lat(rec.count, rec.no_reply, rec.p50_us),
        lat(rec.count, rec.no_reply, rec.p99_us),
        duration_us(r.total_us),
        units::share(Some(r.share)),
        r.docs_returned.to_string(),
    ]
}

/// The shapes table: the first `limit` shapes and `other` when it holds any; `cut` fits the
/// shape text into [`TEXT_WIDTH`] with the other text columns (the text summary), else keeps it
/// whole (the page).
pub fn table(shapes: &ReplayShapes, limit: usize, cut: bool) -> Table {
    let other = &shapes.shapes_other;
    let mut rows: Vec<Vec<String>> = shapes
        .shapes
        .iter()
        .take(limit)
        .chain((other.replayed.count + other.replayed.getmores > 0).then_some(other))
        .map(cells)
        .collect();
    if cut {
        let mut widths: Vec<usize> = HEADERS.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let others: usize = HEADERS
            .iter()
            .zip(&widths)
            .skip(1)
            .filter(|(h, _)| !HTML_ONLY.contains(h))
            .map(|(_, w)| w + 2)
            .sum();
        let width = TEXT_WIDTH.saturating_sub(others).max(20);
        for row in &mut rows {
            row[0] = ellipsis(&row[0], width);
        }
    }
    Table::new(HEADERS).html_only(&HTML_ONLY).with_rows(rows)
}

/// The text summary's part on shapes: the top of the table, and how many more there are.
pub fn render_text(shapes: &ReplayShapes) -> String {
    if shapes.shapes.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "\nQuery shapes, the {} that took the most replayed time (of {}; docs/shapes.md)\n",
        shapes.shapes.len().min(TEXT_ROWS),
        shapes.shapes.len()
    );
    s.push_str(&table(shapes, TEXT_ROWS, true).render());
    let other = &shapes.shapes_other.replayed;
    if other.count + other.getmores > 0 {
        s.push_str(&format!(
            "... {} requests of shapes past the first {} are counted under `other` (--max-shapes)\n",
            units::count((other.count + other.getmores) as f64),
            units::count(shapes.shapes_cap as f64)
        ));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::ShapeReport;

    #[test]
    fn the_text_table_fits_100_columns_and_cuts_the_shape_with_an_ellipsis() {
        let long = format!("find shop.orders {{{}}}", "field: ?string, ".repeat(20));
        let shape = |text: &str, n: u64| ReplayShape {
            replayed: ShapeReport {
                hash: crate::shape::hash(text),
                shape: text.to_owned(),
                count: n,
                p50_us: 1234.5,
                p99_us: 99_999.0,
                total_us: 1.5e9,
                share: 0.5,
                docs_returned: 123_456,
                ..ShapeReport::default()
            },
            ..ReplayShape::default()
        };
        let shapes = ReplayShapes {
            shapes: (0..12)
                .map(|i| shape(if i == 0 { &long } else { "insert shop.orders" }, 1_000_000))
                .collect(),
            shapes_cap: 10_000,
            ..ReplayShapes::default()
        };
        let text = render_text(&shapes);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.iter().all(|l| l.chars().count() <= TEXT_WIDTH),
            "{text}"
        );
        assert!(text.contains('…'), "{text}");
        // A blank line and the title, the header, the rule, ten shapes, a blank line.
        assert_eq!(lines.len(), 2 + 2 + TEXT_ROWS + 1, "{text}");
        let page = table(&shapes, usize::MAX, false).for_html();
        assert_eq!(page.rows().len(), 12);
        assert!(page.rows().iter().any(|r| r[0] == long));
    }
}
