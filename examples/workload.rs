//! The seed workloads of `tools/workloads/` written with the official Rust driver (the `mongodb`
//! crate mongotape already depends on, so CI builds no second copy of it). One module per workload
//! under `examples/workload/`; `common.rs` holds what the other clients keep in their common file:
//! arguments, scaling, the Park-Miller generator, step markers and the JSON step lines.
//!
//! ```text
//! cargo build --release --example workload
//! target/release/examples/workload WORKLOAD --uri URI [--db DB] [--scale S]
//! ```
//!
//! Usually run through `tools/workloads/run rust WORKLOAD ...`; stdout carries the step lines of
//! the output contract (tools/workloads/README.md) and nothing else, errors go to stderr with a
//! non-zero exit status.

#[path = "workload/basic.rs"]
mod basic;
#[path = "workload/common.rs"]
mod common;
#[path = "workload/docsize.rs"]
mod docsize;
#[path = "workload/embedded.rs"]
mod embedded;
#[path = "workload/inserts.rs"]
mod inserts;
#[path = "workload/lookup.rs"]
mod lookup;
#[path = "workload/randstring.rs"]
mod randstring;
#[path = "workload/repeatable.rs"]
mod repeatable;
#[path = "workload/writeconcern.rs"]
mod writeconcern;

use clap::Parser;
use common::{Args, Workload};
use std::process::ExitCode;

const WORKLOADS: [&str; 8] = [
    "basic",
    "docsize",
    "embedded",
    "inserts",
    "lookup",
    "randstring",
    "repeatable",
    "writeconcern",
];

async fn run(args: Args) -> anyhow::Result<()> {
    let mut wl = Workload::connect(&args).await?;
    match args.workload.as_str() {
        "basic" => basic::run(&mut wl).await?,
        "docsize" => docsize::run(&mut wl).await?,
        "embedded" => embedded::run(&mut wl).await?,
        "inserts" => inserts::run(&mut wl).await?,
        "lookup" => lookup::run(&mut wl).await?,
        "randstring" => randstring::run(&mut wl).await?,
        "repeatable" => repeatable::run(&mut wl).await?,
        "writeconcern" => writeconcern::run(&mut wl).await?,
        other => anyhow::bail!(
            "unknown workload {other:?} (have: {})",
            WORKLOADS.join(", ")
        ),
    }
    wl.end().await
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    let name = args.workload.clone();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("workload {name}: {err:#}");
            ExitCode::FAILURE
        }
    }
}
