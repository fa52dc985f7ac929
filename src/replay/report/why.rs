//! The lines of a replay's text that say why: the errors by code (with what a majority of
//! DuplicateKey usually means) and the slowest requests.

use super::ReplayReport;
use crate::figures::slowest;

impl ReplayReport {
    /// `errors 1,600: DuplicateKey (11000) 1,600 on insert`, the hint under it, then the slowest
    /// requests; empty when there is nothing to say.
    pub fn why_text(&self) -> String {
        let mut out = String::new();
        if let Some(line) = self.errors.line() {
            out.push_str(&line);
            out.push('\n');
        }
        if let Some(hint) = self.errors.duplicate_key_hint() {
            out.push_str(&hint);
            out.push('\n');
        }
        out.push_str(&slowest::render_text(&self.slowest, slowest::TEXT_ROWS));
        out
    }
}
