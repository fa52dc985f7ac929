//! The control weighed (`docs/ab.md`, "The A2 rule"): with a second copy of the control (A2),
//! every ratio of the candidate is judged against what A2 shows against A on the same requests.
//! A2 runs A's setup, so whatever A2/A shows is what two identical servers differ by on this
//! machine at this moment; a candidate's ratio within that is not a finding.
//!
//! The band A2 allows is its ratio's interval stretched to include 1 (`[min(1, low), max(1,
//! high)]`). The candidate's ratio is a finding only when its own interval lies wholly outside
//! that band: beyond 1 as before, and beyond what A2 showed.

use super::stats::RatioEstimate;
use serde::{Deserialize, Serialize};

/// What A2 showed against A on one command (or namespace, or query shape), and the candidate
/// judged against it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ControlCheck {
    /// `command`, `namespace` or `shape` (a query shape, named by its text in backquotes).
    #[schemars(extend("enum" = ["command", "namespace", "shape"]))]
    pub kind: String,
    pub name: String,
    /// A query shape's hash (`shapes[].hash`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^[0-9a-f]{16}$"))]
    pub hash: Option<String>,
    /// The copy of the control (A2) and the candidate (B), by label.
    pub baseline: String,
    pub candidate: String,
    /// A2's mean latency over A's, with its interval.
    pub baseline_ratio: Option<RatioEstimate>,
    /// B's mean latency over A's, with its interval.
    pub candidate_ratio: Option<RatioEstimate>,
    /// B's interval lies within the band A2 allows: not a finding, even if it excludes 1.
    pub within: bool,
    /// "A2, a copy of A, differs by 0.90x on insert: B's 0.93x is within that".
    pub sentence: String,
}

/// The band of ratios A2 allows: its interval stretched to include 1.
fn band(a2: &RatioEstimate) -> (f64, f64) {
    (a2.low.min(1.0), a2.high.max(1.0))
}

/// Whether B's interval lies within (overlaps) the band A2 allows.
pub fn within(a2: &RatioEstimate, b: &RatioEstimate) -> bool {
    let (lo, hi) = band(a2);
    !(b.low > hi || b.high < lo)
}

/// The names a check is written with.
pub struct Names<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    pub hash: Option<&'a str>,
    pub control: &'a str,
    pub baseline: &'a str,
    pub candidate: &'a str,
}

/// The candidate's ratio `b` judged against the copy's `a2` on one command or namespace.
pub fn check(n: &Names<'_>, a2: &RatioEstimate, b: &RatioEstimate) -> ControlCheck {
    let within = within(a2, b);
    let verdict = if within { "within" } else { "beyond" };
    ControlCheck {
        kind: n.kind.into(),
        name: n.name.into(),
        hash: n.hash.map(str::to_owned),
        baseline: n.baseline.into(),
        candidate: n.candidate.into(),
        baseline_ratio: Some(*a2),
        candidate_ratio: Some(*b),
        within,
        sentence: format!(
            "{}, a copy of {}, differs by {:.2}x on {} (interval {:.2}-{:.2}x): {}'s {:.2}x is \
             {verdict} that",
            n.baseline, n.control, a2.ratio, n.name, a2.low, a2.high, n.candidate, b.ratio
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(ratio: f64, low: f64, high: f64) -> RatioEstimate {
        RatioEstimate::test(ratio, low, high)
    }

    #[test]
    fn a_candidate_within_what_the_copy_shows_is_not_a_finding() {
        let a2 = est(0.90, 0.88, 0.92);
        // B 0.93x (0.91-0.95): faster than A, but no more than A2 is.
        assert!(within(&a2, &est(0.93, 0.91, 0.95)));
        // B 0.80x (0.78-0.82): beyond the copy's 0.88.
        assert!(!within(&a2, &est(0.80, 0.78, 0.82)));
        // B 1.10x (1.05-1.15): slower, while the copy is faster: beyond.
        assert!(!within(&a2, &est(1.10, 1.05, 1.15)));
        // A copy that shows nothing leaves the plain rule: an interval clear of 1 is a finding.
        let same = est(1.0, 0.99, 1.01);
        assert!(!within(&same, &est(1.03, 1.02, 1.04)));
        assert!(within(&same, &est(1.005, 1.0, 1.01)));
    }
}
