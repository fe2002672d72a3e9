//! What a subscriber holds: a handle that yields frames until (and including) one terminal.
//!
//! Owns: [`Subscription`], one public handle over three sources: frames fixed at join time, a
//! reader on a hosted stream (`hosted/join.rs`), or the queue a relay reader task fills
//! (`relay_queue.rs`). Only the plane builds one, from what a join or the relay leg returned.
//!
//! Guarantees:
//! - Frames come as `Arc<MessageFrame>`: a produced frame is stored once and shared by every
//!   subscriber, so an idle subscriber costs a few hundred bytes, not a copy of the text.
//! - After the terminal frame (`end`, `stale` or `absent`) `next` yields `None` forever.
//! - `try_next` never waits, so a writer can coalesce everything queued into one socket write.
//! - [`Subscription::poll_sse`] yields the same frames already encoded as server-sent events,
//!   several per call: for a hosted stream they are the bytes the stream's log encoded once for
//!   every reader (see `fanout/encoding.rs`), byte for byte what encoding each frame here would
//!   give.
//! - Dropping a subscription detaches it at once (a hosted reader leaves its shard; a relayed
//!   one also stops its reader task, which drops the adapter's source).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use twoplane_core::message::MessageFrame;

use bytes::Bytes;
use twoplane_core::ui::UiOutcome;
use twoplane_core::Text;

use crate::hosted::{Join, JoinUi, Reader};
use crate::relay_queue::RelayQueue;
use crate::replay::{Replay, FRAME_PIECE_BYTES};
use crate::sse::{encode_batch, SseBatch, SseSink};
use crate::ui_log::UiFollow;

pub struct Subscription {
    inner: Inner,
}

enum Inner {
    /// Frames known at join time and nothing after (absent, a bare stale, a sealed stream's
    /// replay, its text cut into pieces as it is taken).
    Fixed(Replay),
    /// A cursor on a hosted stream's frame log.
    Local(Reader),
    /// Frames a relay reader task conforms and queues.
    Relay(Arc<RelayQueue>),
    /// A UI reader's whole answer, known at join (a stream that ended), until taken.
    FixedUi(Option<Bytes>, UiOutcome),
    /// A UI reader over frames that are not a hosted stream's log (relayed, or `absent`),
    /// encoded here.
    Ui(Box<(Subscription, UiFollow)>),
}

impl Subscription {
    /// A join of a stream hosted here.
    pub(crate) fn joined(join: Join) -> Subscription {
        let inner = match join {
            Join::Fixed(replay) => Inner::Fixed(replay),
            Join::Live(reader) => Inner::Local(reader),
        };
        Subscription { inner }
    }

    /// No stream by that id, here or through the relay.
    pub(crate) fn absent() -> Subscription {
        Subscription { inner: Inner::Fixed(vec![Arc::new(MessageFrame::Absent)].into()) }
    }

    /// A stream hosted elsewhere, read through the relay.
    pub(crate) fn relayed(queue: Arc<RelayQueue>) -> Subscription {
        Subscription { inner: Inner::Relay(queue) }
    }

    /// A UI join of a stream hosted here.
    pub(crate) fn joined_ui(join: JoinUi) -> Subscription {
        let inner = match join {
            JoinUi::Fixed(bytes, outcome) => Inner::FixedUi(Some(bytes), outcome),
            JoinUi::Live(reader) => Inner::Local(reader),
        };
        Subscription { inner }
    }

    /// `frames` (not a hosted stream's log) read as UI events by a reader holding the message at
    /// `from` (see `ui_log.rs`).
    pub(crate) fn as_ui(frames: Subscription, id: Text, from: u64, fresh: bool) -> Subscription {
        Subscription { inner: Inner::Ui(Box::new((frames, UiFollow::new(id, from, fresh)))) }
    }

    /// A UI reader's whole answer, known in full (a server read it from its store): handed out
    /// as one batch, the stream's end.
    pub fn ui_fixed(bytes: Bytes) -> Subscription {
        Subscription { inner: Inner::FixedUi(Some(bytes), UiOutcome { at: 0, ended: true, started: true }) }
    }

