//! Why, beyond how much, in a replay: the target's errors by command and code
//! (`errors_by_code`) and the K slowest requests replayed (`slowest`), each with its query shape.
//! The shape and the body are read from the request's bytes only for an error whose entry still
//! names fewer than three shapes, and for a request slow enough to enter the list: the hot path
//! pays for neither. A kept request's shape is the feed's when it has one (a getMore's is then
//! its cursor's) and its application its recorded connection's: both are looked up once the run
//! is done ([`Why::slowest`]), in tables the feed keeps.

use crate::figures::errors::{ErrorSeen, ErrorTally, DEFAULT_MAX_ERROR_ENTRIES};
use crate::figures::slowest::{body_text, SlowRequest, Slowest, DEFAULT_SLOWEST};
use crate::shape::{ShapeId, ShapeStats, ShapeTable, Shaper};
use crate::wire::Message;
use std::collections::HashMap;

/// Shape ids remembered for the kept requests before they are pruned to those still kept.
const MAX_SLOTS: usize = 10_000;

/// One answered request as the lane hands it over.
pub struct Answered<'a> {
    pub command: &'a str,
    pub namespace: &'a str,
    /// The request as sent (cursor ids patched), and the target's reply.
    pub request: &'a [u8],
    pub reply: &'a [u8],
    pub origin_conn: u64,
    pub origin_request: i32,
    /// When it was recorded, from the first replayed request.
    pub offset_ns: u64,
    /// Its recorded latency, when its recorded reply was seen.
    pub recorded_ns: Option<u64>,
    pub latency_ns: u64,
    pub error: bool,
    /// Its shape in the feed's table (a getMore's: its cursor's).
    pub shape: Option<ShapeId>,
}

#[derive(Debug)]
pub struct Why {
    pub errors: ErrorTally,
    slowest: Slowest,
    shaper: Shaper,
    /// The feed's shape of each kept request, by (recorded connection, request id).
    slots: HashMap<(u64, i32), ShapeId>,
    /// The size of `slots` at which those no longer kept are dropped.
    prune_at: usize,
}

impl Default for Why {
    fn default() -> Self {
        Why::new(DEFAULT_SLOWEST, false)
    }
}

impl Why {
    /// `redacted`: the capture was recorded with `--redact values` (the target's messages are
    /// cut before the values they quote).
    pub fn new(slowest: usize, redacted: bool) -> Why {
        Why {
            errors: ErrorTally::new(DEFAULT_MAX_ERROR_ENTRIES, redacted),
            slowest: Slowest::new(slowest),
            shaper: Shaper::new(),
            slots: HashMap::new(),
            prune_at: MAX_SLOTS,
        }
    }

    pub fn answered(&mut self, a: &Answered<'_>) {
        if a.error {
            let (errors, shaper) = (&mut self.errors, &mut self.shaper);
            ErrorSeen::of_frame(a.reply, |seen| {
                errors.add(a.command, &seen, || shape(shaper, a.request));
            });
        }
        if !self.slowest.admits(a.latency_ns) {
            return;
        }
        let msg = Message::parse(a.request).ok();
        let (shape_hash, shape) = match shape(&mut self.shaper, a.request) {
            Some((h, t)) => (Some(h), Some(t)),
            None => (None, None),
        };
        let (body, body_cut) = msg
            .as_ref()
            .map_or_else(|| ("(undecodable)".to_owned(), false), body_text);
        let request = SlowRequest {
            at_s: a.offset_ns as f64 / 1e9,
            connection: a.origin_conn,
            request_id: a.origin_request,
            application: None,
            command: a.command.to_owned(),
            namespace: a.namespace.to_owned(),
            shape_hash,
            shape,
            recorded_us: a.recorded_ns.map(|ns| ns as f64 / 1e3),
            replayed_us: Some(a.latency_ns as f64 / 1e3),
            body,
            body_cut,
        };
        self.slowest.push(a.latency_ns, request);
        if let Some(id) = a.shape {
            if self.slots.len() >= self.prune_at {
                let kept = &self.slowest;
                let live: std::collections::HashSet<(u64, i32)> = kept
                    .requests()
                    .map(|r| (r.connection, r.request_id))
                    .collect();
                self.slots.retain(|k, _| live.contains(k));
                // With K past the bound, pruning at twice what is kept stays linear.
                self.prune_at = MAX_SLOTS.max(2 * self.slots.len());
            }
            self.slots.insert((a.origin_conn, a.origin_request), id);
        }
    }

    /// The requests kept, slowest first, each with the feed's shape of it (`shapes`) when it has
    /// one and the application name of its recorded connection (`applications`).
    pub fn slowest(
        &self,
        shapes: &ShapeTable<ShapeStats>,
        applications: &HashMap<u64, String>,
    ) -> Vec<crate::figures::slowest::SlowRequest> {
        let mut out = self.slowest.sorted();
        for r in &mut out {
            let key = (r.connection, r.request_id);
            if let Some((shape, _)) = self.slots.get(&key).and_then(|&id| shapes.get(id)) {
                r.shape_hash = Some(shape.hash());
                r.shape = Some(shape.text.clone());
            }
            r.application = applications.get(&r.connection).cloned();
        }
        out
    }
}

/// The shape of a request (a getMore's own, `getMore db.coll`: the cursor's opening is not
/// followed here), as (hash, text).
fn shape(shaper: &mut Shaper, request: &[u8]) -> Option<(String, String)> {
    let msg = Message::parse(request).ok()?;
    let view = shaper.request(&msg)?.view();
    Some((crate::shape::hash(view.text), view.text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{MsgFlags, OpMsgWriter};
    use bson::rawdoc;

    fn find(filter: bson::RawDocumentBuf) -> Vec<u8> {
        let mut w = OpMsgWriter::new(128, MsgFlags::empty());
        let doc = rawdoc! {"find": "c", "filter": filter, "$db": "d"};
        w.body().extend_from_slice(doc.as_bytes());
        w.finish()
    }

    #[test]
    fn kept_requests_take_the_feeds_shape_and_application_and_the_ids_stay_bounded() {
        let mut shapes: ShapeTable<ShapeStats> = ShapeTable::new(10);
        let mut shaper = Shaper::new();
        let opened = find(rawdoc! {"a": 1});
        let id = shapes.id(&shaper.request_wire(&opened).unwrap().view());
        // A getMore's own shape would be `getMore d.c`; the feed charged it to the find's.
        let get_more = {
            let mut w = OpMsgWriter::new(64, MsgFlags::empty());
            let doc = rawdoc! {"getMore": 7_i64, "collection": "c", "$db": "d"};
            w.body().extend_from_slice(doc.as_bytes());
            w.finish()
        };
        let mut why = Why::new(3, false);
        let reply = find(rawdoc! {});
        for i in 0..(3 * MAX_SLOTS as u64) {
            why.answered(&Answered {
                command: "getMore",
                namespace: "d.c",
                request: &get_more,
                reply: &reply,
                origin_conn: i % 5,
                origin_request: i as i32,
                offset_ns: i,
                recorded_ns: None,
                latency_ns: i,
                error: false,
                shape: Some(id),
            });
            assert!(why.slots.len() <= MAX_SLOTS, "{i}");
        }
        let apps = HashMap::from([(0, "shop".to_owned())]);
        let kept = why.slowest(&shapes, &apps);
        assert_eq!(kept.len(), 3);
        for r in &kept {
            assert_eq!(r.shape.as_deref(), Some("find d.c {a: ?number}"), "{r:?}");
            assert_eq!(
                r.application.as_deref(),
                (r.connection == 0).then_some("shop")
            );
        }
    }
}
