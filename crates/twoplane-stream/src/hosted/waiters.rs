//! Durability of one hosted stream: the length the store confirmed, and the flushes waiting
//! for it.
//!
//! Owns: the durable length, the flush waiters, and the count of append attempts (so a failure
//! answers only the waiters its attempt carried).
//!
//! Guarantees:
//! - The durable length only moves forward ([`Durable::raise_to`]); the caller moves it only to
//!   a length the store confirmed and never past the produced length (contract P as the plane
//!   sees it).
//! - A waiter is resolved only once the durable length covers its prefix, and rejected only
//!   when told: when an append attempt sent after it registered, carrying its text, failed
//!   ([`Durable::reject_sent`]: a waiter that arrived while a failed round was reading the store
//!   back is kept for a round of its own), or when its text cannot be written (yet, or ever).
//! - Every waiter is answered exactly once; one whose caller went away drops its answer.

use tokio::sync::oneshot;

use crate::error::{PlaneError, PlaneErrorKind};

/// A flush answered at once, or the channel its answer will arrive on.
pub(crate) enum FlushWait {
    Done(u64),
    Pending(oneshot::Receiver<Result<u64, PlaneError>>),
}

struct Waiter {
    at: u64,
    /// `Durable::attempts` when it registered: attempts numbered above it were sent after it.
    since: u64,
    tx: oneshot::Sender<Result<u64, PlaneError>>,
}

pub(crate) struct Durable {
    /// Length the store confirmed.
    seq: u64,
    waiters: Vec<Waiter>,
    /// Append attempts sent so far (numbered from 1).
    attempts: u64,
}

impl Durable {
    pub fn new() -> Durable {
        Durable { seq: 0, waiters: Vec::new(), attempts: 0 }
    }

    /// Length the store confirmed.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Move the durable length to `seq` if that is forward; `false` (nothing changes) otherwise.
    pub fn raise_to(&mut self, seq: u64) -> bool {
        if seq <= self.seq {
            return false;
        }
        self.seq = seq;
        true
    }

    /// Append attempts sent so far.
    pub fn attempts(&self) -> u64 {
        self.attempts
    }

    /// Number the next append attempt.
    pub fn next_attempt(&mut self) -> u64 {
        self.attempts += 1;
        self.attempts
    }

    /// Register a waiter for the prefix ending at `at`.
    pub fn wait_for(&mut self, at: u64) -> oneshot::Receiver<Result<u64, PlaneError>> {
        let (tx, rx) = oneshot::channel();
        let since = self.attempts;
        self.waiters.push(Waiter { at, since, tx });
        rx
    }

    /// Resolve the waiters the durable length covers.
    pub fn resolve(&mut self) {
        let durable = self.seq;
        self.settle(|w| (w.at <= durable).then_some(Ok(durable)));
    }

    /// Reject the waiters whose prefix ends in `(durable, up_to]`.
    pub fn reject_up_to(&mut self, up_to: u64, err: &PlaneError) {
        let lo = self.seq;
        self.reject_between(lo, up_to, err)
    }

    /// Reject the waiters whose prefix ends in `(lo, hi]`: the round that carried their text did
    /// not land it. Waiters for more text than that stay queued for the next round.
    pub fn reject_between(&mut self, lo: u64, hi: u64, err: &PlaneError) {
        self.settle(|w| (w.at > lo && w.at <= hi).then(|| Err(err.clone())));
    }

    /// Reject the waiters whose prefix ends in `(durable, up_to]` and that were already waiting
    /// when append attempt `attempt` was sent (it carried their text and failed). Returns whether
    /// waiters in that range remain: they registered later and are owed an attempt of their own.
    pub fn reject_sent(&mut self, up_to: u64, attempt: u64, err: &PlaneError) -> bool {
        let lo = self.seq;
        self.settle(|w| (w.at > lo && w.at <= up_to && w.since < attempt).then(|| Err(err.clone())));
        self.waiters.iter().any(|w| w.at > lo && w.at <= up_to)
    }

    /// Answer every waiter `decide` has an answer for; keep the rest in order.
    fn settle(&mut self, decide: impl Fn(&Waiter) -> Option<Result<u64, PlaneError>>) {
        if self.waiters.is_empty() {
            return;
        }
        let waiters = std::mem::take(&mut self.waiters);
        for w in waiters {
            match decide(&w) {
                // A waiter whose caller went away simply drops its answer.
                Some(answer) => drop(w.tx.send(answer)),
                None => self.waiters.push(w),
            }
        }
    }
}

/// The error for a flush or seal that ended with text not durable.
pub(crate) fn shortfall(id: &str, durable: u64, seq: u64) -> PlaneError {
    PlaneError::new(
        PlaneErrorKind::NotDurable,
        format!("stream {id} ended with only {durable} of {seq} code units durable"),
    )
}
