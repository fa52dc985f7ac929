//! The figures a report keeps per shape, and their JSON entry: requests, errors, latency from an
//! HDR histogram, the time spent, documents returned and reply bytes. `getMore` and
//! `killCursors` add their time, documents and bytes to the shape of the cursor they continue;
//! latency percentiles are of the shape's own requests (its first batches).

use super::table::ShapeTable;
use super::Shape;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A latency histogram small enough for thousands of shapes: 1 µs resolution, 2 significant
/// digits, grown only as far as the slowest reply (~7 KB for replies under 10 ms).
fn new_histogram() -> Histogram<u32> {
    let mut h = Histogram::new_with_bounds(1_000, 2_000, 2).expect("static bounds are valid");
    h.auto(true);
    h
}

/// One shape's figures while a report is being made.
#[derive(Debug, Clone, Default)]
pub struct ShapeStats {
    /// Requests of this shape itself.
    pub count: u64,
    /// getMore and killCursors requests charged to it.
    pub getmores: u64,
    /// Requests that expected no reply (moreToCome, legacy writes).
    pub no_reply: u64,
    /// Replies with `ok: 0` or write errors, its own and its getMores'.
    pub errors: u64,
    /// Latency summed over the replies to its own requests.
    pub own_ns: u64,
    own_replies: u64,
    /// The fastest and slowest of those, exactly: a percentile read from the histogram (the top
    /// of its bucket) is kept within them.
    own_min_ns: u64,
    own_max_ns: u64,
    /// Latency summed over every reply charged to it (own and getMores).
    pub total_ns: u64,
    /// Documents in `firstBatch` / `nextBatch` (or an OP_REPLY's documents).
    pub docs_returned: u64,
    pub reply_bytes: u64,
    hist: Option<Histogram<u32>>,
}

/// A reply charged to a shape.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplyFigures {
    pub latency_ns: u64,
    /// The request was a getMore or killCursors of this shape's cursor.
    pub continues: bool,
    pub error: bool,
    pub docs: u64,
    pub bytes: u64,
}

impl ShapeStats {
    pub fn request(&mut self, continues: bool, expects_reply: bool) {
        if continues {
            self.getmores += 1;
        } else {
            self.count += 1;
        }
        if !expects_reply {
            self.no_reply += 1;
        }
    }

    pub fn reply(&mut self, r: ReplyFigures) {
        self.total_ns = self.total_ns.saturating_add(r.latency_ns);
        self.errors += u64::from(r.error);
        self.docs_returned += r.docs;
        self.reply_bytes += r.bytes;
        if !r.continues {
            self.own_ns = self.own_ns.saturating_add(r.latency_ns);
            self.own_min_ns = if self.own_replies == 0 {
                r.latency_ns
            } else {
                self.own_min_ns.min(r.latency_ns)
            };
            self.own_max_ns = self.own_max_ns.max(r.latency_ns);
            self.own_replies += 1;
            // Growing, not clamping (saturating_record clamps to the bound it started with);
            // an hour is the most a latency counts for, as in every other histogram.
            let v = r.latency_ns.clamp(1_000, 3_600_000_000_000);
            let _ = self.hist.get_or_insert_with(new_histogram).record(v);
        }
    }

    /// The latency histogram of its own requests' replies (none before the first).
    pub fn histogram(&self) -> Option<&Histogram<u32>> {
        self.hist.as_ref()
    }

    /// The figures again from a report's entry and the histogram the report carried with it
    /// (for adding reports up: `merge`). Counts, time, documents and bytes are exact; the mean
    /// is the entry's to its printed precision, the fastest and slowest reply the histogram's.
    pub fn from_report(r: &ShapeFigures, hist: Option<Histogram<u32>>) -> ShapeStats {
        let ns = |us: f64| (us * 1e3).round().max(0.0) as u64;
        // Into one of ours, which grows as the histograms added to it need.
        let hist = hist.map(|read| {
            let mut h = new_histogram();
            let _ = h.add(&read);
            h
        });
        let own_replies = hist.as_ref().map_or(0, |h| h.len());
        ShapeStats {
            count: r.count,
            getmores: r.getmores,
            no_reply: r.no_reply,
            errors: r.errors,
            own_ns: ns(r.mean_us * own_replies as f64),
            own_replies,
            own_min_ns: hist.as_ref().map_or(0, |h| h.min()),
            own_max_ns: hist.as_ref().map_or(0, |h| h.max()),
            total_ns: ns(r.total_us),
            docs_returned: r.docs_returned,
            reply_bytes: r.reply_bytes,
            hist,
        }
    }

