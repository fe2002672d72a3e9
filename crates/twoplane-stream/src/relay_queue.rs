//! The bounded queue between a relay reader task (`relay_leg.rs`) and the one subscription it
//! feeds: what a subscriber of a stream hosted elsewhere reads.
//!
//! Guarantees:
//! - At most `cap` non-terminal frames are queued; an offer past that is refused
//!   ([`Offer::Full`]) so the reader task can end the subscriber with `stale` instead of
//!   growing memory. The terminal is queued past the cap, and nothing after it.
//! - Closing (the subscription dropped) clears the queue at once and wakes the reader task, so
//!   the adapter's source is dropped without waiting for its next frame.
//!
//! It knows frames and wakers only: the task that fills it and the subscription that drains it
//! both sit above it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;
use twoplane_core::message::MessageFrame;

/// The bounded queue between a relay reader task and its subscriber.
pub(crate) struct RelayQueue {
    state: Mutex<RelayQueueState>,
    cap: usize,
    /// Wakes the reader task when the subscriber goes away.
    pub closed_signal: Notify,
}

struct RelayQueueState {
    frames: VecDeque<Arc<MessageFrame>>,
    /// The terminal is queued: nothing more will come.
    done: bool,
    /// The subscriber dropped.
    closed: bool,
    waker: Option<Waker>,
}

/// What the reader task should do after offering a frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    Accepted,
    /// The subscriber is at the cap: queue a `stale` (via [`RelayQueue::finish`]) and stop.
    Full,
    /// The subscriber is gone or already finished: stop.
    Stop,
}

impl RelayQueue {
    pub fn new(cap: usize) -> Arc<RelayQueue> {
        Arc::new(RelayQueue {
            state: Mutex::new(RelayQueueState { frames: VecDeque::new(), done: false, closed: false, waker: None }),
            cap,
            closed_signal: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, RelayQueueState> {
        twoplane_runtime::lock(&self.state)
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Offer a non-terminal frame.
    pub fn offer(&self, frame: MessageFrame) -> Offer {
        let waker = {
            let mut st = self.lock();
            if st.closed || st.done {
                return Offer::Stop;
            }
            if st.frames.len() >= self.cap {
                return Offer::Full;
            }
            st.frames.push_back(Arc::new(frame));
            st.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        Offer::Accepted
    }

    /// Queue the terminal frame, past the cap.
    pub fn finish(&self, frame: MessageFrame) {
        let waker = {
            let mut st = self.lock();
            if st.closed || st.done {
                return;
            }
            st.frames.push_back(Arc::new(frame));
            st.done = true;
            st.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// The next queued frame, or `None` once the terminal was taken (or the subscriber left);
    /// otherwise registers `cx`'s waker.
    pub fn poll(&self, cx: &mut Context<'_>) -> Poll<Option<Arc<MessageFrame>>> {
        let mut st = self.lock();
        if let Some(f) = st.frames.pop_front() {
            return Poll::Ready(Some(f));
        }
        if st.done || st.closed {
            return Poll::Ready(None);
        }
        match &st.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// The next queued frame if there is one now.
    pub fn try_next(&self) -> Option<Arc<MessageFrame>> {
        self.lock().frames.pop_front()
    }

    /// The subscriber went away: drop what is queued and wake the reader task to stop.
    pub fn close(&self) {
        {
            let mut st = self.lock();
            st.closed = true;
            st.frames.clear();
            st.waker = None;
        }
        self.closed_signal.notify_one();
    }
}
