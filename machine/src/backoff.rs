//! Exponential reconnect backoff with jitter, reset when the connection becomes ready.
//!
//! The seeds had three incompatible formulas; this is the resolution of seed-design §7.3:
//! the n-th delay (n from 0) is `min(min · 2^n, max)` scaled by a jitter of ±pct %, so the
//! sequence is 1, 2, 4, 8, 16, 30, 30 s (each ±20 %) by default. The un-jittered step is what
//! is stored, so jitter never compounds.

use std::time::Duration;

use crate::rng::Rng;

/// Where in the backoff sequence the connection is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    /// The base (un-jittered) delay of the current step.
    pub(crate) fn base(&self, min: Duration, max: Duration) -> Duration {
        let factor = 1u32.checked_shl(self.step.min(31)).unwrap_or(u32::MAX);
        min.checked_mul(factor).map_or(max, |d| d.min(max))
    }

    /// The next delay to wait (jittered), advancing the sequence.
    pub(crate) fn next(
        &mut self,
        min: Duration,
        max: Duration,
        pct: u32,
        rng: &mut Rng,
    ) -> Duration {
        let base = self.base(min, max);
        if base < max {
            self.step += 1;
        }
        rng.jitter(base, pct)
    }

    /// Back to the first step.
    pub(crate) fn reset(&mut self) {
        self.step = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_doubles_to_the_cap_and_resets() {
        let (min, max) = (Duration::from_secs(1), Duration::from_secs(30));
        let mut b = Backoff::default();
        let mut rng = Rng::new(3);
        let bases: Vec<u64> = (0..7)
            .map(|_| {
                let base = b.base(min, max).as_secs();
                let d = b.next(min, max, 20, &mut rng);
                let lo = Duration::from_secs(base) * 8 / 10;
                let hi = Duration::from_secs(base) * 12 / 10;
                assert!(d >= lo && d <= hi);
                base
            })
            .collect();
        assert_eq!(bases, [1, 2, 4, 8, 16, 30, 30]);
        b.reset();
        assert_eq!(b.base(min, max), min);
    }
}
