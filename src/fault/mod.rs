//! Faults on purpose (`record --fault`, `--faults FILE`): rules that make the proxy answer a
//! request with a MongoDB error instead of forwarding it, lose or replace a reply, delay either
//! way, cut the connection or never answer. This layer only decides: the rule model ([`rule`]),
//! its text syntax ([`parse`]) and failCommand-style JSON ([`json`]), what a request is matched
//! on ([`facts`]) and the live set of rules with their fire counts and seeded draws ([`set`]), and `GET`/`PUT /faults` on the metrics listener ([`http`]); and what a capture's `fault`
//! records say was injected ([`injected`], for the reports), and what the client did after each
//! fault ([`print`] tells resends apart, [`follow`] follows each fault, [`after`] sums them).
//! The proxy applies the decisions (`proxy::faulted`) and `wire` builds the made-up replies.
//! See docs/faults.md.
//!
//! Layers, bottom up: error rng < rule < facts parse print < follow < after < injected json set < http

pub mod after;
pub mod error;
pub mod facts;
pub mod follow;
pub mod http;
pub mod injected;
pub mod json;
pub mod parse;
pub mod print;
mod rng;
pub mod rule;
pub mod set;

pub use error::FaultError;
pub use facts::{ClientFacts, RequestFacts};
pub use injected::FaultsInjected;
pub use rule::{Action, ErrorSpec, Matcher, Rule};
pub use set::{Decision, FaultControl, RuleStatus};