    /// Where a UI reader got to, and whether the stream's `end` (and `[DONE]`) reached it:
    /// anything short of that a server continues from `at` ([`crate::Plane::subscribe_ui`]
    /// without `fresh`, or its store). `None` for a subscription of frames.
    pub fn ui_outcome(&self) -> Option<UiOutcome> {
        match &self.inner {
            Inner::Local(reader) => reader.ui_outcome(),
            Inner::FixedUi(_, outcome) => Some(*outcome),
            Inner::Ui(ui) => Some(ui.1.outcome()),
            Inner::Fixed(_) | Inner::Relay(_) => None,
        }
    }

    /// The next frame, waiting for it; `None` after the terminal.
    pub async fn next(&mut self) -> Option<Arc<MessageFrame>> {
        std::future::poll_fn(|cx| self.poll_frame(cx)).await
    }

    /// The next frame if one is queued now.
    pub fn try_next(&mut self) -> Option<Arc<MessageFrame>> {
        match &mut self.inner {
            Inner::Fixed(replay) => replay.pop(FRAME_PIECE_BYTES),
            Inner::Local(reader) => reader.try_next(),
            Inner::Relay(queue) => queue.try_next(),
            // A UI reader is read as events ([`Subscription::poll_sse`]).
            Inner::FixedUi(..) => None,
            Inner::Ui(ui) => ui.0.try_next(),
        }
    }

    pub fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Arc<MessageFrame>>> {
        match &mut self.inner {
            Inner::Fixed(replay) => Poll::Ready(replay.pop(FRAME_PIECE_BYTES)),
            Inner::Local(reader) => reader.poll(cx),
            Inner::Relay(queue) => queue.poll(cx),
            Inner::FixedUi(..) => Poll::Ready(None),
            Inner::Ui(ui) => ui.0.poll_frame(cx),
        }
    }

    /// The next frames as server-sent events, in one buffer: everything available now, up to
    /// about `max_bytes` (a batch stops growing once it reaches the limit, and always holds at
    /// least one event). `None` after the terminal. A hosted stream's frames come as the bytes
    /// its log encoded once for every reader; other frames are encoded here, with the same
    /// encoder.
    pub fn poll_sse(&mut self, cx: &mut Context<'_>, max_bytes: usize) -> Poll<Option<SseBatch>> {
        match &mut self.inner {
            Inner::Local(reader) => return reader.poll_sse(cx, max_bytes),
            // Pieces of a sealed stream's text cut for this limit, like a live replay's.
            Inner::Fixed(replay) => return Poll::Ready(encode_batch(&mut || replay.pop(max_bytes), max_bytes)),
            Inner::FixedUi(bytes, _) => {
                return Poll::Ready(bytes.take().map(|bytes| SseBatch { bytes, frames: 1, terminal: true }))
            }
            Inner::Ui(ui) => {
                let (frames, follow) = &mut **ui;
                return follow.poll_sse(cx, max_bytes, &mut |cx| frames.poll_frame(cx));
            }
            Inner::Relay(_) => {}
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
    pub fn deliver_to(&mut self, sink: Arc<dyn SseSink>, max_bytes: usize) -> bool {
        let Inner::Local(reader) = &mut self.inner else { return false };
        reader.deliver_to(sink, max_bytes)
    }

    /// Whether this subscription is served by a relay (the stream is hosted elsewhere).
    pub fn is_relayed(&self) -> bool {
        matches!(self.inner, Inner::Relay(_))
    }
}

impl Stream for Subscription {
    type Item = Arc<MessageFrame>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Arc<MessageFrame>>> {
        self.get_mut().poll_frame(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // A hosted reader detaches itself when it drops (`hosted/join.rs`).
        if let Inner::Relay(queue) = &self.inner {
            queue.close();
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.inner {
            Inner::Fixed(_) => "fixed",
            Inner::Local(_) => "local",
            Inner::Relay(_) => "relay",
            Inner::FixedUi(..) => "fixed-ui",
            Inner::Ui(_) => "ui",
        };
        f.debug_struct("Subscription").field("kind", &kind).finish()
    }
}
