//! What a subscriber holds: a handle that yields frames until (and including) one terminal.
//!
//! Guarantees:
//! - Frames come as `Arc<Frame>`: a produced frame is stored once and shared by every
//!   subscriber, so an idle subscriber costs a few hundred bytes, not a copy of the text.
//! - After the terminal frame (`end`, `stale` or `absent`) `next` yields `None` forever.
//! - `try_next` never waits, so a writer can coalesce everything queued into one socket write.
//! - Dropping a subscription detaches it at once (a relayed one also stops its reader task,
//!   which drops the adapter's source).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures::Stream;
use tokio::sync::Notify;
use twoplane_core::Frame;

use crate::live::LiveStream;

pub struct Subscription {
    inner: Inner,
}

enum Inner {
    /// Frames known at join time and nothing after (absent, a bare stale, a sealed stream).
    Fixed(VecDeque<Arc<Frame>>),
    /// A cursor on a hosted stream's frame log.
    Local { stream: Arc<LiveStream>, key: usize },
    /// Frames a relay reader task conforms and queues.
    Relay(Arc<RelayQueue>),
}

impl Subscription {
    pub(crate) fn fixed(frames: Vec<Arc<Frame>>) -> Subscription {
        Subscription { inner: Inner::Fixed(frames.into()) }
    }

    pub(crate) fn absent() -> Subscription {
        Subscription::fixed(vec![Arc::new(Frame::Absent)])
    }

    pub(crate) fn local(stream: Arc<LiveStream>, key: usize) -> Subscription {
        Subscription { inner: Inner::Local { stream, key } }
    }

    pub(crate) fn relayed(queue: Arc<RelayQueue>) -> Subscription {
        Subscription { inner: Inner::Relay(queue) }
    }

    /// The next frame, waiting for it; `None` after the terminal.
    pub async fn next(&mut self) -> Option<Arc<Frame>> {
        std::future::poll_fn(|cx| self.poll_frame(cx)).await
    }

    /// The next frame if one is queued now.
    pub fn try_next(&mut self) -> Option<Arc<Frame>> {
        match &mut self.inner {
            Inner::Fixed(frames) => frames.pop_front(),
            Inner::Local { stream, key } => stream.take_sub(*key),
            Inner::Relay(queue) => queue.lock().frames.pop_front(),
        }
    }

    pub fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Arc<Frame>>> {
        match &mut self.inner {
            Inner::Fixed(frames) => Poll::Ready(frames.pop_front()),
            Inner::Local { stream, key } => stream.poll_sub(*key, cx),
            Inner::Relay(queue) => queue.poll(cx),
        }
    }

    /// Whether this subscription is served by a relay (the stream is hosted elsewhere).
    pub fn is_relayed(&self) -> bool {
        matches!(self.inner, Inner::Relay(_))
    }
}

impl Stream for Subscription {
    type Item = Arc<Frame>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Arc<Frame>>> {
        self.get_mut().poll_frame(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        match &self.inner {
            Inner::Fixed(_) => {}
            Inner::Local { stream, key } => stream.detach_sub(*key),
            Inner::Relay(queue) => queue.close(),
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.inner {
            Inner::Fixed(_) => "fixed",
            Inner::Local { .. } => "local",
            Inner::Relay(_) => "relay",
        };
        f.debug_struct("Subscription").field("kind", &kind).finish()
    }
}

/// The bounded queue between a relay reader task and its subscriber.
pub(crate) struct RelayQueue {
    state: Mutex<RelayQueueState>,
    cap: usize,
    /// Wakes the reader task when the subscriber goes away.
    pub closed_signal: Notify,
}

pub(crate) struct RelayQueueState {
    pub frames: VecDeque<Arc<Frame>>,
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
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Offer a non-terminal frame.
    pub fn offer(&self, frame: Frame) -> Offer {
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
    pub fn finish(&self, frame: Frame) {
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

    fn poll(&self, cx: &mut Context<'_>) -> Poll<Option<Arc<Frame>>> {
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

    fn close(&self) {
        {
            let mut st = self.lock();
            st.closed = true;
            st.frames.clear();
            st.waker = None;
        }
        self.closed_signal.notify_one();
    }
}
