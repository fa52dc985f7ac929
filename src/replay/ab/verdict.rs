//! What makes a finding (`docs/ab.md`, "What makes a finding"): a candidate's ratio to the
//! control counts only when the mean ratio and the per-request median agree, each with its
//! interval clear of 1 in the same direction, over enough paired requests, beyond what the
//! control's copy (A2) shows. A mean moved by a few slow requests while the median stays at 1 is
//! a difference in the tail, labelled as such and not counted. On a DISTURBED run (other
//! processes kept the machine busy) both intervals must also clear 1 by [`DISTURBED_MARGIN`], and
//! with A2 the median too must lie beyond the band A2's median allows; without A2, which would
//! show what the disturbance alone does, by [`DISTURBED_MARGIN_ALONE`].

use super::control;
use super::stats::RatioEstimate;
use std::cmp::Ordering;

/// Fewer paired requests than this make no finding (their interval is still reported).
pub const MIN_PAIRS_FOR_FINDING: u64 = 30;

/// On a DISTURBED run, how far from 1 both intervals must lie: the lower end at least 1.10, or
/// the upper at most 1/1.10.
pub const DISTURBED_MARGIN: f64 = 1.10;

/// On a DISTURBED run without A2: a neighbour that slows one server for the whole run moves
/// every request of it, mean and median alike (two identical servers measured 0.79x on a busy
/// machine), so only a difference beyond 25% counts.
pub const DISTURBED_MARGIN_ALONE: f64 = 1.25;

/// What one candidate's ratios are judged on.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    pub mean: Option<&'a RatioEstimate>,
    pub median: Option<&'a RatioEstimate>,
    /// The control's copy (A2) against the control, on the same requests.
    pub baseline_mean: Option<&'a RatioEstimate>,
    pub baseline_median: Option<&'a RatioEstimate>,
    /// The machine was DISTURBED during the run.
    pub disturbed: bool,
}

/// The verdict on a ratio whose mean or median interval is clear of 1; `None` when neither is
/// (nothing to judge).
pub fn judge(e: &Evidence<'_>) -> Option<Result<(), String>> {
    let dir = |x: Option<&RatioEstimate>| x.map_or(Ordering::Equal, RatioEstimate::direction);
    let (mean_dir, median_dir) = (dir(e.mean), dir(e.median));
    if mean_dir == Ordering::Equal && median_dir == Ordering::Equal {
        return None;
    }
    Some(verdict(e, mean_dir, median_dir))
}

fn verdict(e: &Evidence<'_>, mean_dir: Ordering, median_dir: Ordering) -> Result<(), String> {
    let pairs = e.mean.or(e.median).map_or(0, |m| m.pairs);
    if pairs < MIN_PAIRS_FOR_FINDING {
        return Err(format!(
            "only {pairs} paired requests ({MIN_PAIRS_FOR_FINDING} make a finding)"
        ));
    }
    match (e.mean, e.median) {
        (Some(mean), _) if mean_dir == Ordering::Equal => {
            return Err(format!("median only: mean {}", short(mean)));
        }
        (_, Some(median)) if median_dir == Ordering::Equal => {
            return Err(format!("tail only: median {}", short(median)));
        }
        (_, None) => return Err("tail only: no per-request median".into()),
        (_, Some(median)) if median_dir != mean_dir => {
            return Err(format!(
                "mean and median disagree: median {}",
                short(median)
            ));
        }
        _ => {}
    }
    let (mean, median) = (e.mean.copied(), e.median.copied());
    let (Some(mean), Some(median)) = (mean, median) else {
        return Err("no mean ratio".into());
    };
    // The same direction but not the same size: a mean far beyond the typical request's ratio
    // is the tail's (a 3.2x mean over a 1.04x median), and the finding would state its size. A
    // mean nearer 1 than the median understates it (a few slow requests on the faster side):
    // the finding holds, and the typical request moves further still.
    let overstates = match mean_dir {
        Ordering::Greater => mean.low > median.high,
        _ => mean.high < median.low,
    };
    if overstates {
        return Err(format!("mostly tail: median {}", short(&median)));
    }
    if let Some(a2) = e.baseline_mean.filter(|a2| control::within(a2, &mean)) {
        return Err(format!("within what A2 shows: A2 {}", short(a2)));
    }
    if !e.disturbed {
        return Ok(());
    }
    let (margin, alone) = match e.baseline_mean.or(e.baseline_median) {
        Some(_) => (DISTURBED_MARGIN, ""),
        None => (DISTURBED_MARGIN_ALONE, " without A2"),
    };
    for (what, x) in [("mean", &mean), ("median", &median)] {
        if !clear_by(x, margin) {
            return Err(format!(
                "DISTURBED run{alone}: {what} {} not {:.0}% clear of 1",
                short(x),
                (margin - 1.0) * 100.0
            ));
        }
    }
    if let Some(a2) = e.baseline_median.filter(|a2| control::within(a2, &median)) {
        return Err(format!(
            "DISTURBED run: median within what A2 shows: A2 median {}",
            short(a2)
        ));
    }
    Ok(())
}

/// Whether an interval lies wholly at least `margin` away from 1.
fn clear_by(x: &RatioEstimate, margin: f64) -> bool {
    x.low >= margin || x.high <= 1.0 / margin
}

