//! One timer for every stream of a plane: the display-rate writes that are due later
//! (`display.rs` holds frames until the end of an interval) are kept in one deadline heap served
//! by one task, instead of a task and a timer per held interval.
//!
//! Guarantees:
//! - Every scheduled deadline fires (calls its stream's `flush_display`) at or after its
//!   instant, once; a stream that went away meanwhile is skipped.
//! - At most one task per plane, alive only while something is scheduled: it ends when the heap
//!   is empty (under the heap's lock, so a deadline scheduled at that moment starts a new one).
//! - Scheduling never blocks on a flush: the task fires outside the heap's lock.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;
use tokio::time::{sleep_until, Instant};

use twoplane_runtime::lock;

/// What the clock calls when a deadline is due: a hosted stream's display-rate write. (A trait,
/// so that the clock, which the options hold, knows nothing of the streams above it.)
pub(crate) trait DisplayWrite: Send + Sync {
    fn flush_display(&self);
}

#[derive(Default)]
pub(crate) struct DisplayClock {
    state: Mutex<Heap>,
    /// An earlier deadline than the one the task sleeps for was scheduled.
    sooner: Notify,
}

#[derive(Default)]
struct Heap {
    due: BinaryHeap<Reverse<Due>>,
    /// Arrival order, so equal instants fire in the order they were scheduled.
    next: u64,
    running: bool,
}

struct Due {
    at: Instant,
    n: u64,
    stream: Weak<dyn DisplayWrite>,
}

impl PartialEq for Due {
    fn eq(&self, other: &Due) -> bool {
        (self.at, self.n) == (other.at, other.n)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Due) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Due) -> std::cmp::Ordering {
        (self.at, self.n).cmp(&(other.at, other.n))
    }
}

impl DisplayClock {
    /// Call `stream`'s `flush_display` at `at`. Must run inside a tokio runtime (the display
    /// holds frames only there).
    pub(crate) fn schedule(self: &Arc<Self>, at: Instant, stream: Weak<dyn DisplayWrite>) {
        let mut heap = lock(&self.state);
        let sooner = heap.due.peek().is_none_or(|Reverse(first)| at < first.at);
        let n = heap.next;
        heap.next += 1;
        heap.due.push(Reverse(Due { at, n, stream }));
        if !heap.running {
            heap.running = true;
            tokio::spawn(self.clone().run());
        } else if sooner {
            self.sooner.notify_one();
        }
    }

    async fn run(self: Arc<Self>) {
        let mut fire = Vec::new();
        loop {
            let next = {
                let mut heap = lock(&self.state);
                let now = Instant::now();
                while heap.due.peek().is_some_and(|Reverse(first)| first.at <= now) {
                    if let Some(Reverse(due)) = heap.due.pop() {
                        fire.push(due.stream);
                    }
                }
                match heap.due.peek() {
                    Some(Reverse(first)) => Some(first.at),
                    None if fire.is_empty() => {
                        heap.running = false;
                        return;
                    }
                    None => None,
                }
            };
            for stream in fire.drain(..) {
                if let Some(stream) = stream.upgrade() {
                    stream.flush_display();
                }
            }
            if let Some(at) = next {
                tokio::select! {
                    _ = sleep_until(at) => {}
                    _ = self.sooner.notified() => {}
                }
            }
        }
    }
}
