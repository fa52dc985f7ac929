//! `record --fault RULE`, `--faults FILE`, `--fault-seed N`, `--fault-token TOKEN`
//! (docs/faults.md).

use super::exit::usage;
use super::output::note;
use clap::Args;
use mongotape::fault::json::parse_rules;
use mongotape::fault::parse::parse_rule;
use mongotape::fault::{FaultControl, Rule};
use mongotape::proxy::Proxy;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args, Debug, Default)]
pub struct FaultArgs {
    /// Inject a fault by rule (repeatable): `[NAME:] [command=C,..] [ns=DB.COLL] [app=A]
    /// [driver=D] [conn=N] [shape=HASH] [times=N] [probability=P] -> ACTION [code=N]
    /// [codeName=X] [labels=L,..] [ms=N]`; ACTION: error, reply_error, close_after,
    /// close_before, delay_request, delay_reply, stall, write_concern_error. Example:
    /// `--fault 'command=insert times=1 -> error code=10107 codeName=NotWritablePrimary
    /// labels=RetryableWriteError'`. See docs/faults.md.
    #[arg(long = "fault", value_name = "RULE")]
    pub rules: Vec<String>,
    /// Fault rules from a JSON file: a list of rules in failCommand's names (failCommands,
    /// appName, errorCode, errorLabels, closeConnection, blockConnection/blockTimeMS, times) and
    /// mongotape's (namespace, driver, connection, shape, probability, action). After --fault's.
    #[arg(long = "faults", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Seed of the draws of `probability` rules: the same seed and the same requests in the same
    /// order fire the same faults.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub fault_seed: u64,
    /// Opens GET/PUT /faults on a --metrics listener that is not on loopback to requests with
    /// `Authorization: Bearer TOKEN` (on loopback it is always open).
    #[arg(long, value_name = "TOKEN")]
    pub fault_token: Option<String>,
}

impl FaultArgs {
    /// The rules asked for; `None` when none (the proxy then never looks for faults).
    pub fn control(&self) -> anyhow::Result<Option<Arc<FaultControl>>> {
        let mut rules: Vec<Rule> = Vec::new();
        for text in &self.rules {
            rules.push(parse_rule(text).map_err(|e| usage(format!("--fault: {e}")))?);
        }
        if let Some(path) = &self.file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| usage(format!("--faults {}: {e}", path.display())))?;
            let more = parse_rules(&text)
                .map_err(|e| usage(format!("--faults {}: {e}", path.display())))?;
            rules.extend(more);
        }
        if rules.is_empty() {
            return Ok(None);
        }
        Ok(Some(FaultControl::new(rules, self.fault_seed)))
    }
}

/// Hands the rules to the proxy, saying so.
pub fn apply(proxy: Proxy, faults: Option<Arc<FaultControl>>, token: Option<String>) -> Proxy {
    let Some(faults) = faults else {
        return proxy;
    };
    note!(
        "mongotape: faults ON: {} rules (docs/faults.md); GET/PUT /faults on --metrics",
        faults.len()
    );
    proxy.with_faults(faults, token)
}
