//! Paired latencies and what they say: a bounded uniform sample of the pairs (each request's
//! latency on every target); a bootstrap confidence interval for the ratio of mean latencies
//! between two targets over that sample, resampling whole pairs (a seeded RNG: the same run gives
//! the same interval); and the median of the per-request ratios with its distribution-free
//! interval, which a few slow outliers on one side do not move.

use rand::rngs::{SmallRng, StdRng};
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// Pairs kept per command or namespace (reservoir sampling beyond).
pub const SAMPLE_CAP: usize = 10_000;

/// A uniform sample of the paired latencies (nanoseconds), `width` per request.
#[derive(Debug, Clone)]
pub struct PairSample {
    width: usize,
    /// Pairs kept at most.
    cap: usize,
    /// Row-major: `width` latencies per kept pair.
    rows: Vec<u64>,
    /// Pairs offered so far.
    pub seen: u64,
}

impl PairSample {
    pub fn new(width: usize) -> PairSample {
        PairSample::with_cap(width, SAMPLE_CAP)
    }

    /// A sample keeping at most `cap` pairs.
    pub fn with_cap(width: usize, cap: usize) -> PairSample {
        PairSample {
            width,
            cap: cap.max(1),
            rows: Vec::new(),
            seen: 0,
        }
    }

    /// Offers one pair (algorithm R: each pair kept with probability cap/seen).
    pub fn offer(&mut self, pair: &[u64], rng: &mut StdRng) {
        debug_assert_eq!(pair.len(), self.width);
        self.seen += 1;
        let kept = self.rows.len() / self.width.max(1);
        if kept < self.cap {
            self.rows.extend_from_slice(pair);
            return;
        }
        let j = rng.random_range(0..self.seen);
        if (j as usize) < self.cap {
            let at = j as usize * self.width;
            self.rows[at..at + self.width].copy_from_slice(pair);
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len() / self.width.max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn column(&self, i: usize) -> impl Iterator<Item = u64> + '_ {
        self.rows.chunks_exact(self.width).map(move |r| r[i])
    }

    /// The latencies of target `i` in the sample, in microseconds.
    pub fn latencies_us(&self, i: usize) -> Vec<f64> {
        self.column(i).map(|ns| ns as f64 / 1e3).collect()
    }

    /// Mean latency of `b` over that of `a`, with a bootstrap interval at `confidence`.
    pub fn ratio(&self, a: usize, b: usize, cfg: &Bootstrap) -> Option<RatioEstimate> {
        let n = self.len();
        if n < 2 {
            return None;
        }
        let pairs: Vec<(f64, f64)> = self
            .column(a)
            .zip(self.column(b))
            .map(|(x, y)| (x as f64, y as f64))
            .collect();
        let ratio_of = |sa: f64, sb: f64| (sa > 0.0).then(|| sb / sa);
        let (sa, sb) = pairs
            .iter()
            .fold((0.0, 0.0), |(sa, sb), (x, y)| (sa + x, sb + y));
        let ratio = ratio_of(sa, sb)?;
        // A small fast generator: the resampling draws `resamples` x n indices.
        let mut rng = SmallRng::seed_from_u64(cfg.seed);
        let mut ratios = Vec::with_capacity(cfg.resamples);
        for _ in 0..cfg.resamples {
            let (mut sa, mut sb) = (0.0, 0.0);
            for _ in 0..n {
                let (x, y) = pairs[rng.random_range(0..n)];
                sa += x;
                sb += y;
            }
            if let Some(r) = ratio_of(sa, sb) {
                ratios.push(r);
            }
        }
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_by(f64::total_cmp);
        let tail = (1.0 - cfg.confidence) / 2.0;
        let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
        Some(RatioEstimate {
            ratio,
            low: at(tail),
            high: at(1.0 - tail),
            confidence: cfg.confidence,
            pairs: n as u64,
        })
    }

    /// The median over the same requests of `b`'s latency over `a`'s, with the distribution-free
    /// interval of the sign test: the k-th smallest and k-th largest per-request ratio, k the
    /// largest whose coverage (binomial(n, 1/2) tails) is at least `confidence`. With too few
    /// pairs to reach it, the interval is the whole range and `confidence` says what it covers.
    pub fn median_ratio(&self, a: usize, b: usize, confidence: f64) -> Option<RatioEstimate> {
        let mut ratios: Vec<f64> = self
            .column(a)
            .zip(self.column(b))
            .filter(|&(x, _)| x > 0)
            .map(|(x, y)| y as f64 / x as f64)
            .collect();
        let n = ratios.len();
        if n < 2 {
            return None;
        }
        ratios.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            ratios[n / 2]
        } else {
            (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
        };
        let (k, covered) = sign_test_rank(n, confidence);
        Some(RatioEstimate {
            ratio: median,
            low: ratios[k - 1],
            high: ratios[n - k],
            confidence: if covered >= confidence {
                confidence
            } else {
                covered
            },
            pairs: n as u64,
        })
    }
}

/// For `n` values, the largest rank k (1-based, at most n/2) whose order statistics x(k) and
/// x(n+1-k) cover the median with probability 1 - 2 P(Binomial(n, 1/2) < k) >= `confidence`,
/// and that coverage; k = 1 (the whole range) with its lower coverage when none reaches it.
pub fn sign_test_rank(n: usize, confidence: f64) -> (usize, f64) {
    // P(Binomial(n, 1/2) = i), from logs: 2^-n underflows long before n = 10,000.
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let mut ln_choose = 0.0f64; // ln C(n, k - 1)
    let mut below = (-ln2n).exp(); // P(Binomial < k), k = 1
    let mut best = (1, 1.0 - 2.0 * below);
    for k in 2..=n / 2 {
        ln_choose += ((n + 2 - k) as f64 / (k - 1) as f64).ln();
        below += (ln_choose - ln2n).exp();
        let coverage = 1.0 - 2.0 * below;
        if coverage < confidence {
            break;
        }
        best = (k, coverage);
    }
    best
}

/// How intervals are computed.
#[derive(Debug, Clone, Copy)]
pub struct Bootstrap {
    pub resamples: usize,
    /// 0.95 for a 95% interval.
    pub confidence: f64,
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            resamples: 1000,
            confidence: 0.95,
            seed: 1,
        }
    }
}

