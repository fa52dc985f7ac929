//! The end of every `--help`: examples, then the exit statuses the subcommand can end with. Each
//! subcommand is described once, by one [`About`] here that its variant of `cli::Command` names
//! (`#[command(after_help = help::RECORD.after_help())]`); a test fails on a subcommand without.

use super::exit::Exit::{self, *};

/// A subcommand's examples and the exit statuses it can end with.
pub struct About {
    examples: &'static str,
    exits: &'static [Exit],
}

impl About {
    /// One described beside its subcommand's arguments.
    pub const fn new(examples: &'static str, exits: &'static [Exit]) -> About {
        About { examples, exits }
    }

    /// What its `--help` says after the options.
    pub fn after_help(&self) -> String {
        format!("{}\n\n{}", self.examples, Exit::help(self.exits))
    }
}

/// Every subcommand's statuses but `replay`'s and `merge`'s own.
const USUAL: &[Exit] = &[Ok, Failure, Usage];
/// The readers of a capture, which may be damaged.
const READS: &[Exit] = &[Ok, Failure, Usage, DamagedCapture];

pub const RECORD: About = About {
    examples: RECORD_EXAMPLES,
    exits: USUAL,
};

pub const INSPECT: About = About {
    examples: "Examples:
  mongotape inspect run.mtape                # connections, drivers, commands, namespaces
  mongotape inspect /var/lib/mongotape -j    # every segment of a rotated recording, as JSON",
    exits: READS,
};

pub const CAT: About = About {
    examples: "Examples:
  mongotape cat run.mtape -n 20                          # the first 20 messages, one JSON line each
  mongotape cat run.mtape --command insert --ns shop.orders --pretty
  mongotape cat run.mtape --canonical | jq -c .body      # bodies as bsondump writes them
  mongotape cat run.mtape --conn 3 --events --no-body    # one connection's story
  mongotape cat run.mtape --since 90s --until 2m --app checkout --no-body",
    exits: &[Ok, Failure, Usage, DamagedCapture, NothingReplayed],
};

pub const SLICE: About = About {
    examples: "Examples:
  mongotape slice run.mtape --since 90s --until 5m -o part.mtape     # offsets from the first record
  mongotape slice run.mtape --app checkout --namespace shop.orders -o orders.mtape
  mongotape slice /var/lib/mongotape --since 2026-12-01T10:00:00Z --until 2026-12-01T10:05:00Z \\
      -o incident.mtape --json > incident-slice.json

A getMore or killCursors is kept only with the reply that opened its cursor, a transaction whole or
not at all; stderr says what was left out and why. See docs/slice.md.",
    exits: &[Ok, Failure, Usage, DamagedCapture, NothingReplayed],
};

pub const REPLAY: About = About {
    examples: "Examples:
  # As recorded, against a test server, with the JSON and HTML reports
  mongotape replay run.mtape -t mongodb://127.0.0.1:27017 -o report.json --html report.html

  # As fast as the server answers; a CI job fails if replies differ, more than 1% of operations
  # fail, or find's p99 goes above 5 ms (exit status 4, the reports are still written)
  mongotape replay run.mtape -t 127.0.0.1:27017 --fast -o report.json \\
      --fail-on-divergence --max-error-rate 1% --max-p99 find=5

  # Open loop, rising from 1,000 to 20,000 requests/s over two minutes: where does p99 break?
  mongotape replay run.mtape -t 127.0.0.1:27017 --rate 1000..20000 --ramp 2m --connections 16

  # Only the orders collection, into a scratch database
  mongotape replay run.mtape -t 127.0.0.1:27017 --namespace shop.orders --db-map shop:scratch

  # A/B with each query shape's plan on both: which shapes changed plan (COLLSCAN -> IXSCAN)?
  mongotape replay run.mtape -t 127.0.0.1:27017 -t 127.0.0.1:27018 --fast --explain -o ab.json

See docs/replay.md.",
    exits: &[
        Ok,
        Failure,
        Usage,
        DamagedCapture,
        Threshold,
        NothingReplayed,
    ],
};

