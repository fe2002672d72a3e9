//! Checkpoint jitter: the interval deadline of each stream moves by a bounded, per-stream,
//! per-round amount, so streams opened in the same few milliseconds do not all checkpoint in
//! the same instant every interval (a burst of transactions on the shared database).
//!
//! Guarantees: a draw is in `0..=bound_ms`, never more; it depends only on the seed, the stream
//! id and the round number, so a plane built with a fixed `jitter_seed` draws the same deadlines
//! run after run; different streams (and successive rounds of one stream) draw independently
//! enough to spread out. The jitter only delays an interval deadline: the `chars` threshold and
//! explicit flushes are never delayed.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher, Hash, Hasher};
use std::time::Duration;

/// The jitter of one plane: its bound and seed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Jitter {
    bound_ms: u64,
    seed: u64,
}

impl Jitter {
    pub fn new(bound_ms: u64, seed: u64) -> Jitter {
        Jitter { bound_ms, seed }
    }

    /// The delay added to round `round` of stream `stream_id`'s interval deadline.
    pub fn draw(&self, stream_id: &str, round: u64) -> Duration {
        if self.bound_ms == 0 {
            return Duration::ZERO;
        }
        // SipHash with fixed keys (the default hasher built without RandomState): a good mix
        // of the three inputs, and the same value for the same inputs within a build.
        let mut h = BuildHasherDefault::<DefaultHasher>::default().build_hasher();
        self.seed.hash(&mut h);
        stream_id.hash(&mut h);
        round.hash(&mut h);
        Duration::from_millis(h.finish() % (self.bound_ms + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_within_the_bound_and_spread_out() {
        for bound in [1_u64, 7, 150, 1000] {
            let j = Jitter::new(bound, 42);
            let draws: Vec<u64> = (0..400).map(|i| j.draw(&format!("s{i}"), 0).as_millis() as u64).collect();
            assert!(draws.iter().all(|&d| d <= bound), "a draw passed {bound}: {draws:?}");
            // 400 streams opened together: their first deadlines must not pile up on a few values.
            let mut distinct = draws.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert!(
                distinct.len() as u64 >= (bound + 1).min(100),
                "bound {bound}: only {} distinct draws",
                distinct.len()
            );
            // Both ends of the range are reached for small bounds (the bound is inclusive).
            if bound <= 7 {
                assert!(draws.contains(&0) && draws.contains(&bound), "bound {bound}: {distinct:?}");
            }
            // Roughly uniform: the mean is near the middle of the range.
            let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
            assert!((mean - bound as f64 / 2.0).abs() <= bound as f64 * 0.15 + 0.5, "bound {bound}: mean {mean}");
        }
    }

    #[test]
    fn draws_are_deterministic_under_a_seed_and_vary_by_round_and_seed() {
        let a = Jitter::new(150, 7);
        let b = Jitter::new(150, 7);
        let rounds_a: Vec<Duration> = (0..50).map(|r| a.draw("m1", r)).collect();
        let rounds_b: Vec<Duration> = (0..50).map(|r| b.draw("m1", r)).collect();
        assert_eq!(rounds_a, rounds_b);
        let mut distinct = rounds_a.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 20, "successive rounds of one stream repeat: {rounds_a:?}");
        let other: Vec<Duration> = (0..50).map(|r| Jitter::new(150, 8).draw("m1", r)).collect();
        assert_ne!(rounds_a, other, "the seed changes nothing");
    }

    #[test]
    fn zero_bound_is_no_jitter() {
        let j = Jitter::new(0, 1);
        assert!((0..100).all(|r| j.draw("x", r) == Duration::ZERO));
    }
}
