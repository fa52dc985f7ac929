//! How wide a timeline's points are: one rule for every timeline a report draws (the replay's and
//! `analyze`'s), so a run of any length gives a few dozen to a few hundred points.

/// Points a chart draws at most.
pub const MAX_POINTS: u64 = 300;
/// Points a chart gets at least when the run allows.
pub const MIN_POINTS: u64 = 50;

/// How many recorded buckets a chart's point joins: 1, 2, 5, 10, 20, 50, ... the fewest that span
/// `span` buckets in at most [`MAX_POINTS`] points holding five operations each on average (fewer
/// than [`MIN_POINTS`] points are not asked for), so that sparse operations still draw lines.
pub fn join_factor(span: u64, ops: u64) -> u64 {
    let mut factor = 1;
    for f in [1u64, 2, 5, 10, 20, 50, 100, 200, 500, 1000] {
        factor = f;
        let points = span.div_ceil(f);
        if points <= MAX_POINTS && (ops >= 5 * points || points <= MIN_POINTS) {
            break;
        }
    }
    factor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_runs_get_up_to_300_points_sparse_ones_at_least_50() {
        assert_eq!(join_factor(300, 100_000), 1);
        assert_eq!(join_factor(1000, 100_000), 5);
        assert_eq!(join_factor(1000, 300), 20);
        assert_eq!(join_factor(40, 2), 1);
    }
}
