//! The lines of a replay's text that say why: the errors by code (with a warning when a large
//! share of the operations failed, or what a majority of DuplicateKey usually means) and the
//! slowest requests.

use super::ReplayReport;
use crate::figures::slowest;

impl ReplayReport {
    /// `errors 1,600: DuplicateKey (11000) 1,600 on insert`, under it the warning when a large
    /// share of the operations failed (with what to do), else the hint a majority of DuplicateKey
    /// calls for, then the slowest requests; empty when there is nothing to say.
    pub fn why_text(&self) -> String {
        let mut out = String::new();
        if let Some(line) = self.errors.line() {
            out.push_str(&line);
            out.push('\n');
        }
        match (&self.failures, self.errors.duplicate_key_hint()) {
            (Some(w), _) => out.push_str(&format!("{}\n", w.line())),
            (None, Some(hint)) => out.push_str(&format!("{hint}\n")),
            (None, None) => {}
        }
        out.push_str(&slowest::render_text(&self.slowest, slowest::TEXT_ROWS));
        out
    }
}
