//! `inspect` and `cat`: looking at a capture.

use clap::Args;
use mongotape::capture::{CaptureReader, RecordKind};
use mongotape::report::cat::message_json;
use mongotape::report::inspect::inspect_file;
use mongotape::report::pair::{Answer, Pairer};
use mongotape::wire::{Message, ReplyInfo, RequestInfo};
use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct InspectArgs {
    /// Capture file.
    file: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

pub fn inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let report = inspect_file(&args.file)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render_text());
    }
    // A capture that could not be read to its end still prints what was readable, then fails.
    Ok(if report.error.is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

#[derive(Args)]
pub struct CatArgs {
    /// Capture file.
    file: PathBuf,
    /// Only these connections (repeatable).
    #[arg(long = "conn")]
    conns: Vec<u64>,
    /// Only this command (repeatable); replies follow their request's command.
    #[arg(long = "command")]
    commands: Vec<String>,
    /// Only this namespace, `db` or `db.collection` (repeatable).
    #[arg(long = "ns")]
    namespaces: Vec<String>,
    /// Leave out message bodies.
    #[arg(long)]
    no_body: bool,
    /// Also print connection events (open, close, client metadata, gaps).
    #[arg(long)]
    events: bool,
    /// Stop after this many lines.
    #[arg(long)]
    limit: Option<u64>,
}

pub fn cat(args: CatArgs) -> anyhow::Result<ExitCode> {
    let mut reader = CaptureReader::open(&args.file)?;
    let start = reader.metadata().start_unix_ns;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut pairer = Pairer::default();
    let conns: HashSet<u64> = args.conns.iter().copied().collect();
    let mut printed = 0u64;
    let mut failure = None;
    for record in &mut reader {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        if !conns.is_empty() && !conns.contains(&record.conn_id) {
            continue;
        }
        let line = match record.kind {
            RecordKind::Request | RecordKind::Reply => {
                let msg = Message::parse(&record.payload);
                let info = match (&msg, record.kind) {
                    (Ok(m), RecordKind::Request) => {
                        let info = RequestInfo::of(m);
                        pairer.request(record.conn_id, m, info.clone(), record.ts_ns, 0);
                        Some(info)
                    }
                    (Ok(m), _) => {
                        match pairer.reply(record.conn_id, m, ReplyInfo::of(m).more_to_come) {
                            Answer::Request(p) => Some(p.info),
                            Answer::Unsolicited => None,
                        }
                    }
                    _ => None,
                };
                if !matches_filters(&args, info.as_ref()) {
                    continue;
                }
                message_json(&record, start, &msg, info.as_ref(), !args.no_body)
            }
            _ if args.events && args.commands.is_empty() && args.namespaces.is_empty() => {
                let payload = if record.kind == RecordKind::ClientMetadata {
                    bson::RawDocumentBuf::from_bytes(record.payload.to_vec())
                        .map(|d| mongotape::report::cat::doc_json(&d))
                        .unwrap_or(serde_json::Value::Null)
                } else {
                    serde_json::from_slice(&record.payload).unwrap_or(serde_json::Value::Null)
                };
                serde_json::json!({
                    "conn": record.conn_id, "ts_ns": record.ts_ns,
                    "event": record.kind.name(), "data": payload,
                })
            }
            _ => continue,
        };
        if let Err(e) = writeln!(out, "{line}") {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(ExitCode::SUCCESS);
            }
            return Err(e.into());
        }
        printed += 1;
        if args.limit.is_some_and(|l| printed >= l) {
            break;
        }
    }
    out.flush()?;
    if let Some(e) = failure {
        eprintln!("mongotape: {e}");
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

fn matches_filters(args: &CatArgs, info: Option<&RequestInfo>) -> bool {
    if args.commands.is_empty() && args.namespaces.is_empty() {
        return true;
    }
    let Some(info) = info else { return false };
    if !args.commands.is_empty() && !args.commands.iter().any(|c| c == &info.command) {
        return false;
    }
    if !args.namespaces.is_empty() {
        let ns = info.namespace();
        return args
            .namespaces
            .iter()
            .any(|n| &ns == n || ns.starts_with(&format!("{n}.")));
    }
    true
}
