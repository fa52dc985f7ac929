//! What an import wrote, counted for its summary (`written` in docs/schemas/import.schema.json).

use serde::Serialize;

/// What was written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Written {
    pub connections: u64,
    /// Requests and replies written.
    pub messages: u64,
    pub wire_bytes: u64,
    /// Gap records: where bytes were lost (sequence holes, segments cut by the snaplen, messages
    /// that were not whole).
    pub gap_records: u64,
    /// Messages the gaps say were lost.
    pub dropped_messages: u64,
    pub dropped_bytes: u64,
    /// Messages whose credentials (or, with `--redact values`, values) were replaced.
    pub redacted_messages: u64,
    /// Messages that could not be checked for credentials, written as gaps.
    pub unredactable_messages: u64,
    /// Connections of the proxy's own topology probes (`hello`s it sends the upstream, seen in
    /// a packet capture taken on its host): written with the application name
    /// `mongotape topology probe`, or left out with `--skip-probes` (and not counted in
    /// `connections`).
    #[serde(default)]
    pub topology_probes: u64,
}
