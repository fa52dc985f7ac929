//! The replay's query shapes as a table, built once for the text summary (the ten that took the
//! most replayed time, shape text cut to fit 100 columns) and the page (every shape, whole text).

use super::shapes::ReplayShapes;
use crate::figures::table::Table;
use crate::figures::units;
use crate::shape::columns::{self, ShapeRow};

/// Shapes the text summary lists.
pub const TEXT_ROWS: usize = 10;

/// The shapes table ([`crate::shape::columns`], with the recorded latencies): the first `limit`
/// shapes and `other` when it holds any; the text cuts the shape text to fit `TEXT_WIDTH`, the
/// page keeps it whole.
pub fn table(shapes: &ReplayShapes, limit: usize) -> Table {
    let other = &shapes.shapes_other;
    let busy = other.replayed.figures.count + other.replayed.figures.getmores > 0;
    let rows = shapes
        .shapes
        .iter()
        .take(limit)
        .chain(busy.then_some(other));
    columns::table(
        rows.map(|s| ShapeRow {
            shape: &s.replayed,
            recorded: Some(&s.recorded),
        }),
        true,
    )
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
    use crate::replay::report::shapes::ReplayShape;
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
