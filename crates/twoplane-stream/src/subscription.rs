//! What a subscriber holds: a handle that yields frames until (and including) one terminal.
//!
//! Guarantees:
//! - Frames come as `Arc<Frame>`: a produced frame is stored once and shared by every
//!   subscriber, so an idle subscriber costs a few hundred bytes, not a copy of the text.
//! - After the terminal frame (`end`, `stale` or `absent`) `next` yields `None` forever.
//! - `try_next` never waits, so a writer can coalesce everything queued into one socket write.
//! - A subscriber of a hosted stream takes every frame available (up to [`LOCAL_BATCH`]) under
//!   one lock of its shard of the stream (live.rs) and parks in the same step; until that shard's
//!   change counter moves it can tell it has nothing new, and wait again, without that lock. So
//!   a push costs each waiting subscriber one wake-up and one lock, however many frames it then
//!   takes.
//! - [`Subscription::poll_sse`] yields the same frames already encoded as server-sent events,
//!   several per call: for a hosted stream they are the bytes the stream's log encoded once for
//!   every reader (see `fanout.rs`), byte for byte what encoding each frame here would give.
//! - Dropping a subscription detaches it at once (a relayed one also stops its reader task,
//!   which drops the adapter's source).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures::Stream;
use twoplane_core::Frame;

use crate::fanout::Drained;
use crate::live::{LiveStream, SubKey};
use crate::relay_queue::RelayQueue;
use crate::sse::{encode_batch, SseBatch};

/// At most this many frames of a hosted stream are taken per lock for `next`/`try_next`.
pub(crate) const LOCAL_BATCH: usize = 64;

pub struct Subscription {
    inner: Inner,
}

enum Inner {
    /// Frames known at join time and nothing after (absent, a bare stale, a sealed stream).
    Fixed(VecDeque<Arc<Frame>>),
    /// A cursor on a hosted stream's frame log.
    Local(Local),
    /// Frames a relay reader task conforms and queues.
    Relay(Arc<RelayQueue>),
}

/// A cursor on a hosted stream's log, with what it took but has not handed out yet.
struct Local {
    stream: Arc<LiveStream>,
    key: SubKey,
    /// Its shard's change counter (see `fanout.rs`).
    changes: Arc<AtomicU64>,
    /// The counter when this cursor last took everything available.
    caught_up_at: Option<u64>,
    /// The waker the slot holds, while it is parked there.
    armed: Option<Waker>,
    /// Frames taken under the lock, not yet handed out. Empty (no allocation) while idle.
    taken: VecDeque<Arc<Frame>>,
    done: bool,
}

impl Local {
    /// Nothing can have arrived since this cursor caught up and parked with a waker that wakes
    /// the task polling now: it can wait without the lock.
    fn quiet(&self, cx: &Context<'_>) -> bool {
        self.armed.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
            && self.caught_up_at == Some(self.changes.load(Ordering::Acquire))
    }

    /// Whether taking the lock could yield anything (the counter moved, or a batch limit left
    /// frames behind).
    fn may_have_more(&self) -> bool {
        !self.done && self.caught_up_at != Some(self.changes.load(Ordering::Acquire))
    }

    fn note(&mut self, d: Drained, parked_with: Option<&Waker>) {
        self.done = d.done;
        self.caught_up_at = d.caught_up_at;
        if !d.parked {
            self.armed = None;
        } else if let Some(w) = parked_with {
            if !self.armed.as_ref().is_some_and(|a| a.will_wake(w)) {
                self.armed = Some(w.clone());
            }
        }
        // Otherwise the slot still holds the waker this cursor last armed it with.
    }

