//! The replay's query shapes as a table, built once for the text summary (the ten that took the
//! most replayed time, shape text cut to fit 100 columns) and the page (every shape, whole text).

use super::shapes::{ReplayShape, ReplayShapes};
use crate::figures::table::{Column, Field, Table};
use crate::figures::units::{self, duration_us};

/// Shapes the text summary lists.
pub const TEXT_ROWS: usize = 10;

/// The columns, each with its cell of a shape.
fn fields() -> [Field<ReplayShape>; 12] {
    [
        (Column::new("shape").fit(), |s| s.replayed.shape.clone()),
        (Column::new("hash").html_only(), |s| s.replayed.hash.clone()),
        (Column::new("count"), |s| s.replayed.figures.count.to_string()),
        (Column::new("getMores").html_only(), |s| {
            s.replayed.figures.getmores.to_string()
        }),
        (Column::new("errors"), |s| s.replayed.figures.errors.to_string()),
        (Column::new("p50"), |s| {
            lat(s.replayed.figures.count, s.replayed.figures.no_reply, s.replayed.figures.p50_us)
        }),
        (Column::new("p99"), |s| {
            lat(s.replayed.figures.count, s.replayed.figures.no_reply, s.replayed.figures.p99_us)
        }),
        (Column::new("recorded p50"), |s| {
            lat(s.recorded.count, s.recorded.no_reply, s.recorded.p50_us)
        }),
        (Column::new("recorded p99").html_only(), |s| {
            lat(s.recorded.count, s.recorded.no_reply, s.recorded.p99_us)
        }),
        (Column::new("total"), |s| duration_us(s.replayed.figures.total_us)),
        (Column::new("share"), |s| {
            units::share(Some(s.replayed.figures.share))
        }),
        (Column::new("docs"), |s| {
            s.replayed.figures.docs_returned.to_string()
        }),
    ]
}

/// A latency of one side of a shape, `-` when none of its requests had a reply.
fn lat(count: u64, no_reply: u64, v: f64) -> String {
    if count > no_reply {
        duration_us(v)
    } else {
        "-".into()
    }
}

/// The shapes table: the first `limit` shapes and `other` when it holds any; the text cuts the
/// shape text to fit `TEXT_WIDTH`, the page keeps it whole.
pub fn table(shapes: &ReplayShapes, limit: usize) -> Table {
    let other = &shapes.shapes_other;
    let listed = shapes.shapes.iter().take(limit);
    let rows = listed.chain((other.replayed.figures.count + other.replayed.figures.getmores > 0).then_some(other));
    Table::of(&fields(), rows)
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
    s.push_str(&table(shapes, TEXT_ROWS).render());
    let other = &shapes.shapes_other.replayed.figures;
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
    use crate::figures::table::TEXT_WIDTH;
    use crate::shape::{ShapeFigures, ShapeReport};

    #[test]
    fn the_text_table_fits_100_columns_and_cuts_the_shape_with_an_ellipsis() {
        let long = format!("find shop.orders {{{}}}", "field: ?string, ".repeat(20));
        let shape = |text: &str, n: u64| ReplayShape {
            replayed: ShapeReport {
                hash: crate::shape::hash(text),
                shape: text.to_owned(),
                figures: ShapeFigures {
                    count: n,
                    p50_us: 1234.5,
                    p99_us: 99_999.0,
                    total_us: 1.5e9,
                    share: 0.5,
                    docs_returned: 123_456,
                    ..ShapeFigures::default()
                },
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
        let page = table(&shapes, usize::MAX).for_html();
        assert_eq!(page.rows().len(), 12);
        assert!(page.rows().iter().any(|r| r[0] == long));
    }
}
