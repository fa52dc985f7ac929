//! The one harness for the black-box integration tests. Every test file includes it the same way:
//! `mod common; use common::*;`.
//!
//! - [`process`]: child processes with drained output, deadlines and signals; [`run_command`].
//! - [`server`]: [`Server`], a `secantusd-rs` process on `127.0.0.1:0` with its own storage.
//! - [`proxy`]: [`Proxy`], the `mongotape record` binary in front of a server.
//! - [`clients`]: one workload through a real client (pymongo, mongosh, PHP) via
//!   `tools/workloads/run` ([`run_client`]).
//! - [`load`]: a pymongo insert load in the background and the wait for it to flow ([`Load`]),
//!   what the capture holds of it ([`inserted_ids`]), [`count_documents`].
//! - [`pymongo`]: inline pymongo snippets ([`python`]), [`admin_command`], and a whole-database
//!   dump to compare two servers ([`dump_db`], [`assert_same_db`]).
//! - [`record`]: recording through the proxy ([`record_through`], [`record_workload`],
//!   [`record_python`], [`record_inserts_finds`]).
//! - [`cli`]: the `mongotape` binary run to completion ([`mongotape`], [`analyze_json`],
//!   [`inspect_json`]).
//! - [`replay`]: `mongotape replay` and its report ([`replay()`], [`try_replay`], [`Replay`]).
//! - [`pki`]: a test PKI made with rcgen ([`Pki`]) and secantusd-rs serving TLS with it.
//! - [`schema`]: the reports' JSON Schemas in `docs/schemas/` ([`assert_schema`]).
//! - [`sniff`]: `tcpdump` and `dumpcap` capturing a port on the loopback ([`Sniffer`]).
//! - [`scrape`]: the metrics endpoint's address and one scrape ([`scrape()`], [`metrics_addr`]).
//! - [`netns`]: a network namespace of the test's own ([`Netns`]).
//! - [`html`]: report pages in headless Chromium ([`render`], [`screenshot`], [`assert_page_ok`]).
//! - [`layout`]: a page's layout measured in Chromium at a width ([`probe_layout`]) and its tables
//!   read from the DOM ([`dom_tables`]).
//! - [`ab_orders`]: an A/B replay with `--explain` into A, B (an index dropped) and A2
//!   ([`ab_orders_run`]).
//!
//! Missing tools are a failure with a pointer to `tools/setup`, never a silent skip. Every process is
//! started by the harness, stopped by its pid, and reaped; child output is drained by threads so no
//! pipe ever fills.

// Each test binary uses its own part of the harness.
#![allow(dead_code, unused_imports)]

mod ab_orders;
mod cli;
mod clients;
mod html;
mod layout;
mod load;
mod netns;
mod pki;
mod process;
mod proxy;
mod pymongo;
mod raw;
mod record;
mod replay;
mod schema;
mod scrape;
mod server;
mod sniff;

pub use ab_orders::*;
pub use cli::*;
pub use clients::*;
pub use html::*;
pub use layout::*;
pub use load::*;
pub use netns::*;
pub use pki::*;
pub use process::*;
pub use proxy::*;
pub use pymongo::*;
pub use raw::*;
pub use record::*;
pub use replay::*;
pub use schema::*;
pub use scrape::*;
pub use server::*;
pub use sniff::*;

use std::path::PathBuf;

const SETUP_HINT: &str = "run tools/setup";

/// The repository checkout (where Cargo.toml is).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh temporary directory, deleted when the value is dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("mongotape-test-")
        .tempdir()
        .expect("create a temporary directory")
}

/// Serializes the tests of one binary that measure timing: the machine has 2 cores, shared.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
