//! Command-line definitions, one file per subcommand.

mod analyze;
mod compare;
mod merge;
mod record;
mod replay;
mod replay_ab;
mod view;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "mongotape",
    version,
    about = "Record MongoDB traffic through a proxy, replay it, and measure what the server spends"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the recording proxy between clients and a MongoDB server.
    Record(record::RecordArgs),
    /// Summarise a capture: connections, drivers, opcodes, commands, namespaces.
    Inspect(view::InspectArgs),
    /// Print a capture's messages as JSON lines.
    Cat(view::CatArgs),
    /// Replay a capture against a server and measure what the server spends.
    Replay(Box<replay::ReplayArgs>),
    /// Server time against client time, per connection and per driver, from a capture alone.
    Analyze(analyze::AnalyzeArgs),
    /// Analyze or replay reports side by side, with ratios against the first.
    Compare(compare::CompareArgs),
    /// Add the reports of a sharded replay (`replay --shard I/N`) into one, percentiles exact.
    Merge(merge::MergeArgs),
}

pub fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Record(args) => record::run(args),
        Command::Inspect(args) => view::inspect(args),
        Command::Cat(args) => view::cat(args),
        Command::Replay(args) => replay::run(*args),
        Command::Analyze(args) => analyze::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Merge(args) => merge::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mongotape: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MONGOTAPE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
