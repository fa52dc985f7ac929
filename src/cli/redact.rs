//! `--redact`: what a capture keeps, one option for every subcommand that writes one (`record`,
//! `record --interface`, `import`).

use clap::{Args, ValueEnum};
use mongotape::redact::Redaction;

#[derive(Args)]
pub struct RedactArg {
    /// What the capture keeps: `credentials` removes authentication payloads and passwords
    /// (always, the default); `values` also replaces every string and binary value by a keyed hash
    /// of the same length (equal values stay equal; the key is never written).
    #[arg(long, value_enum, default_value = "credentials", value_name = "WHAT")]
    redact: What,
}

#[derive(Clone, Copy, ValueEnum)]
enum What {
    Credentials,
    Values,
}

impl RedactArg {
    pub fn redaction(&self) -> Redaction {
        match self.redact {
            What::Credentials => Redaction::Credentials,
            What::Values => Redaction::Values,
        }
    }
}
