//! `GET /faults` and `PUT /faults` on the metrics listener: the rules with their fire counts, and
//! their replacement by a JSON body in the syntax of [`super::json`].

use super::json::parse_rules;
use super::set::FaultControl;
use crate::metrics::http::Control;
use std::sync::Arc;

/// The rules of a running proxy behind its metrics listener.
pub struct FaultEndpoint(pub Arc<FaultControl>);

impl Control for FaultEndpoint {
    fn path(&self) -> &'static str {
        "/faults"
    }

    fn get(&self) -> Vec<u8> {
        let body = serde_json::json!({ "rules": self.0.status() });
        serde_json::to_vec_pretty(&body).unwrap_or_default()
    }

    fn put(&self, body: &[u8]) -> Result<Vec<u8>, String> {
        let text = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_string())?;
        let rules = parse_rules(text).map_err(|e| e.to_string())?;
        tracing::warn!("faults ON: {} rules (replaced by PUT /faults)", rules.len());
        self.0.replace(rules);
        Ok(self.get())
    }
}
