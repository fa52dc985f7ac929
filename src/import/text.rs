//! What `mongotape import` and `record --interface` print as text: the figures of
//! [`ImportSummary`] and [`LiveSummary`], one sentence per kind of input.

use super::live::{self, LiveOptions, LiveSummary};
use super::mongod::RecordingRead;
use super::mongoreplay::OpsRead;
use super::tcp::TcpStats;
use super::{ImportSummary, PacketsRead, SourceRead};
use std::path::Path;

impl ImportSummary {
    /// What `mongotape import` prints, the capture written at `out` (`skip_probes`: the proxy's
    /// topology probes were left out, not named).
    pub fn text(&self, out: &Path, skip_probes: bool) -> String {
        let s = self;
        let mut text = match &s.read {
            SourceRead::Packets(p) => render_packets(s, p, out, skip_probes),
            SourceRead::MongoReplay(m) => render_playback(s, m, out),
            SourceRead::MongodRecording(r) => render_recording(s, r, out),
        };
        for d in &s.damaged {
            text.push_str(&format!("damaged: {d}\n"));
        }
        text
    }
}

fn render_playback(s: &ImportSummary, m: &OpsRead, out: &Path) -> String {
    let w = &s.written;
    format!(
        "imported {} mongoreplay operations from {} file(s) into {}\n\
         connections: {}; messages: {} ({} bytes), {} credentials redacted\n\
         replies mongoreplay shortened to their first document: {}; not whole messages (gaps): {}\n",
        m.ops,
        s.files.len(),
        out.display(),
        w.connections,
        w.messages,
        w.wire_bytes,
        w.redacted_messages,
        m.shortened_replies,
        m.not_messages,
    )
}

fn render_packets(s: &ImportSummary, p: &PacketsRead, out: &Path, skip_probes: bool) -> String {
    let (w, t) = (&s.written, &p.tcp);
    let mut text = format!(
        "imported {} packets ({} TCP segments) from {} file(s) into {}\n\
         connections: {} ({} left out: no server named at either end)\n\
         messages: {} ({} bytes), {} credentials redacted\n\
         gaps: {} ({} messages, {} bytes lost); {} sequence holes, {} segments cut by the snaplen\n\
         TCP: {} retransmitted, {} overlapping, {} out of order\n",
        p.packets,
        p.tcp_segments,
        s.files.len(),
        out.display(),
        w.connections,
        t.ignored_connections,
        w.messages,
        w.wire_bytes,
        w.redacted_messages,
        w.gap_records,
        w.dropped_messages,
        w.dropped_bytes,
        t.holes,
        t.truncated,
        t.retransmitted,
        t.overlapping,
        t.out_of_order,
    );
    text.push_str(&reassembly_lines(t));
    text.push_str(&probe_line(w.topology_probes, skip_probes));
    let k = &p.skipped;
    if k.not_tcp + k.ip_fragments + k.malformed + k.unknown_linktype > 0 {
        text.push_str(&format!(
            "skipped packets: {} not TCP, {} IP fragments, {} malformed, {} of an unknown link type{}\n",
            k.not_tcp,
            k.ip_fragments,
            k.malformed,
            k.unknown_linktype,
            if p.unknown_linktypes.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.unknown_linktypes.join(", "))
            }
        ));
    }
    text
}

/// The proxy's own topology probes found among the connections, named or left out.
fn probe_line(probes: u64, skip_probes: bool) -> String {
    match (probes, skip_probes) {
        (0, _) => String::new(),
        (n, true) => {
            format!("topology probes: {n} connections of the proxy's own hellos left out\n")
        }
        (n, false) => format!(
            "topology probes: {n} connections of the proxy's own hellos, named `{}` \
             (--skip-probes leaves them out)\n",
            crate::wire::info::TOPOLOGY_PROBE_APP
        ),
    }
}

fn render_recording(s: &ImportSummary, r: &RecordingRead, out: &Path) -> String {
    let w = &s.written;
    let mut text = format!(
        "imported {} packets of mongod traffic recordings from {} input(s) into {}\n",
        r.packets,
        s.files.len(),
        out.display()
    );
    // One line per layout met, with the files that have it (a directory has many).
    let mut layouts: Vec<(&str, Vec<&str>)> = Vec::new();
    for entry in &r.layouts {
        let (file, layout) = entry.split_once(": ").unwrap_or(("", entry));
        match layouts.iter_mut().find(|(l, _)| *l == layout) {
            Some((_, files)) => files.push(file),
            None => layouts.push((layout, vec![file])),
        }
    }
    for (layout, files) in &layouts {
        let which = match files.as_slice() {
            [one] => one.to_string(),
            [first, .., last] => format!("{} files, {first} to {last}", files.len()),
            [] => String::new(),
        };
        text.push_str(&format!("layout: {layout}: {which}\n"));
    }
    text.push_str(&format!(
        "checksums: {} verified, {} mismatched, {} not verified\n",
        r.checksums_verified,
        r.checksum_mismatches.len(),
        r.unverified.len()
    ));
    for u in &r.unverified {
        text.push_str(&format!("not verified: {u}\n"));
    }
    text.push_str(&format!(
        "connections: {}; messages: {} ({} bytes), {} credentials redacted; session events: {}\n\
         internal traffic left out: {} sessions, {} messages (--keep-internal keeps it)\n",
        w.connections,
        w.messages,
        w.wire_bytes,
        w.redacted_messages,
        r.session_events,
        r.internal_sessions,
        r.internal_messages,
    ));
    text
}

/// What the reassembly's bounds let go and the TLS connections it left out, when any.
fn reassembly_lines(t: &TcpStats) -> String {
    let mut out = String::new();
    if t.expired + t.evicted + t.out_of_window > 0 {
        out.push_str(&format!(
            "reassembly bounds: {} connections let go idle, {} evicted (--max-connections, \
             --reassembly-mb); {} segments too far ahead dropped\n",
            t.expired, t.evicted, t.out_of_window
        ));
    }
    if t.tls_connections > 0 {
        out.push_str(&format!(
            "TLS: {} connections left out (encrypted, nothing of them written): {}{}\n",
            t.tls_connections,
            t.tls.join(", "),
            if t.tls_connections > t.tls.len() as u64 {
                ", ..."
            } else {
                ""
            }
        ));
    }
    out
}

impl LiveSummary {
    /// The line `record --interface` ends with: what was recorded and what was lost.
    pub fn status_line(&self) -> String {
        let s = self;
        let w = &s.written;
        let k = &s.kernel;
        format!(
            "recorded {} connections, {} messages ({} bytes) from {} packets in {} segment(s){}; \
         gaps: {} ({} messages lost); kernel: {} packets received by the filter, {} dropped",
            w.connections,
            w.messages,
            w.wire_bytes,
            s.read.packets,
            s.segments,
            s.ended_by
                .as_ref()
                .map(|r| format!(", ended: {r}"))
                .unwrap_or_default(),
            w.gap_records,
            w.dropped_messages,
            k.received_by_filter,
            k.dropped_by_kernel + k.dropped_by_interface,
        )
    }
}

/// The line `record --interface` starts with: what is sniffed, where, into which capture.
pub fn sniffing_line(opts: &LiveOptions) -> String {
    format!(
        "sniffing {} on {} into {} (TLS traffic cannot be read this way: use the proxy or the \
         server's traffic recording for it); stop with Ctrl-C",
        live::filter(&opts.servers),
        opts.interface,
        opts.output.path.display()
    )
}
