//! The caller-seeded random source used for jitter (SplitMix64).
//!
//! Hand-written rather than taken from a crate because the machine's state must be `Hash` and
//! `Eq` (the model checker stores it), and this is eight lines.

/// A seeded pseudo-random sequence; the same seed gives the same jitter everywhere.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Rng(
    u64,
    /// The model checker's choice: every jitter at its lowest (`false`) or highest (`true`).
    #[cfg(feature = "checker")]
    pub(crate) Option<bool>,
);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(
            seed,
            #[cfg(feature = "checker")]
            None,
        )
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `base` scaled by a uniform factor in `[1 - pct/100, 1 + pct/100]`.
    pub(crate) fn jitter(&mut self, base: std::time::Duration, pct: u32) -> std::time::Duration {
        let pct = u64::from(pct.min(100));
        let nanos = base.as_nanos().min(u128::from(u64::MAX)) as u64;
        // A factor in per-mille, from 1000 - 10*pct to 1000 + 10*pct inclusive.
        let span = 20 * pct + 1;
        #[cfg(feature = "checker")]
        let factor = match self.1 {
            Some(high) => 1000 - 10 * pct + if high { span - 1 } else { 0 },
            None => 1000 - 10 * pct + self.next_u64() % span,
        };
        #[cfg(not(feature = "checker"))]
        let factor = 1000 - 10 * pct + self.next_u64() % span;
        let scaled = u128::from(nanos) * u128::from(factor) / 1000;
        std::time::Duration::from_nanos(scaled.min(u128::from(u64::MAX)) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn jitter_stays_in_bounds_and_is_deterministic() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..10_000 {
            let d = a.jitter(Duration::from_secs(10), 20);
            assert!(
                d >= Duration::from_secs(8) && d <= Duration::from_secs(12),
                "{d:?}"
            );
            assert_eq!(d, b.jitter(Duration::from_secs(10), 20));
        }
    }

    #[test]
    fn zero_jitter_is_exact() {
        let mut r = Rng::new(1);
        assert_eq!(
            r.jitter(Duration::from_millis(10), 0),
            Duration::from_millis(10)
        );
    }
}
