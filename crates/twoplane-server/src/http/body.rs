//! [`SseBody`], a reader's response body: its subscription's events as SSE, coalesced per
//! wakeup, with keep-alive comments between; polled by hyper, or by the direct SSE path
//! ([`crate::sse_conn`]), which can also hand the subscription over to its stream's writer task
//! ([`SseBody::poll_step`]).
//!
//! Guarantees:
//! - One write per wakeup, no encoding per client: everything the subscription owes when the
//!   body is polled comes as one buffer (up to [`SseConfig::max_batch_bytes`]) from
//!   [`Subscription::poll_sse`], which hands over the SSE bytes the stream's log encoded once for
//!   every subscriber (one owed event is those shared bytes themselves, a longer span is one
//!   concatenation), and goes out as one body chunk. Under load a client therefore costs
//!   one system call per batch, not per frame, and no JSON encoding at all.
//! - No buffering of its own: the body pulls a frame only when its writer asks for more, which
//!   [`crate::sse_conn`] does once the previous batch is written (and hyper, for a body it serves,
//!   only while its per-connection buffer has room, see [`crate::server`]). A client that
//!   stops reading leaves frames in the plane's bounded subscriber queue, where overflow ends
//!   that subscriber with `stale`; the server's memory does not grow with the backlog.
//! - Frames first: a keep-alive comment that is due waits for the next poll when there are
//!   events to write; nothing follows a terminal (the subscription is released as its last
//!   bytes go out), unless a UI reader's continuation does (`continuation.rs`).
//! - Teardown: when the client disconnects, its writer drops the body, which drops the
//!   subscription, which detaches it from the stream at once, before the reader stops counting
//!   as live. The keep-alive comment (every [`SseConfig::keep_alive`]) bounds how long a silent,
//!   vanished client can go unnoticed.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use twoplane_core::sse::KEEP_ALIVE_COMMENT;
use twoplane_stream::{SseBatch, SseSink, Subscription};

use super::admission::Places;
use super::config::{SseConfig, SseStats};
use super::continuation::{Continue, Resume};
use crate::conn_limits::SubscriberPass;
use crate::deadline::poll_deadline;

/// What [`SseBody::poll_step`] gave a writer that can take over delivery.
pub(crate) enum Step {
    /// Bytes to write: events, or a keep-alive comment that was due.
    Data(Bytes),
    /// The body is over.
    End,
    /// Caught up: the subscription now delivers through the sink it was offered, until the sink
    /// is resumed.
    Handed,
}

/// The response body: a subscription's frames as SSE events, coalesced per wakeup, with
/// keep-alive comments between.
pub struct SseBody {
    /// `None` once the terminal frame is encoded: dropping it detaches from the stream before
    /// the last bytes even reach the socket.
    subscription: Option<Subscription>,
    keep_alive: KeepAlive,
    /// A u32 beside `done` (a batch is far below 4 GiB): every reader holds this body, and 8
    /// bytes less keep it in malloc's 256-byte class.
    max_batch_bytes: u32,
    /// Whether the body is over (terminal sent, or the subscription ran dry).
    done: bool,
    stats: Arc<SseStats>,
    /// The reader's places (under the bounds, among the live readers), given back when the body
    /// goes, after its subscription.
    places: Places,
    /// What continues a UI reader whose subscription ended short of `[DONE]`.
    resume: Resume,
}

/// The keep-alive comment's schedule: when the next one is due, with a timer only while a task
/// waits for it. A reader parked without a task (`crate::parking`) is told by its lot's one timer
/// instead, and holds none (a timer is about 120 bytes a reader).
struct KeepAlive {
    every: Duration,
    due: Instant,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl KeepAlive {
    fn new(every: Duration) -> KeepAlive {
        KeepAlive { every, due: Instant::now() + every, timer: None }
    }

    /// Ready when a comment is due; the next one is then scheduled. Registers `cx` with a timer.
    fn poll_due(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        std::task::ready!(poll_deadline(&mut self.timer, self.due, cx));
        self.due = Instant::now() + self.every;
        Poll::Ready(())
    }

    /// Whether a comment is due at `now` (the next one is then scheduled), without a timer.
    fn take_due(&mut self, now: Instant) -> bool {
        if now < self.due {
            return false;
        }
        self.due = now + self.every;
        true
    }
}

impl SseBody {
    pub fn new(subscription: Subscription, config: &SseConfig, stats: Arc<SseStats>) -> SseBody {
        let places = Places::new(stats.clone());
        SseBody {
            subscription: Some(subscription),
            keep_alive: KeepAlive::new(config.keep_alive.max(Duration::from_millis(1))),
            max_batch_bytes: config.max_batch_bytes.clamp(1, u32::MAX as usize) as u32,
            done: false,
            stats,
            places,
            resume: Resume::default(),
        }
    }

    /// This body, holding its places under the subscriber bounds (given back when it goes).
    pub(crate) fn admitted(mut self, pass: Option<SubscriberPass>) -> SseBody {
        self.places.admitted(pass);
        self
    }

    /// This body, counted as a UI reader (in [`SseStats::ui_active`], and by `gauge`, which the
    /// body holds while it lives) while it lives.
    pub(crate) fn counted_as_ui(mut self, gauge: impl Send + 'static) -> SseBody {
        self.places.count_ui(&self.stats, gauge);
        self
    }

    /// This body, continued by `resume` whenever its UI subscription ends short of `[DONE]`.
    pub(crate) fn continued_by(mut self, resume: Box<dyn Continue>) -> SseBody {
        self.resume.by(resume);
        self
    }