pub const IMPORT: About = About {
    examples: "Examples:
  # tcpdump on the database host, no change to the application
  tcpdump -i any -s 0 -w run.pcap tcp port 27017
  mongotape import run.pcap -o run.mtape

  # dumpcap's rotated pcapng files, read in order as one capture; servers on two ports
  mongotape import ring_*.pcapng -o run.mtape --server-port 27017 --server-port 27018

  # a mongod's own traffic recording (a directory of *.bin files and checksum.txt)
  mongotape import /var/lib/mongodb/traffic/rec1 -o run.mtape

  # the summary as JSON (docs/schemas/import.schema.json), for a script
  mongotape import run.pcap -o run.mtape --json | jq .packets.tcp

See docs/import.md.",
    exits: &[Ok, Failure, Usage, DamagedCapture],
};

pub const ANALYZE: About = About {
    examples: "Examples:
  mongotape analyze run.mtape                      # is it the server or the client?
  mongotape analyze run.mtape --html analyze.html  # with charts
  mongotape analyze run.mtape -j > before.json     # for `mongotape compare`
  mongotape analyze run.mtape --explain mongodb://127.0.0.1:27017  # each shape's plan there",
    exits: READS,
};

pub const COMPARE: About = About {
    examples: "Examples:
  mongotape compare before.json after.json                # ratios against before.json
  mongotape compare php.json pymongo.json --html cmp.html",
    exits: USUAL,
};

pub const MERGE: About = About {
    examples: "Examples:
  mongotape merge s0.json s1.json s2.json s3.json -o merged.json --html merged.html

See docs/scale.md.",
    exits: &[Ok, Failure, Usage, IncompleteMerge],
};

pub const COMPLETIONS: About = About {
    examples: "Examples:
  mongotape completions bash > /etc/bash_completion.d/mongotape
  mongotape completions zsh > \"${fpath[1]}/_mongotape\"
  mongotape completions fish > ~/.config/fish/completions/mongotape.fish",
    exits: USUAL,
};

pub const MAN: About = About {
    examples: "Examples:
  mongotape man > mongotape.1 && man ./mongotape.1
  mongotape man --dir /usr/local/share/man/man1   # also a page per subcommand",
    exits: USUAL,
};

const RECORD_EXAMPLES: &str = "Examples:
  # One server: applications connect to mongodb://127.0.0.1:27018/?directConnection=true
  mongotape record -u 127.0.0.1:27017 -l 127.0.0.1:27018 -o run.mtape

  # A replica set: each member gets a listener from port 27018 on; applications use
  # mongodb://PROXYHOST:27018,PROXYHOST:27019,PROXYHOST:27020/?replicaSet=rs0
  mongotape record -u 'mongodb://db0:27017,db1:27017,db2:27017/?replicaSet=rs0' \\
      -l 0.0.0.0:27018 --advertise-host proxy.internal -o run.mtape

  # Hourly segments of at most 512 MB, values hashed so the capture can be shared; the
  # recording ends after a day (the proxy keeps forwarding until it is stopped)
  mongotape record -u 127.0.0.1:27017 -o /var/lib/mongotape/trace.mtape \\
      --rotate-every 1h --rotate-size 512 --redact values -d 24h

  # Live metrics for Prometheus on port 9216 (scrape http://PROXYHOST:9216/metrics)
  mongotape record -u 127.0.0.1:27017 -o run.mtape --metrics 0.0.0.0:9216

  # TLS on both legs (clients must present a certificate signed by clients-ca.pem)
  mongotape record -u 'mongodb+srv://cluster0.example.net/?tlsCAFile=/etc/ssl/ca.pem' \\
      --tls-cert proxy.pem --tls-key proxy-key.pem --tls-ca clients-ca.pem -o run.mtape

See docs/production.md.";

/// The command line with the exit statuses and the log's settings after its options (each
/// subcommand's own come from its [`About`]).
pub fn with_after_help(cmd: clap::Command) -> clap::Command {
    cmd.after_help(format!(
        "{}\nLog: MONGOTAPE_LOG=debug (a tracing filter) or -v / -vv; -q, -qq, -qqq for less.\n\
         Colour and live status lines only on a terminal, never with NO_COLOR set.",
        Exit::help(&Exit::ALL)
    ))
}
