//! `inspect`'s text: the overview, then a table per connection, opcode, command and namespace.

use super::{Driver, Inspection, MAX_LISTED_CONNECTIONS};
use crate::figures::table::Table;
use crate::figures::units;

impl Inspection {
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        self.overview(&mut s);
        self.connection_table(&mut s);
        self.opcode_table(&mut s);
        self.command_table(&mut s);
        self.namespace_tables(&mut s);
        s
    }

    /// Where the capture comes from, its size and state.
    fn overview(&self, s: &mut String) {
        let m = &self.metadata;
        s.push_str(&match &m.source {
            // An import names its input; its upstream is only known when `--server` gave it.
            Some(source) => format!(
                "capture     imported by mongotape {} from {source}, starting {}\n",
                m.mongotape_version, m.start_time
            ),
            None => format!(
                "capture     recorded {} by mongotape {} from upstream {}\n",
                m.start_time, m.mongotape_version, m.upstream
            ),
        });
        if let Some(slice) = &m.slice {
            s.push_str(&format!("slice       cut from {slice}\n"));
        }
        s.push_str(&format!(
            "duration    {} from the first record to the last (cat's t counts from the first), \
             {} records, {} connections\n",
            units::duration_s(self.duration_s),
            self.records,
            self.connections_total
        ));
        s.push_str(&format!(
            "size        {} on the wire, {} on disk ({})\n",
            units::bytes(self.wire_bytes),
            units::bytes(self.compressed_file_bytes),
            units::ratio(self.compression_ratio)
        ));
        let state = match (&self.error, self.complete) {
            (Some(_), _) if self.read_errors.len() > 1 => {
                format!("read stopped early: {}", self.read_errors.join("; "))
            }
            (Some(e), _) => format!("read stopped early: {e}"),
            (None, true) => "complete (clean end record)".into(),
            (None, false) => "no end record: the recorder did not shut down cleanly".into(),
        };
        s.push_str(&format!("state       {state}\n"));
        if let Some(snap) = &self.snapshot {
            let point = match snap.kind.as_str() {
                "wall_clock" => format!(
                    "{} (wall clock: the upstream has no snapshot reads)",
                    snap.wall_time
                ),
                _ => format!("T0 Timestamp({}, {}) ({})", snap.t, snap.i, snap.wall_time),
            };
            s.push_str(&format!("snapshot    {point} in {}\n", snap.dir));
        }
        if let Some(end) = &self.state_end {
            s.push_str(&state_end_line(end));
        }
        if let Some(faults) = &self.faults {
            s.push_str(&format!("FAULTS      {}\n", faults.text()));
        }
        if self.dropped_messages > 0 {
            s.push_str(&format!(
                "GAPS        {} messages forwarded but not recorded\n",
                self.dropped_messages
            ));
        }
        s.push_str(&format!(
            "unanswered  {} requests without a reply; {} server-pushed replies; {} undecodable\n",
            self.unanswered_requests, self.unsolicited_replies, self.undecodable_messages
        ));
        if self.unanswered_untracked > 0 {
            s.push_str(&format!(
                "UNTRACKED   {} requests not kept for pairing (over the bound on unanswered requests): \
                 their replies count as server-pushed\n",
                self.unanswered_untracked
            ));
        }
    }

    /// One row per connection.
    fn connection_table(&self, s: &mut String) {
        let mut t = Table::new([
            "conn",
            "client",
            "driver",
            "app",
            "reqs",
            "replies",
            "bytes",
            "closed by",
        ]);
        for c in &self.connections {
            let d = c.driver.as_ref();
            t.row([
                c.id.to_string(),
                c.client.clone(),
                d.map(Driver::for_people).unwrap_or_else(|| "-".into()),
                d.and_then(|d| d.application.clone())
                    .unwrap_or_else(|| "-".into()),
                c.requests.to_string(),
                c.replies.to_string(),
                units::bytes(c.bytes),
                c.closed_by.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        s.push_str("\nConnections\n");
        s.push_str(&t.render());
        let o = &self.other_connections;
        if o.connections > 0 {
            s.push_str(&format!(
                "... and {} more connections after the first {MAX_LISTED_CONNECTIONS}: {} requests, {} replies, {}\n",
                o.connections,
                o.requests,
                o.replies,
                units::bytes(o.bytes)
            ));
        }
    }

    /// Messages and bytes per opcode, each direction.
    fn opcode_table(&self, s: &mut String) {
        let mut t = Table::new(["direction", "opcode", "messages", "bytes"]);
        for (dir, map) in [
            ("request", &self.requests_by_opcode),
            ("reply", &self.replies_by_opcode),
        ] {
            for (op, c) in map {
                t.row([
                    dir.to_string(),
                    op.clone(),
                    c.messages.to_string(),
                    units::bytes(c.bytes),
                ]);
            }
        }
        s.push_str("\nBy opcode\n");
        s.push_str(&t.render());
    }

    /// Per command, the busiest first.
    fn command_table(&self, s: &mut String) {
        let mut t = Table::new([
            "command",
            "requests",
            "replies",
            "no reply",
            "errors",
            "bytes",
            "mean latency",
        ]);
        let mut cmds: Vec<_> = self.by_command.iter().collect();
        cmds.sort_by(|a, b| b.1.requests.cmp(&a.1.requests).then(a.0.cmp(b.0)));
        for (name, c) in cmds {
            let mean = if c.replies > 0 {
                units::duration_ns(c.total_latency_ns as f64 / c.replies as f64)
            } else {
                "-".into()
            };
            t.row([
                name.clone(),
                c.requests.to_string(),
                c.replies.to_string(),
                c.no_reply_expected.to_string(),
                c.errors.to_string(),
                units::bytes(c.request_bytes + c.reply_bytes),
                mean,
            ]);
        }
        s.push_str("\nBy command\n");
        s.push_str(&t.render());
    }

    /// Per namespace, and per wire compressor when there was compression.
    fn namespace_tables(&self, s: &mut String) {
        let mut t = Table::new(["namespace", "requests", "bytes"]);
        for (ns, c) in &self.by_namespace {
            t.row([ns.clone(), c.messages.to_string(), units::bytes(c.bytes)]);
        }
        s.push_str("\nBy namespace\n");
        s.push_str(&t.render());
        if !self.compressed_by_compressor.is_empty() {
            let mut t = Table::new(["compressor", "messages", "bytes"]);
            for (name, c) in &self.compressed_by_compressor {
                t.row([name.clone(), c.messages.to_string(), units::bytes(c.bytes)]);
            }
            s.push_str("\nWire compression (OP_COMPRESSED)\n");
            s.push_str(&t.render());
        }
    }
}

/// `end state   T1 Timestamp(t, i) (wall time): 2 collections, 10,012 documents`, then a line per
/// collection.
fn state_end_line(end: &crate::capture::StateEndEvent) -> String {
    let point = match end.kind.as_str() {
        "wall_clock" => format!("{} (wall clock)", end.wall_time),
        _ => format!("T1 Timestamp({}, {}) ({})", end.t, end.i, end.wall_time),
    };
    let documents: u64 = end.collections.iter().map(|c| c.documents).sum();
    let mut s = format!(
        "end state   {point}: {}, {documents} documents\n",
        crate::state::verdict::collections(end.collections.len() as u64)
    );
    for c in &end.collections {
        let db_hash = c.db_hash.as_deref().map(|h| format!(", dbHash {h}"));
        s.push_str(&format!(
            "            {} {} documents, hash {}{}\n",
            c.ns,
            c.documents,
            c.hash,
            db_hash.unwrap_or_default()
        ));
    }
    s
}
