//! The bound on text one hosted stream holds only in memory: produced, not yet durable.
//!
//! Owns: since when the store has been asked for text without confirming any.
//!
//! Guarantees:
//! - A push is refused whole (nothing is appended) when text is already waiting and either the
//!   waiting text would pass `max_chars` with it, or the oldest checkpoint round that the store
//!   has not answered with progress started `max_age` ago or more. So a store that keeps
//!   confirming checkpoints never trips the age, nor does a stream that checkpoints rarely on
//!   purpose (a long interval asks nothing of the store); a store that fails, or hangs, trips it
//!   `max_age` after it was first asked.
//! - A push onto a stream with nothing waiting is always taken: how large one append may be is
//!   the request limit's business, and a stream cannot wedge itself with one large append.
//! - The seal is never refused here: it writes what is held, for as long as its own deadline
//!   allows (`checkpoint.rs`).

use std::time::Duration;

use tokio::time::Instant;

use crate::options::BacklogLimits;

/// Why a push was refused: the text waiting, and how long the store has been silent about it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct OverBound {
    pub waiting: u64,
    pub silent_for: Duration,
}

pub(crate) struct Backlog {
    /// When the oldest round not yet answered with progress started; `None`: none is owed.
    asked: Option<Instant>,
}

impl Backlog {
    pub fn new() -> Backlog {
        Backlog { asked: None }
    }

    /// Whether a push of `len` units may be taken while `waiting` units are not durable.
    pub fn admit(&self, waiting: u64, len: u64, limits: &BacklogLimits, now: Instant) -> Result<(), OverBound> {
        if waiting == 0 {
            return Ok(());
        }
        let silent_for = self.asked.map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        if waiting.saturating_add(len) > limits.max_chars || (self.asked.is_some() && silent_for >= limits.max_age) {
            return Err(OverBound { waiting, silent_for });
        }
        Ok(())
    }

    /// A checkpoint round starts now (the clock keeps the oldest unanswered one).
    pub fn round_started(&mut self, now: Instant) {
        self.asked.get_or_insert(now);
    }

    /// The durable length moved: the store answers.
    pub fn moved(&mut self) {
        self.asked = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: BacklogLimits = BacklogLimits { max_chars: 100, max_age: Duration::from_secs(30) };

    #[test]
    fn an_idle_stream_takes_any_push() {
        let mut b = Backlog::new();
        let now = Instant::now();
        assert_eq!(b.admit(0, 1_000_000, &LIMITS, now), Ok(()));
        // Even with a round long unanswered: nothing waits, so nothing is at risk.
        b.round_started(now);
        assert_eq!(b.admit(0, 50, &LIMITS, now + Duration::from_secs(60)), Ok(()));
    }

    #[test]
    fn the_size_bound_counts_the_push_itself() {
        let b = Backlog::new();
        let t0 = Instant::now();
        assert_eq!(b.admit(90, 10, &LIMITS, t0), Ok(()), "exactly the bound is taken");
        assert_eq!(b.admit(90, 11, &LIMITS, t0), Err(OverBound { waiting: 90, silent_for: Duration::ZERO }));
    }

    #[test]
    fn the_age_runs_from_the_oldest_unanswered_round() {
        let mut b = Backlog::new();
        let t0 = Instant::now();
        // Text waiting an hour with no round asked for (a long interval): not the store's fault.
        assert_eq!(b.admit(10, 1, &LIMITS, t0 + Duration::from_secs(3_600)), Ok(()));
        b.round_started(t0);
        b.round_started(t0 + Duration::from_secs(20)); // a retry does not restart the clock
        assert_eq!(b.admit(10, 1, &LIMITS, t0 + Duration::from_secs(29)), Ok(()));
        assert_eq!(
            b.admit(10, 1, &LIMITS, t0 + Duration::from_secs(30)),
            Err(OverBound { waiting: 10, silent_for: Duration::from_secs(30) })
        );
        // The store confirmed something: the clock waits for the next round.
        b.moved();
        assert_eq!(b.admit(3, 1, &LIMITS, t0 + Duration::from_secs(90)), Ok(()));
        b.round_started(t0 + Duration::from_secs(90));
        assert!(b.admit(3, 1, &LIMITS, t0 + Duration::from_secs(120)).is_err());
    }
}