    /// Take what is available under one lock: the first frame is returned, the rest kept.
    fn refill(&mut self, park: Option<&Waker>) -> Option<Arc<Frame>> {
        let mut first = None;
        let taken = &mut self.taken;
        let mut out = |f| match first {
            None => first = Some(f),
            Some(_) => taken.push_back(f),
        };
        let d = self.stream.drain_sub(self.key, LOCAL_BATCH, &mut out, park);
        self.note(d, park);
        first
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Arc<Frame>>> {
        if let Some(f) = self.pop() {
            return Poll::Ready(Some(f));
        }
        if self.done {
            return Poll::Ready(None);
        }
        if self.quiet(cx) {
            return Poll::Pending;
        }
        match self.refill(Some(cx.waker())) {
            Some(f) => Poll::Ready(Some(f)),
            None if self.done => Poll::Ready(None),
            None => Poll::Pending,
        }
    }

    fn try_next(&mut self) -> Option<Arc<Frame>> {
        if let Some(f) = self.pop() {
            return Some(f);
        }
        if self.may_have_more() {
            return self.refill(None);
        }
        None
    }

    /// The next frame already taken. An idle subscriber keeps no buffer: the one that held a
    /// batch goes when it empties.
    fn pop(&mut self) -> Option<Arc<Frame>> {
        let f = self.taken.pop_front()?;
        if self.taken.is_empty() {
            self.taken = VecDeque::new();
        }
        Some(f)
    }

    fn poll_sse(&mut self, cx: &mut Context<'_>, max_bytes: usize) -> Poll<Option<SseBatch>> {
        if !self.taken.is_empty() {
            // Frames a caller took with `next` but did not use: they go first, encoded here.
            let taken = &mut self.taken;
            return Poll::Ready(encode_batch(&mut || taken.pop_front(), max_bytes));
        }
        if self.done {
            return Poll::Ready(None);
        }
        if self.quiet(cx) {
            return Poll::Pending;
        }
        let got = self.stream.drain_sub_sse(self.key, max_bytes, Some(cx.waker()));
        self.note(got.state, Some(cx.waker()));
        match got.bytes {
            Some(bytes) => Poll::Ready(Some(SseBatch { bytes, frames: got.frames, terminal: got.state.done })),
            None if self.done => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}

impl Subscription {
    pub(crate) fn fixed(frames: Vec<Arc<Frame>>) -> Subscription {
        Subscription { inner: Inner::Fixed(frames.into()) }
    }

    pub(crate) fn absent() -> Subscription {
        Subscription::fixed(vec![Arc::new(Frame::Absent)])
    }

    pub(crate) fn local(stream: Arc<LiveStream>, key: SubKey, changes: Arc<AtomicU64>) -> Subscription {
        let local =
            Local { stream, key, changes, caught_up_at: None, armed: None, taken: VecDeque::new(), done: false };
        Subscription { inner: Inner::Local(local) }
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
            Inner::Local(local) => local.try_next(),
            Inner::Relay(queue) => queue.try_next(),
        }
    }

    pub fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Arc<Frame>>> {
        match &mut self.inner {
            Inner::Fixed(frames) => Poll::Ready(frames.pop_front()),
            Inner::Local(local) => local.poll(cx),
            Inner::Relay(queue) => queue.poll(cx),
        }
    }

    /// The next frames as server-sent events, in one buffer: everything available now, up to
    /// about `max_bytes` (a batch stops growing once it reaches the limit, and always holds at
    /// least one event). `None` after the terminal. A hosted stream's frames come as the bytes
    /// its log encoded once for every reader; other frames are encoded here, with the same
    /// encoder.
    pub fn poll_sse(&mut self, cx: &mut Context<'_>, max_bytes: usize) -> Poll<Option<SseBatch>> {
        if let Inner::Local(local) = &mut self.inner {
            return local.poll_sse(cx, max_bytes);
        }
        let first = match self.poll_frame(cx) {
            Poll::Ready(Some(f)) => f,
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        let mut first = Some(first);
        Poll::Ready(encode_batch(&mut || first.take().or_else(|| self.try_next()), max_bytes))
    }

    /// Hand this subscription's events to `sink`, written by the stream's writer task instead of
    /// waking the caller (see [`crate::SseSink`]), at most `max_bytes` per delivery. Only a hosted
    /// stream's subscription that owes nothing right now (it just returned `Pending`) is handed
    /// over; otherwise this returns `false` and nothing changes. After `true`, the caller must
    /// not poll the subscription until the sink's [`crate::SseSink::resume`] is called; polling
    /// meanwhile yields nothing.
    pub fn deliver_to(&mut self, sink: Arc<dyn crate::SseSink>, max_bytes: usize) -> bool {
        let Inner::Local(local) = &mut self.inner else { return false };
        if local.done || !local.taken.is_empty() {
            return false;
        }
        if !local.stream.attach_sink(local.key, sink, max_bytes) {
            return false;
        }
        // The slot no longer holds this cursor's waker, and the counter says nothing about what
        // the writer took: the next poll after `resume` takes the lock.
        local.armed = None;
        local.caught_up_at = None;
        true
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
            Inner::Local(local) => local.stream.detach_sub(local.key),
            Inner::Relay(queue) => queue.close(),
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.inner {
            Inner::Fixed(_) => "fixed",
            Inner::Local(_) => "local",
            Inner::Relay(_) => "relay",
        };
        f.debug_struct("Subscription").field("kind", &kind).finish()
    }
}