/// "1.00x (0.93-1.01x)".
pub fn short(x: &RatioEstimate) -> String {
    format!("{:.2}x ({:.2}-{:.2}x)", x.ratio, x.low, x.high)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(ratio: f64, low: f64, high: f64) -> RatioEstimate {
        RatioEstimate::test(ratio, low, high)
    }

    fn of<'a>(mean: &'a RatioEstimate, median: &'a RatioEstimate) -> Evidence<'a> {
        Evidence {
            mean: Some(mean),
            median: Some(median),
            ..Evidence::default()
        }
    }

    #[test]
    fn a_mean_moved_by_the_tail_alone_is_no_finding() {
        let (mean, median) = (est(0.62, 0.47, 0.81), est(1.0, 0.93, 1.01));
        assert_eq!(
            judge(&of(&mean, &median)),
            Some(Err("tail only: median 1.00x (0.93-1.01x)".into()))
        );
        // The median alone clear of 1: the mean says it adds up to nothing.
        let (mean, median) = (est(1.02, 0.97, 1.08), est(1.34, 1.09, 1.39));
        assert_eq!(
            judge(&of(&mean, &median)),
            Some(Err("median only: mean 1.02x (0.97-1.08x)".into()))
        );
        // Both clear of 1, in opposite directions.
        let (mean, median) = (est(1.3, 1.1, 1.5), est(0.95, 0.93, 0.97));
        assert!(judge(&of(&mean, &median)).unwrap().is_err());
        // Both clear of 1 the same way, but the mean far beyond the median: the tail's size.
        let (mean, median) = (est(3.24, 2.19, 4.46), est(1.04, 1.02, 1.10));
        assert_eq!(
            judge(&of(&mean, &median)),
            Some(Err("mostly tail: median 1.04x (1.02-1.10x)".into()))
        );
        // The mean nearer 1 than the median (a slow request on the faster side): it understates
        // the difference, which holds.
        let (mean, median) = (est(0.62, 0.5, 0.8), est(0.1, 0.08, 0.12));
        assert_eq!(judge(&of(&mean, &median)), Some(Ok(())));
        let (mean, median) = (est(1.5, 1.3, 1.7), est(3.0, 2.8, 3.3));
        assert_eq!(judge(&of(&mean, &median)), Some(Ok(())));
        // Neither: nothing to say.
        let (mean, median) = (est(1.0, 0.9, 1.1), est(1.0, 0.99, 1.01));
        assert_eq!(judge(&of(&mean, &median)), None);
    }

    #[test]
    fn mean_and_median_agreeing_make_a_finding_unless_a2_shows_as_much() {
        let (mean, median) = (est(1.73, 1.50, 1.99), est(1.70, 1.65, 1.76));
        assert_eq!(judge(&of(&mean, &median)), Some(Ok(())));
        let a2 = est(1.6, 1.45, 2.1);
        let e = Evidence {
            baseline_mean: Some(&a2),
            ..of(&mean, &median)
        };
        assert!(judge(&e)
            .unwrap()
            .unwrap_err()
            .starts_with("within what A2"));
        let few = RatioEstimate { pairs: 12, ..mean };
        assert!(judge(&of(&few, &median)).unwrap().is_err());
    }

    #[test]
    fn a_disturbed_run_asks_for_a_margin_and_a_median_beyond_a2() {
        let (mean, median) = (est(1.12, 1.05, 1.2), est(1.11, 1.08, 1.14));
        assert_eq!(judge(&of(&mean, &median)), Some(Ok(())));
        let disturbed = Evidence {
            disturbed: true,
            ..of(&mean, &median)
        };
        assert!(judge(&disturbed)
            .unwrap()
            .unwrap_err()
            .contains("without A2: mean 1.12x (1.05-1.20x) not 25% clear"));
        // Two identical servers, one slowed by a neighbour for the whole run (measured): every
        // request 20% apart, no finding without A2 to show the disturbance.
        let (mean, median) = (est(0.83, 0.76, 0.88), est(0.79, 0.79, 0.80));
        let alone = Evidence {
            disturbed: true,
            ..of(&mean, &median)
        };
        assert!(judge(&alone).unwrap().unwrap_err().contains("25% clear"));
        // With A2 quiet, 10% is enough.
        let (mean, median) = (est(1.2, 1.12, 1.3), est(1.18, 1.15, 1.2));
        let a2 = est(1.0, 0.97, 1.03);
        let with_a2 = Evidence {
            disturbed: true,
            baseline_mean: Some(&a2),
            baseline_median: Some(&a2),
            ..of(&mean, &median)
        };
        assert_eq!(judge(&with_a2), Some(Ok(())));
        // A dropped index: far beyond any margin, a finding on a busy machine too.
        let (mean, median) = (est(4.0, 3.5, 4.6), est(3.9, 3.7, 4.1));
        let a2_median = est(1.02, 0.99, 1.05);
        let e = Evidence {
            disturbed: true,
            baseline_median: Some(&a2_median),
            ..of(&mean, &median)
        };
        assert_eq!(judge(&e), Some(Ok(())));
        let a2_median = est(3.0, 2.0, 3.8);
        let e = Evidence {
            baseline_median: Some(&a2_median),
            ..e
        };
        assert!(judge(&e).unwrap().unwrap_err().contains("A2 median"));
    }
}