    /// Adds another report's figures of the same shape.
    pub fn add(&mut self, o: &ShapeStats) {
        self.count += o.count;
        self.getmores += o.getmores;
        self.no_reply += o.no_reply;
        self.errors += o.errors;
        self.own_ns = self.own_ns.saturating_add(o.own_ns);
        self.own_min_ns = match (self.own_replies, o.own_replies) {
            (_, 0) => self.own_min_ns,
            (0, _) => o.own_min_ns,
            _ => self.own_min_ns.min(o.own_min_ns),
        };
        self.own_max_ns = self.own_max_ns.max(o.own_max_ns);
        self.own_replies += o.own_replies;
        self.total_ns = self.total_ns.saturating_add(o.total_ns);
        self.docs_returned += o.docs_returned;
        self.reply_bytes += o.reply_bytes;
        if let Some(h) = &o.hist {
            let mine = self.hist.get_or_insert_with(new_histogram);
            // Both auto-resizing with the same precision: adding cannot fail.
            let _ = mine.add(h);
        }
    }

    /// The JSON entry; `all_ns` is the time of every shape together (for `share`).
    pub fn report(&self, shape: &Shape, all_ns: u64) -> ShapeReport {
        let us = |ns: u64| ns as f64 / 1e3;
        let q = |at: f64| {
            self.hist.as_ref().map_or(0.0, |h| {
                us(h.value_at_quantile(at)
                    .clamp(self.own_min_ns, self.own_max_ns))
            })
        };
        let figures = ShapeFigures {
            count: self.count,
            getmores: self.getmores,
            no_reply: self.no_reply,
            errors: self.errors,
            p50_us: q(0.50),
            p99_us: q(0.99),
            mean_us: if self.own_replies > 0 {
                us(self.own_ns) / self.own_replies as f64
            } else {
                0.0
            },
            total_us: us(self.total_ns),
            share: if all_ns > 0 {
                self.total_ns as f64 / all_ns as f64
            } else {
                0.0
            },
            docs_returned: self.docs_returned,
            reply_bytes: self.reply_bytes,
            docs_per_request: None,
        };
        ShapeReport {
            hash: shape.hash(),
            command: shape.command.clone(),
            namespace: shape.namespace.clone(),
            shape: shape.text.clone(),
            figures,
        }
    }
}

/// One shape in a report's `shapes` array: the shape, and its figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShapeReport {
    /// First 16 hex digits of the SHA-256 of `shape` ([`super::hash`]); `other` for the entry past
    /// the cap.
    #[schemars(pattern(r"^([0-9a-f]{16}|other)$"))]
    pub hash: String,
    pub command: String,
    pub namespace: String,
    /// The shape's text, literals replaced by type placeholders (`find shop.orders {status:
    /// ?string} sort {ts: -1}`).
    pub shape: String,
    #[serde(flatten)]
    pub figures: ShapeFigures,
}

/// A shape's figures, without the shape: a report's entry (flattened into [`ShapeReport`]), the
/// capture's side of a replayed shape, each target's side of an A/B replay's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShapeFigures {
    /// Requests of the shape itself.
    pub count: u64,
    /// getMore and killCursors requests charged to it.
    pub getmores: u64,
    /// Requests that expected no reply.
    pub no_reply: u64,
    pub errors: u64,
    /// Latency of its own requests' replies, from an HDR histogram (2 significant digits).
    #[schemars(range(min = 0))]
    pub p50_us: f64,
    #[schemars(range(min = 0))]
    pub p99_us: f64,
    /// Exact mean of its own requests' latency.
    #[schemars(range(min = 0))]
    pub mean_us: f64,
    /// Latency summed over every reply charged to it, getMores included.
    #[schemars(range(min = 0))]
    pub total_us: f64,
    /// `total_us` over the sum of every shape's (`other` included).
    #[schemars(range(min = 0, max = 1))]
    pub share: f64,
    /// Documents returned: first batches plus the getMores' batches.
    pub docs_returned: u64,
    pub reply_bytes: u64,
    /// A replay with `--explain`: the documents the shape's plan examines per request
    /// (`docs_examined` of its entry in `plans`; this target's in an A/B replay; of the merged
    /// plans after `merge`). Absent from analyze, from the recorded side, and when the shape has
    /// no plan or its plan no count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs_per_request: Option<u64>,
}

