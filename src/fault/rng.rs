//! The seeded draws of `probability` rules: SplitMix64, small and the same on every platform, so
//! one seed and one order of requests give the same faults in every run.

#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_seed_same_draws() {
        let mut a = super::SplitMix::new(7);
        let mut b = super::SplitMix::new(7);
        for _ in 0..100 {
            let x = a.unit();
            assert!((0.0..1.0).contains(&x));
            assert_eq!(x, b.unit());
        }
        assert_ne!(
            super::SplitMix::new(8).unit(),
            super::SplitMix::new(7).unit()
        );
    }
}
