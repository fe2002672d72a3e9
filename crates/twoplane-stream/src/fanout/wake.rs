//! Wake-ups: which of a shard's subscribers wait for its next change, and whom a change wakes.
//!
//! Guarantees:
//! - One wake-up per push, only for the waiting: a slot parks by registering its waker and is
//!   listed among the waiting once however often it parks ([`Waiters::park`]); a publish bumps
//!   the change counter and wakes exactly the listed slots, each at most once, and the list
//!   empties. A woken subscriber takes everything available up to its batch limit under one
//!   lock, so a burst of N frames costs it one wake-up, not N.
//! - Nothing is woken under the lock: whom to wake is collected in [`Wakes`] (subscribers'
//!   tasks, and the stream's writer tasks as one bit each) and woken by the caller after it
//!   releases the shard's lock.
//! - A subscriber that has caught up and is parked can tell from the change counter alone,
//!   without the lock, that nothing changed: [`Drained::caught_up_at`] is the counter at a drain
//!   that took everything, and every change a subscriber could wait for bumps it first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Waker;

/// Whom a change wakes, collected under the lock and acted on after it: subscribers' tasks, and
/// the stream's writer tasks (bit `i` for writer `i`, so each is woken once however many shards
/// and slots name it).
#[derive(Default)]
pub(crate) struct Wakes {
    pub tasks: Vec<Waker>,
    pub writers: u64,
}

/// What a drain left behind, for the subscriber's lock-free checks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Drained {
    /// Nothing more will come: the terminal was handed over (or the slot is gone).
    pub done: bool,
    /// The slot's waker is registered: the next change wakes it.
    pub parked: bool,
    /// The change counter at the drain, when it took everything available; `None` when the
    /// batch limit stopped it (more is waiting, so the counter says nothing).
    pub caught_up_at: Option<u64>,
}

impl Drained {
    /// A slot delivered directly, seen by its owner: nothing to take, no waker registered.
    pub const HANDED_OVER: Drained = Drained { done: false, parked: false, caught_up_at: None };
    /// A slot that does not exist: nothing will ever come.
    pub const GONE: Drained = Drained { done: true, parked: false, caught_up_at: None };
}

/// A slot's side of waiting: its waker, and whether it is listed in its shard's [`Waiters`].
#[derive(Default)]
pub(super) struct Parking {
    pub waker: Option<Waker>,
    /// Its key is in the shard's list of waiting slots (so it is listed once).
    pub parked: bool,
}

/// A shard's side of waiting: the slots waiting for a change, and the change counter.
#[derive(Default)]
pub(super) struct Waiters {
    /// Keys of slots waiting for a frame.
    parked: Vec<usize>,
    /// Bumped (under the shard's lock) by every change a subscriber could be waiting for.
    changes: Arc<AtomicU64>,
}

impl Waiters {
    /// The change counter, for a subscription to read without the lock.
    pub fn changes(&self) -> Arc<AtomicU64> {
        self.changes.clone()
    }

    /// The change counter now.
    pub fn now(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    pub fn bump(&self) {
        self.changes.fetch_add(1, Ordering::Release);
    }

    /// Register `waker` for slot `key`'s next change (listed once).
    pub fn park(&mut self, parking: &mut Parking, key: usize, waker: &Waker) {
        match &parking.waker {
            Some(w) if w.will_wake(waker) => {}
            _ => parking.waker = Some(waker.clone()),
        }
        self.list(parking, key);
    }

    /// List `key` among the slots waiting for a change (once).
    pub fn list(&mut self, parking: &mut Parking, key: usize) {
        if !parking.parked {
            parking.parked = true;
            self.parked.push(key);
        }
    }

    /// Take the list of waiting slots (each slot's `parked` is for the caller to clear).
    pub fn take(&mut self) -> std::vec::Drain<'_, usize> {
        self.parked.drain(..)
    }
}