impl ShapeFigures {
    /// Some of its requests had a reply (their latency means something).
    pub fn answered(&self) -> bool {
        self.count > self.no_reply
    }
}

/// The shapes of a report, as the report's top-level keys `shapes`, `shapes_other` and
/// `shapes_cap` (flattened into it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShapesReport {
    /// Every shape kept, most total time first.
    #[serde(default)]
    pub shapes: Vec<ShapeReport>,
    /// The requests of every shape past the cap, added up (`hash` and `shape` are `other`).
    #[serde(default)]
    pub shapes_other: ShapeReport,
    /// Distinct shapes kept at most.
    #[serde(default)]
    pub shapes_cap: u64,
}

impl ShapesReport {
    pub fn of(table: ShapeTable<ShapeStats>) -> ShapesReport {
        let cap = table.cap() as u64;
        let (entries, other) = table.into_parts();
        ShapesReport::of_entries(&entries, &other, cap)
    }

    /// The report of shapes with their figures, `other` and the cap, however they were kept.
    pub fn of_entries(
        entries: &[(Shape, ShapeStats)],
        other: &ShapeStats,
        cap: u64,
    ) -> ShapesReport {
        let all_ns = entries
            .iter()
            .map(|(_, s)| s.total_ns)
            .fold(other.total_ns, u64::saturating_add);
        let mut shapes: Vec<ShapeReport> = entries
            .iter()
            .map(|(shape, s)| s.report(shape, all_ns))
            .collect();
        shapes.sort_by(|a, b| {
            b.figures
                .total_us
                .total_cmp(&a.figures.total_us)
                .then(b.figures.count.cmp(&a.figures.count))
                .then_with(|| a.shape.cmp(&b.shape))
        });
        let other_shape = Shape {
            command: "other".into(),
            namespace: String::new(),
            text: "other".into(),
        };
        let mut shapes_other = other.report(&other_shape, all_ns);
        shapes_other.hash = "other".into();
        ShapesReport {
            shapes,
            shapes_other,
            shapes_cap: cap,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::ShapeView;

    #[test]
    fn getmores_add_time_and_documents_but_not_percentiles() {
        let mut t: ShapeTable<ShapeStats> = ShapeTable::new(10);
        let v = ShapeView {
            text: "find d.c {}",
            command: "find",
            namespace: "d.c",
        };
        let id = t.id(&v);
        let s = t.get_mut(id);
        for latency in [100_000, 300_000] {
            s.request(false, true);
            s.reply(ReplyFigures {
                latency_ns: latency,
                docs: 101,
                bytes: 1_000,
                ..Default::default()
            });
        }
        s.request(true, true);
        s.reply(ReplyFigures {
            latency_ns: 600_000,
            continues: true,
            error: true,
            docs: 50,
            bytes: 500,
        });
        let r = ShapesReport::of(t);
        let (e, hash) = (&r.shapes[0].figures, &r.shapes[0].hash);
        assert_eq!((e.count, e.getmores, e.errors), (2, 1, 1));
        assert_eq!((e.docs_returned, e.reply_bytes), (252, 2_500));
        assert_eq!(e.total_us, 1_000.0);
        assert_eq!(e.mean_us, 200.0);
        assert!((e.p50_us - 100.0).abs() < 2.0, "{}", e.p50_us);
        assert!((e.p99_us - 300.0).abs() < 3.0, "{}", e.p99_us);
        assert_eq!(e.share, 1.0);
        assert_eq!(*hash, crate::shape::hash("find d.c {}"));
        assert_eq!((r.shapes_cap, r.shapes_other.figures.count), (10, 0));
    }
}