    /// The subscription is over (its terminal went out, or it ran dry): a UI reader that did not
    /// reach `[DONE]` is continued, anything else ends.
    fn subscription_over(&mut self) {
        let outcome = self.subscription.take().and_then(|sub| sub.ui_outcome());
        if !self.resume.start(outcome) {
            self.done = true;
        }
    }

    /// The next thing to write, or, once the subscription has caught up, its hand-over to
    /// `sink` (direct delivery, `crate::sse_conn`): the writer then waits for the sink's resume.
    pub(crate) fn poll_step(&mut self, cx: &mut Context<'_>, sink: &Arc<dyn SseSink>) -> Poll<Step> {
        match http_body::Body::poll_frame(Pin::new(&mut *self), cx) {
            Poll::Ready(Some(Ok(frame))) => {
                return Poll::Ready(frame.into_data().map_or(Step::Data(Bytes::new()), Step::Data));
            }
            Poll::Ready(Some(Err(never))) => match never {},
            Poll::Ready(None) => return Poll::Ready(Step::End),
            Poll::Pending => {}
        }
        let max = self.max_batch_bytes as usize;
        if self.subscription.as_mut().is_some_and(|sub| sub.deliver_to(sink.clone(), max)) {
            return Poll::Ready(Step::Handed);
        }
        // Not a hosted stream's, or frames arrived since the poll: the poll registered this task, so
        // it is woken for them.
        Poll::Pending
    }

    /// The endpoint's counters, which a writer of its own keeps too.
    pub(crate) fn stats(&self) -> &Arc<SseStats> {
        &self.stats
    }

    /// A keep-alive comment when one is due (counted, and the next one scheduled), for a writer
    /// that does not poll the body while its subscription is delivered directly.
    pub(crate) fn poll_ping(&mut self, cx: &mut Context<'_>) -> Poll<Bytes> {
        if self.done || self.keep_alive.poll_due(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(self.ping())
    }

    /// A keep-alive comment if one is due at `now` (counted, and the next one scheduled), for a
    /// reader whose lot keeps the time ([`SseBody::next_ping`]).
    pub(crate) fn ping_at(&mut self, now: Instant) -> Option<Bytes> {
        (!self.done && self.keep_alive.take_due(now)).then(|| self.ping())
    }

    /// When the next keep-alive comment is due, if one ever is.
    pub(crate) fn next_ping(&self) -> Option<Instant> {
        (!self.done).then_some(self.keep_alive.due)
    }

    /// The body's keep-alive timer goes: from now on its time is kept by whoever asks
    /// [`SseBody::next_ping`] (until [`SseBody::poll_ping`] makes a timer again).
    pub(crate) fn untimed(&mut self) {
        self.keep_alive.timer = None;
    }

    fn ping(&self) -> Bytes {
        self.stats.pings.fetch_add(1, Ordering::Relaxed);
        Bytes::from_static(KEEP_ALIVE_COMMENT.as_bytes())
    }

    /// Account for one batch and, after a terminal, end the body.
    fn sent(&mut self, batch: &SseBatch) {
        if batch.terminal {
            // Nothing follows a terminal (docs/contract.md §1): end the body after this write and
            // release the subscription now (unless a UI reader's continuation follows).
            self.subscription_over();
        }
        self.stats.frames.fetch_add(batch.frames, Ordering::Relaxed);
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(batch.bytes.len() as u64, Ordering::Relaxed);
    }
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if this.resume.ending() {
            this.done = true;
        }
        if this.done {
            return Poll::Ready(None);
        }
        // A UI reader's continuation: its bytes, then the subscription it brings.
        if let Poll::Ready(next) = this.resume.poll(cx) {
            let Some(next) = next else {
                this.done = true;
                return Poll::Ready(None);
            };
            this.subscription = next.subscription;
            if !next.bytes.is_empty() {
                this.stats.bytes.fetch_add(next.bytes.len() as u64, Ordering::Relaxed);
                this.stats.writes.fetch_add(1, Ordering::Relaxed);
                return Poll::Ready(Some(Ok(http_body::Frame::data(next.bytes))));
            }
            if this.resume.ending() {
                this.done = true;
                return Poll::Ready(None);
            }
        }
        // Frames first: a pending ping can wait for the next poll.
        if let Some(sub) = this.subscription.as_mut() {
            match sub.poll_sse(cx, this.max_batch_bytes as usize) {
                Poll::Ready(Some(batch)) => {
                    this.sent(&batch);
                    if batch.bytes.is_empty() {
                        // A terminal with nothing to write (a UI reader's `stale`): what follows
                        // (a continuation, or the end) is the next poll's.
                        if this.done {
                            return Poll::Ready(None);
                        }
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    return Poll::Ready(Some(Ok(http_body::Frame::data(batch.bytes))));
                }
                Poll::Ready(None) => {
                    // The subscription ran dry: after a terminal a direct writer delivered, or
                    // (it cannot, by contract) without one; a UI reader may be continued.
                    this.subscription_over();
                    if this.done {
                        return Poll::Ready(None);
                    }
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Pending => {}
            }
        }
        match this.poll_ping(cx) {
            Poll::Ready(ping) => Poll::Ready(Some(Ok(http_body::Frame::data(ping)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        // The subscription (if still held) detaches in its own Drop, right here, before the
        // reader stops counting as live.
        self.subscription = None;
    }
}

#[cfg(test)]
mod tests {
    /// Every reader's body is one allocation of this size for as long as the reader is connected:
    /// up to 248 bytes it is in glibc's 256-byte class, past that in the next (248 measured when
    /// the bound was set, after a UI reader's continuation was boxed and the batch bound made a
    /// u32).
    #[test]
    fn a_reader_body_stays_in_its_malloc_class() {
        let size = std::mem::size_of::<super::SseBody>();
        assert!(size <= 248, "a reader's body is {size} bytes");
    }
}
