//! The checkpoint policy of one hosted stream: when the next round is due.
//!
//! Owns: whether a round was asked for regardless of the threshold (a flush, the interval
//! timer, a store that answered part-way), whether the last round failed (then the stream
//! waits for the interval instead of hot-looping), and when the interval timer fires.
//!
//! Guarantees:
//! - A round is due when undurable text is waiting and either a round was asked for, or the
//!   undurable text reached `chars` and the last round did not fail.
//! - Starting a round clears the request, the failure and the timer; a seal clears the timer
//!   (the seal writes everything, at once).
//! - The timer fires the round it was armed for only: one re-armed or cleared meanwhile is
//!   ignored when the old deadline passes.
//! - A deadline is the interval plus this round's jitter (`jitter.rs`), so many streams opened
//!   together do not write together.
//! - While a round is in flight a push never wakes the driver: the driver looks at the policy
//!   again as soon as the round ends (`round_over`), so a wakeup then would be spent (with group
//!   commit a round waits for its batch, and a push per wakeup was most of a stream's wakeups).

use tokio::time::Instant;

use crate::options::Config;

pub(crate) struct Policy {
    /// A flush or the interval timer asked for a round regardless of the threshold.
    forced: bool,
    /// The last round failed: wait for the interval (or a force) instead of hot-looping.
    stalled: bool,
    /// When the interval timer fires.
    deadline: Option<Instant>,
    /// A round started and the driver has not come back for the next step yet.
    in_flight: bool,
}

impl Policy {
    pub fn new() -> Policy {
        Policy { forced: false, stalled: false, deadline: None, in_flight: false }
    }

    /// Ask for a round regardless of the threshold.
    pub fn force(&mut self) {
        self.forced = true;
    }

    /// No timer (a seal writes everything at once; an ended stream writes nothing more).
    pub fn disarm(&mut self) {
        self.deadline = None;
    }

    /// After a push left `behind` units undurable: whether the driver must wake, because the
    /// threshold was reached or the interval timer was just armed (by `arm`, the driver must
    /// learn its deadline).
    pub fn after_push(&mut self, behind: u64, chars: u64, arm: impl FnOnce() -> Instant) -> bool {
        if behind == 0 || self.in_flight {
            return false;
        }
        if !self.stalled && behind >= chars {
            return true;
        }
        if self.deadline.is_none() {
            self.deadline = Some(arm());
            return true;
        }
        false
    }

    /// Whether a round is due with `behind` units undurable; if so it starts (request, failure
    /// and timer cleared). Otherwise the request is spent all the same: nothing could be written.
    pub fn start_round(&mut self, behind: u64, chars: u64) -> bool {
        if behind > 0 && (self.forced || (!self.stalled && behind >= chars)) {
            self.forced = false;
            self.stalled = false;
            self.deadline = None;
            self.in_flight = true;
            return true;
        }
        self.forced = false;
        false
    }

    /// The driver is back from a round (or never left): pushes wake it again.
    pub fn round_over(&mut self) {
        self.in_flight = false;
    }

    /// The deadline the driver waits for, arming the timer (by `arm`) when text is waiting and
    /// none is set.
    pub fn wait_until(&mut self, waiting: bool, arm: impl FnOnce() -> Instant) -> Option<Instant> {
        if waiting && self.deadline.is_none() {
            self.deadline = Some(arm());
        }
        self.deadline
    }

    /// The timer armed for `at` fired: a round is asked for, unless the timer was re-armed or
    /// cleared meanwhile.
    pub fn fired(&mut self, at: Instant) {
        if self.deadline == Some(at) {
            self.deadline = None;
            self.forced = true;
            self.stalled = false;
        }
    }

    /// A round failed: slow to the interval (re-armed by `arm` when text is `waiting`), unless
    /// `late` waiters are owed an attempt of their own, which is then asked for at once.
    pub fn stall(&mut self, late: bool, waiting: bool, arm: impl FnOnce() -> Instant) {
        self.stalled = true;
        if late {
            self.forced = true;
        }
        if waiting {
            self.deadline = Some(arm());
        }
    }
}

/// The next interval deadline of stream `id`: the interval plus the jitter of round `round`
/// (the number of append attempts so far).
pub(crate) fn interval_deadline(cfg: &Config, id: &str, round: u64) -> Instant {
    Instant::now() + cfg.interval + cfg.jitter.draw(id, round)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_wakes_the_driver_only_when_no_round_is_in_flight() {
        let mut p = Policy::new();
        let soon = Instant::now;
        assert!(p.after_push(10, 8, soon), "past the threshold: wake");
        assert!(p.start_round(10, 8));
        assert!(!p.after_push(20, 8, soon), "a round is in flight: the driver comes back by itself");
        assert!(p.deadline.is_none(), "nor is a timer armed meanwhile");
        p.round_over();
        assert!(p.start_round(20, 8), "back from the round, the text that came meanwhile is due at once");
        p.round_over();
        assert!(p.after_push(30, 8, soon));
    }
}
