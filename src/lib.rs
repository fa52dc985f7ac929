//! mongotape records MongoDB wire traffic through a proxy and replays it against a server, measuring
//! what the server spends.
//!
//! The folder layout is the architecture:
//!
//! - [`wire`]: the MongoDB wire protocol and the only place that knows byte layouts. Framing,
//!   every opcode (OP_MSG owned and in place, OP_COMPRESSED and the legacy ones), raw BSON, what a
//!   message means (command, namespace, session, outcome, step marker), the hello rewrite. Pure,
//!   no I/O.
//! - [`capture`]: the `.mtape` file format (zstd-compressed, streamed, crash-tolerant): the record
//!   encoding, a streaming writer and reader with bounded memory, rotated segments and their
//!   reading as one capture.
//! - [`net`]: reaching a deployment: connection strings (the driver's parser, SRV resolved) and
//!   rustls configurations for both sides of a TLS connection. Shared by the proxy and the replayer.
//! - [`state`]: the state a replay starts from: a point-in-time snapshot of the namespaces a
//!   workload uses (`snapshot`, `record --snapshot`), read at one cluster time with the driver and
//!   stored in mongodump's layout; and the reader of such a folder, mongodump's own included.
//! - [`fault`]: faults on purpose (`record --fault`): rules that make the proxy answer with a
//!   MongoDB error, lose or delay a reply, cut or stall a connection; the rule model, its text
//!   and JSON syntax, and the live set with fire counts and seeded draws. Decides only.
//! - [`proxy`]: `mongotape record`. A TCP proxy that forwards bytes unchanged and hands whole messages
//!   to a recorder thread on the side; the recorder never slows forwarding.
//! - [`import`]: `mongotape import`. Captures made from other recordings: pcap and pcapng files
//!   (the packets' layers read, TCP reassembled by mongotape, holes kept as gaps), mongoreplay
//!   playback files and mongod/mongos traffic recordings; and `record --interface`, the same
//!   reassembly on packets sniffed live (`live`, through tcpdump). Writes captures as the
//!   recorder does, alongside the proxy.
//! - [`redact`]: what a capture may keep: credentials always removed, and with `--redact values`
//!   every string and binary value replaced by a keyed hash of the same length.
//! - [`replay`]: `mongotape replay`. Reissues a capture against a server at a chosen pace and
//!   concurrency, rewriting what must change (sessions, cursors, cluster time, auth); folders in
//!   pipeline order: source, request, route, lane, client, measure.
//! - [`report`]: `inspect`, `cat`, `analyze/`, `compare/` and every HTML page (`html/`): what a
//!   capture or a replay says, as text, JSON and HTML, with one number format (`units`).
//! - [`shadow`]: `mongotape shadow`. The proxy of `record` with a live mirror beside it: the
//!   reads it forwards are sent again to candidate servers (and a control) off the forwarding
//!   path, with bounded queues, rewritten as the replayer rewrites them, their replies compared
//!   with production's as an A/B replay compares them, per query shape.
//! - [`shape`]: query shapes, one definition for every report: a request with its literals
//!   replaced by type placeholders (`find shop.orders {status: ?string}`), its stable hash, the
//!   bounded table of shapes and the map of open cursors that charges a getMore to its shape.
//! - [`plan`]: query plans: the `explain` command for a request, and its reply as one line
//!   (`IXSCAN {status: 1} -> FETCH`) with the keys and documents examined.
//! - [`slice`]: `mongotape slice` and the `--since`/`--until`/`--app` filters of `cat`, `analyze`
//!   and `replay`: what a time window and filters keep of a capture, streamed, as a capture that
//!   stays replayable (connections opened before the window, cursors, transactions whole).
//! - [`metrics`]: live metrics for `record --metrics` and `replay --metrics`: bounded labels, an
//!   atomic latency histogram, the Prometheus exposition and its HTTP endpoint.
//!
//! - [`figures`]: what every report and status line shares, one floor below them: every number as
//!   text (`units`), tables, the summary every report carries, phases, timeline buckets.
//!
//! Layers, bottom up: wire < capture net figures < redact metrics shape plan slice < fault state < proxy replay < import shadow < report < cli
//!
//! (`tests/layers.rs` holds the code to that line, and `docs/architecture.md` says it again.)
//!
//! `main.rs` and `cli/` only parse the command line and call into these. The data paths of record
//! and replay, and where a new opcode, rewrite rule, report or chart goes: `docs/architecture.md`.

#![forbid(unsafe_code)]

pub mod capture;
pub mod fault;
pub mod figures;
pub mod import;
pub mod metrics;
pub mod net;
pub mod plan;
pub mod proxy;
pub mod redact;
pub mod replay;
pub mod report;
pub mod shadow;
pub mod shape;
pub mod slice;
pub mod state;
pub mod wire;
