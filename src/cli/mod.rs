//! Command-line definitions, one file per subcommand; `exit` (statuses), `output` (log, colour,
//! stdout), `help` (each subcommand's examples and exit statuses), `redact` (`--redact`) and
//! `thresholds` (replay's gates, as options) are shared.
//!
//! Layers, bottom up: exit output < faults redact < compare generate help import merge record replay_ab thresholds window < record_live replay shadow snapshot view < analyze slice restore

mod analyze;
mod compare;
mod exit;
mod faults;
mod generate;
mod help;
mod import;
mod merge;
mod output;
mod record;
mod record_live;
mod redact;
mod replay;
mod replay_ab;
mod restore;
mod shadow;
mod slice;
mod snapshot;
mod thresholds;
mod view;
mod window;

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// Where `-v` and `-q` are listed in every `--help`, apart from the subcommand's own options.
const GLOBAL: &str = "Global options";

#[derive(Parser)]
#[command(
    name = "mongotape",
    version,
    // Help wrapped to the terminal, at most 100 columns (100 off a terminal).
    max_term_width = 100,
    about = "Record MongoDB traffic through a proxy, replay it, and measure what the server spends"
)]
struct Cli {
    /// More log detail: -v debug, -vv trace (MONGOTAPE_LOG, when set, is the filter instead).
    #[arg(short, long, action = ArgAction::Count, global = true, help_heading = GLOBAL)]
    verbose: u8,
    /// Less output: no info lines in the log, no status line, progress bar or text summary (-qq
    /// the same); -qqq also no warnings.
    #[arg(short, long, action = ArgAction::Count, global = true, conflicts_with = "verbose",
          help_heading = GLOBAL)]
    quiet: u8,
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand: its one-line help, its examples and exit statuses (`help`), its arguments.
#[derive(Subcommand)]
enum Command {
    /// Run the recording proxy between clients and a MongoDB server.
    #[command(
        after_help = help::RECORD.after_help(),
        // --out is required unless --no-record: clap alone would show only [OPTIONS].
        override_usage = "mongotape record --out <OUT> [OPTIONS]\n       \
                          mongotape record --no-record [OPTIONS]"
    )]
    Record(Box<record::RecordArgs>),
    /// Run the proxy of `record` and mirror the reads to candidate servers live, comparing each
    /// reply with production's per query shape, without ever slowing the application.
    #[command(after_help = shadow::ABOUT.after_help())]
    Shadow(shadow::ShadowArgs),
    /// Summarise a capture: connections, drivers, opcodes, commands, namespaces.
    #[command(after_help = help::INSPECT.after_help())]
    Inspect(view::InspectArgs),
    /// Print a capture's messages as JSON lines.
    #[command(after_help = help::CAT.after_help())]
    Cat(view::CatArgs),
    /// Part of a capture as a capture of its own: a time window, some applications, drivers,
    /// clients, connections, namespaces or commands; cursors and transactions kept whole.
    #[command(after_help = help::SLICE.after_help())]
    Slice(slice::SliceArgs),
    /// Replay a capture against a server and measure what the server spends.
    #[command(after_help = help::REPLAY.after_help())]
    Replay(Box<replay::ReplayArgs>),
    /// Make a capture from a packet capture (pcap, pcapng), a mongoreplay playback file or a
    /// mongod/mongos traffic recording.
    #[command(after_help = help::IMPORT.after_help())]
    Import(import::ImportArgs),
    /// Server time against client time, per connection and per driver, from a capture alone.
    #[command(after_help = help::ANALYZE.after_help())]
    Analyze(analyze::AnalyzeArgs),
    /// Analyze or replay reports side by side, with ratios against the first.
    #[command(after_help = help::COMPARE.after_help())]
    Compare(compare::CompareArgs),
    /// Add the reports of a sharded replay (`replay --shard I/N`) into one, percentiles exact.
    #[command(after_help = help::MERGE.after_help())]
    Merge(merge::MergeArgs),
    /// Snapshot some namespaces of a server at one point in time, in mongodump's layout.
    #[command(after_help = snapshot::ABOUT.after_help())]
    Snapshot(snapshot::SnapshotArgs),
    /// Load a snapshot into a server: each collection dropped, created with its options, its
    /// documents in batches over several connections, then its indexes.
    #[command(after_help = restore::ABOUT.after_help())]
    Restore(restore::RestoreArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = help::COMPLETIONS.after_help())]
    Completions(generate::CompletionsArgs),
    /// Print the manual page (roff), made from these same definitions.
    #[command(after_help = help::MAN.after_help())]
    Man(generate::ManArgs),
}

/// The whole command line, with every exit status and the log's settings after its options.
fn command() -> clap::Command {
    help::with_after_help(Cli::command()).mut_subcommand("shadow", shadow::hide_record_only)
}

pub fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    output::init_tracing(cli.verbose, cli.quiet);
    let quiet = cli.quiet > 0;
    let result = match cli.command {
        Command::Record(mut args) => {
            args.quiet |= quiet;
            if args.interface.is_some() {
                record_live::run(*args)
            } else {
                record::run(*args)
            }
        }
        Command::Shadow(args) => shadow::run(args, quiet),
        Command::Inspect(args) => view::inspect(args),
        Command::Cat(args) => view::cat(args),
        Command::Slice(mut args) => {
            args.quiet |= quiet;
            slice::run(args)
        }
        Command::Replay(mut args) => {
            args.quiet |= quiet;
            replay::run(*args)
        }
        Command::Import(mut args) => {
            args.quiet |= quiet;
            import::run(args)
        }
        Command::Analyze(args) => analyze::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Merge(mut args) => {
            args.quiet |= quiet;
            merge::run(args)
        }
        Command::Snapshot(mut args) => {
            args.quiet |= quiet;
            snapshot::run(args)
        }
        Command::Restore(mut args) => {
            args.quiet |= quiet;
            restore::run(args)
        }
        Command::Completions(args) => {
            generate::completions(args, command()).map(|()| exit::Exit::Ok.into())
        }
        Command::Man(args) => generate::man(args, command()).map(|()| exit::Exit::Ok.into()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            output::note!("mongotape: error: {}", exit::message(&e));
            exit::of_error(&e).into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::command;

    /// A subcommand added without its `help::About` would print no examples and no exit statuses.
    #[test]
    fn every_subcommand_has_help_examples_and_exit_statuses() {
        let cmd = command();
        let mut missing = Vec::new();
        for sub in cmd.get_subcommands() {
            let after = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            let about = sub.get_about().is_some_and(|a| !a.to_string().is_empty());
            for (what, there) in [
                ("a one-line help", about),
                ("examples", after.starts_with("Examples:\n")),
                (
                    "exit statuses",
                    after.contains("\n\nExit status:\n  0  success\n"),
                ),
            ] {
                if !there {
                    missing.push(format!("{} has no {what}", sub.get_name()));
                }
            }
        }
        assert!(cmd.get_subcommands().count() >= 9);
        assert!(missing.is_empty(), "{}", missing.join("; "));
    }
}
