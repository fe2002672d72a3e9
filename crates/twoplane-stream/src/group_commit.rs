//! Group commit: many callers' writes gathered into one transaction, by whichever caller finds
//! no writer running (a leader), with no thread or task parked while there is nothing to write.
//!
//! Guarantees:
//! - At most one leader at a time per queue, so a store sees one writing transaction from it;
//!   a caller that queues work while a leader runs is picked up by that leader's next batch
//!   (the writes that arrive while a transaction commits are the next transaction).
//! - Batches are taken at least [`SPACING`] apart (the leader asks [`Leading::wait`] first), so
//!   a busy store commits at a bounded rate with larger batches, and a quiet one at once.
//! - Work is taken in arrival order, at most `max` items a batch; nothing queued is ever left
//!   without a leader: a leader stops only when it found the queue empty under the lock that
//!   `push` takes, and a leader that ends early (its task dropped, or a panic unwinding it)
//!   hands the role back through [`Leading`]'s drop, so the next `push` starts one.
//!
//! This module only queues; what a batch is and how it commits is the backend's
//! (`sqlite_shared.rs`, `postgres.rs`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use twoplane_runtime::lock;

/// The most work items one transaction takes: enough to carry every due checkpoint of
/// thousands of streams, and a bound on how long one transaction holds the write lock.
pub(crate) const MAX_BATCH: usize = 1024;

/// The least time from taking one batch to taking the next. A leader that took a batch less
/// than this long ago waits out the rest first, so writes that arrive meanwhile share its next
/// transaction: at most 200 commits (and syncs) a second, each carrying what 5 ms brought,
/// where a leader that took what was there at once committed about as often as a commit takes
/// (measured: 1,000 streams at a model's pace, one SQLite file, about 670 commits a second of
/// two checkpoints each; server CPU per delivered delta 94 -> 79 µs at 5 ms, 71 at 10, 74 at
/// 20, docs/server.md, "The store"). Not 10 ms: there, in 2 of 8 runs of the test that probes
/// status while 1,000 streams checkpoint (many_streams.rs, a debug build), one status read
/// waited about 150 ms as the streams ended; at 5 ms none of 8 did (the cause is not known).
/// A write that finds the store quiet is not held: only one that follows another commit within
/// 5 ms waits, and for at most that long.
pub(crate) const SPACING: Duration = Duration::from_millis(5);

pub(crate) struct GroupQueue<T> {
    state: Mutex<Queue<T>>,
    spacing: Duration,
}

struct Queue<T> {
    items: VecDeque<T>,
    leading: bool,
    /// When the last batch was taken.
    last: Option<Instant>,
}

impl<T> GroupQueue<T> {
    /// A queue whose batches are taken at least [`SPACING`] apart.
    pub(crate) fn new() -> GroupQueue<T> {
        Self::with_spacing(SPACING)
    }

    pub(crate) fn with_spacing(spacing: Duration) -> GroupQueue<T> {
        GroupQueue { state: Mutex::new(Queue { items: VecDeque::new(), leading: false, last: None }), spacing }
    }

    /// Queue `item`. `Some`: no leader runs, and the caller must run one with the returned role
    /// (taking batches with [`Leading::take`] until it answers `None`).
    pub(crate) fn push(self: &Arc<Self>, item: T) -> Option<Leading<T>> {
        let mut q = lock(&self.state);
        q.items.push_back(item);
        if q.leading {
            return None;
        }
        q.leading = true;
        Some(Leading { queue: self.clone(), done: false })
    }
}

/// The leader's role; dropping it lets the next `push` start a leader.
pub(crate) struct Leading<T> {
    queue: Arc<GroupQueue<T>>,
    /// `take` found the queue empty and gave the role up: a later leader may hold it now.
    done: bool,
}

impl<T> Leading<T> {
    /// How long the leader waits before it takes the next batch: what is left of the queue's
    /// spacing since the last batch was taken (`None`: take it now, or the queue is empty and
    /// `take` ends the role at once; the next `push`'s leader waits instead).
    pub(crate) fn wait(&self) -> Option<Duration> {
        let q = lock(&self.queue.state);
        if q.items.is_empty() {
            return None;
        }
        let since = q.last?.elapsed();
        self.queue.spacing.checked_sub(since).filter(|d| !d.is_zero())
    }

    /// The next batch, oldest first, at most `max` items; `None` when the queue is empty (and
    /// from then on the role is given up).
    pub(crate) fn take(&mut self, max: usize) -> Option<Vec<T>> {
        let mut q = lock(&self.queue.state);
        if q.items.is_empty() {
            q.leading = false;
            self.done = true;
            return None;
        }
        let n = q.items.len().min(max);
        q.last = Some(Instant::now());
        Some(q.items.drain(..n).collect())
    }

    /// Put `items` back at the head of the queue, in their order (a batch that was cut short
    /// before they ran).
    pub(crate) fn put_back(&mut self, items: Vec<T>) {
        let mut q = lock(&self.queue.state);
        for item in items.into_iter().rev() {
            q.items.push_front(item);
        }
    }
}

impl<T> Drop for Leading<T> {
    fn drop(&mut self) {
        // Normally `take` already gave the role up (and another leader may hold it by now);
        // this covers a leader that ends otherwise. What it leaves queued waits for the next
        // `push`, whose caller then leads.
        if !self.done {
            lock(&self.queue.state).leading = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_leader_takes_everything_queued_in_order() {
        let q = Arc::new(GroupQueue::with_spacing(Duration::ZERO));
        let mut leader = q.push(1).expect("the first push leads");
        assert!(q.push(2).is_none());
        assert!(q.push(3).is_none());
        assert_eq!(leader.take(2), Some(vec![1, 2]));
        leader.put_back(vec![2]);
        assert_eq!(leader.take(10), Some(vec![2, 3]));
        assert_eq!(leader.take(10), None);
        let second = q.push(4).expect("an idle queue hands the role to the next push");
        drop(leader);
        assert!(q.push(5).is_none(), "a finished leader's drop does not free the next one's role");
        drop(second);
    }

    #[test]
    fn a_dropped_leader_hands_the_role_back() {
        let q = Arc::new(GroupQueue::with_spacing(Duration::ZERO));
        let leader = q.push(1).unwrap();
        drop(leader);
        let mut next = q.push(2).expect("the role is free again");
        assert_eq!(next.take(10), Some(vec![1, 2]), "what the dropped leader left is not lost");
    }

    #[test]
    fn batches_are_taken_the_spacing_apart_and_a_quiet_queue_at_once() {
        let spacing = Duration::from_millis(50);
        let q = Arc::new(GroupQueue::with_spacing(spacing));
        let mut leader = q.push(1).unwrap();
        assert_eq!(leader.wait(), None, "nothing was taken yet: no wait");
        assert_eq!(leader.take(10), Some(vec![1]));
        assert_eq!(leader.wait(), None, "nothing queued: no wait, the role ends");
        assert!(q.push(2).is_none());
        let wait = leader.wait().expect("a batch was just taken");
        assert!(wait <= spacing && wait > spacing / 2, "{wait:?}");
        std::thread::sleep(wait);
        assert_eq!(leader.wait(), None);
        assert_eq!(leader.take(10), Some(vec![2]));
        assert_eq!(leader.take(10), None);
        // The next leader is held to the same spacing (it is the queue's, not the leader's).
        let next = q.push(3).unwrap();
        assert!(next.wait().is_some());
        drop(next);
        std::thread::sleep(spacing);
        assert_eq!(q.push(4).unwrap().wait(), None, "a quiet queue commits at once");
    }
}
