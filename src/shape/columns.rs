//! The one column list of every shape table (analyze's, a replay's, a merged replay's), built
//! once as a [`Table`] and rendered as text and HTML: a shape figure is one line here. The text
//! leaves hash, getMores, mean and reply bytes to the page (analyze's; a replay's page has the
//! recorded latencies instead) and cuts the shape's text to fit
//! [`crate::figures::table::TEXT_WIDTH`]; the page keeps it whole.

use super::{ShapeFigures, ShapeReport};
use crate::figures::table::{Column, Field, Table};
use crate::figures::units::{self, duration_us};

/// One row of a shape table: the shape with its figures, and the capture's figures of the same
/// shape in a replay's table.
pub struct ShapeRow<'a> {
    pub shape: &'a ShapeReport,
    pub recorded: Option<&'a ShapeFigures>,
}

/// A latency of a shape's side, `-` when none of its requests had a reply.
fn latency(s: &ShapeFigures, v: f64) -> String {
    if s.answered() {
        duration_us(v)
    } else {
        "-".into()
    }
}

fn recorded(r: &ShapeRow<'_>, v: fn(&ShapeFigures) -> f64) -> String {
    r.recorded.map_or("-".into(), |f| latency(f, v(f)))
}

/// The columns, each with its cell of a row; `recorded_side`: the capture's latencies beside the
/// replayed ones; `examined`: the documents examined per request (a replay with `--explain`).
fn fields<'a>(recorded_side: bool, examined: bool) -> Vec<Field<ShapeRow<'a>>> {
    let mut f: Vec<Field<ShapeRow<'a>>> = vec![
        (Column::new("shape").fit(), |r| r.shape.shape.clone()),
        (Column::new("hash").html_only(), |r| r.shape.hash.clone()),
        (Column::new("count"), |r| r.shape.figures.count.to_string()),
        (Column::new("getMores").html_only(), |r| {
            r.shape.figures.getmores.to_string()
        }),
        (Column::new("errors"), |r| {
            r.shape.figures.errors.to_string()
        }),
    ];
    let p50: fn(&ShapeRow<'a>) -> String = |r| latency(&r.shape.figures, r.shape.figures.p50_us);
    let p99: fn(&ShapeRow<'a>) -> String = |r| latency(&r.shape.figures, r.shape.figures.p99_us);
    if recorded_side {
        // The page names both pairs of p50 and p99 in their headers ("p50" beside "recorded
        // p50" reads as either once the header has scrolled away); the text has no room to.
        f.push((Column::new("p50").text_only(), p50));
        f.push((Column::new("replayed p50").html_only(), p50));
        f.push((Column::new("p99").text_only(), p99));
        f.push((Column::new("replayed p99").html_only(), p99));
    } else {
        f.push((Column::new("p50"), p50));
        f.push((Column::new("p99"), p99));
    }
    // A replay's page has two pairs of latencies: the mean and the reply bytes (in its JSON)
    // would take it past 1280 px, so only analyze's page shows them.
    if recorded_side {
        f.push((Column::new("recorded p50"), |r| recorded(r, |f| f.p50_us)));
        f.push((Column::new("recorded p99").html_only(), |r| {
            recorded(r, |f| f.p99_us)
        }));
    } else {
        f.push((Column::new("mean").html_only(), |r| {
            latency(&r.shape.figures, r.shape.figures.mean_us)
        }));
    }
    let tail: [Field<ShapeRow<'a>>; 3] = [
        (Column::new("total"), |r| {
            duration_us(r.shape.figures.total_us)
        }),
        (Column::new("share"), |r| {
            units::share(Some(r.shape.figures.share))
        }),
        (Column::new("docs"), |r| {
            r.shape.figures.docs_returned.to_string()
        }),
    ];
    f.extend(tail);
    if !recorded_side {
        f.push((Column::new("reply bytes").html_only(), |r| {
            units::bytes(r.shape.figures.reply_bytes)
        }));
    }
    if examined {
        f.push((Column::new("examined/req"), |r| {
            r.shape
                .figures
                .docs_per_request
                .map_or("-".into(), |d| units::count(d as f64))
        }));
    }
    f
}

/// The shape table of these rows; the recorded latencies when `recorded_side`, the documents
/// examined per request when any row has them.
pub fn table<'a>(rows: impl IntoIterator<Item = ShapeRow<'a>>, recorded_side: bool) -> Table {
    let rows: Vec<ShapeRow<'a>> = rows.into_iter().collect();
    let examined = rows
        .iter()
        .any(|r| r.shape.figures.docs_per_request.is_some());
    Table::of(&fields(recorded_side, examined), &rows)
}

/// The rows of a report's own shapes (no other side): the first `limit`, and `other` when it
/// holds any request.
pub fn own<'a>(
    shapes: &'a [ShapeReport],
    other: &'a ShapeReport,
    limit: usize,
) -> impl Iterator<Item = ShapeRow<'a>> {
    let busy = other.figures.count + other.figures.getmores > 0;
    shapes
        .iter()
        .take(limit)
        .chain(busy.then_some(other))
        .map(|shape| ShapeRow {
            shape,
            recorded: None,
        })
}