/// One target's mean latency over another's, over the same requests, with its interval.
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RatioEstimate {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub confidence: f64,
    /// Pairs the estimate is made over.
    pub pairs: u64,
}

impl RatioEstimate {
    /// An estimate at 95% over 1,000 pairs, for tests.
    #[cfg(test)]
    pub fn test(ratio: f64, low: f64, high: f64) -> RatioEstimate {
        RatioEstimate {
            ratio,
            low,
            high,
            confidence: 0.95,
            pairs: 1_000,
        }
    }

    /// Whether the interval lies wholly above 1 (slower) or below (faster).
    pub fn direction(&self) -> std::cmp::Ordering {
        if self.low > 1.0 {
            std::cmp::Ordering::Greater
        } else if self.high < 1.0 {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Equal
        }
    }

    /// "1.10x (95% interval 1.08-1.12x)".
    pub fn interval_text(&self) -> String {
        format!(
            "{:.2}x ({:.0}% interval {:.2}-{:.2}x)",
            self.ratio,
            (self.confidence * 100.0).floor(),
            self.low,
            self.high
        )
    }

    /// "B is 12% slower on find (95% interval 9-15%)".
    pub fn sentence(&self, b: &str, what: &str) -> String {
        let pct = |r: f64| (r - 1.0).abs() * 100.0;
        let conf = (self.confidence * 100.0).round();
        let (word, lo, hi) = if self.ratio >= 1.0 {
            ("slower", self.low - 1.0, self.high - 1.0)
        } else {
            ("faster", 1.0 - self.high, 1.0 - self.low)
        };
        let range = format!("{}-{}%", signed(lo * 100.0), signed(hi * 100.0));
        let verdict = match self.direction() {
            std::cmp::Ordering::Equal => ", not significant",
            _ => "",
        };
        format!(
            "{b} is {:.0}% {word} on {what} ({conf:.0}% interval {range}{verdict})",
            pct(self.ratio)
        )
    }
}

fn signed(v: f64) -> String {
    if v < 0.0 {
        format!("({:.0})", v)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slower_column_gives_an_interval_above_one() {
        let mut s = PairSample::new(2);
        let mut rng = StdRng::seed_from_u64(3);
        for i in 0..5_000u64 {
            let a = 100 + i % 37;
            s.offer(&[a, a * 13 / 10 + i % 11], &mut rng);
        }
        let r = s.ratio(0, 1, &Bootstrap::default()).unwrap();
        assert!(r.low > 1.2 && r.high < 1.45, "{r:?}");
        assert_eq!(r.direction(), std::cmp::Ordering::Greater);
        assert!(
            r.sentence("B", "find").starts_with("B is 3"),
            "{}",
            r.sentence("B", "find")
        );
        let back = s.ratio(1, 0, &Bootstrap::default()).unwrap();
        assert!(back.sentence("A", "find").contains("faster"));
    }

    #[test]
    fn the_sign_test_ranks_match_the_binomial_table() {
        // (n, confidence) -> (k, coverage): the textbook table of the median's interval.
        for (n, conf, k, cov) in [
            (3, 0.95, 1, 0.75),
            (6, 0.95, 1, 0.96875),
            (9, 0.95, 2, 0.9609),
            (9, 0.99, 1, 0.9961),
            (15, 0.95, 4, 0.9648),
            (100, 0.95, 40, 0.9648),
        ] {
            let (got_k, got_cov) = sign_test_rank(n, conf);
            assert_eq!(got_k, k, "n={n} confidence={conf}");
            assert!((got_cov - cov).abs() < 1e-3, "n={n}: {got_cov}");
        }
        // 10,000 pairs (the sample's cap): k near n/2 - 0.98 sqrt(n), no underflow.
        let (k, cov) = sign_test_rank(10_000, 0.95);
        assert!((4_900..=4_903).contains(&k) && cov >= 0.95, "{k} {cov}");
    }

    #[test]
    fn the_median_ratio_ignores_a_slow_tail_the_mean_ratio_does_not() {
        let mut s = PairSample::new(2);
        let mut rng = StdRng::seed_from_u64(5);
        for i in 0..2_000u64 {
            let a = 100 + i % 23;
            // B is the same as A on 95% of the requests, and 40x slower on every 20th.
            let b = if i % 20 == 0 { a * 40 } else { a };
            s.offer(&[a, b], &mut rng);
        }
        let mean = s.ratio(0, 1, &Bootstrap::default()).unwrap();
        assert!(mean.low > 2.5, "{mean:?}");
        let median = s.median_ratio(0, 1, 0.95).unwrap();
        assert_eq!(
            (median.ratio, median.low, median.high),
            (1.0, 1.0, 1.0),
            "{median:?}"
        );
        assert_eq!(median.pairs, 2_000);
    }

    #[test]
    fn the_sample_stays_bounded() {
        let mut s = PairSample::new(3);
        let mut rng = StdRng::seed_from_u64(1);
        for i in 0..(SAMPLE_CAP as u64 * 3) {
            s.offer(&[i, i, i], &mut rng);
        }
        assert_eq!(s.len(), SAMPLE_CAP);
        assert_eq!(s.seen, SAMPLE_CAP as u64 * 3);
    }
}
