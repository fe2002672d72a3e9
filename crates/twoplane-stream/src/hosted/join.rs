//! Joining one hosted stream, and the cursor a live joiner reads it with.
//!
//! Owns: the atomic join ([`LiveStream::join`]) and [`Reader`], a subscriber's cursor on its
//! shard with what it took but has not handed out yet. The join returns a value ([`Join`]), not
//! a subscription: the plane wraps it into one, so the stream knows nothing of the public
//! handles above it.
//!
//! Guarantees:
//! - A join is one snapshot under the stream's lock: `open` (with the part table when the
//!   message had structure before the join offset: docs/contract.md §8), the text from the join
//!   offset (for a message, one span per run of a part's body and its events between them, in
//!   coordinate order, the run across the join offset cut at it),
//!   `durable` when the store is past the join offset and `end` when sealed, then every later
//!   frame, with nothing missed or doubled in between (contract S). The text is one coalesced
//!   `chunk` when it fits the reader's batch limit, and otherwise contiguous `chunk` pieces of
//!   at most that size, cut from blocks every joiner shares (`replay.rs`): the snapshot takes
//!   reference counts, never a copy of the text. A join below the text still held is one bare
//!   `stale`; a join of an ended stream is its replay and nothing after.
//! - A reader takes every frame available (up to [`LOCAL_BATCH`]) under one lock of its shard
//!   and parks in the same step; until that shard's change counter moves it can tell it has
//!   nothing new, and wait again, without that lock. So a push costs each waiting reader one
//!   wake-up and one lock, however many frames it then takes.
//! - Its SSE batches are the bytes its shard's log encoded once for every reader
//!   (`fanout/encoding.rs`), byte for byte what encoding each frame would give.
//! - Dropping a reader detaches it from its shard at once (and wakes its writer task when it was
//!   that writer's last handed-over subscriber, so the writer can end).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use twoplane_core::message::{Item, Message, MessageFrame};
use twoplane_core::ui::{UiEvents, UiOutcome};
use twoplane_core::Text;

use super::shards::SubKey;
use super::state::State;
use super::stream::{Effects, LiveStream};
use super::writers::Writers;
use crate::fanout::Drained;
use crate::replay::Replay;
use crate::sse::{encode_batch, SseBatch, SseSink};
use crate::ui_log::UiLog;

/// At most this many frames of a hosted stream are taken per lock for `next`/`try_next`.
pub(crate) const LOCAL_BATCH: usize = 64;

/// What a join gives: frames known now and nothing after, or a live reader.
pub(crate) enum Join {
    /// A bare `stale` (the offset is no longer held), or the whole replay of an ended stream.
    Fixed(Replay),
    Live(Reader),
}

impl LiveStream {
    /// The atomic join from `from` (see the module guarantees).
    pub fn join(self: &Arc<Self>, from: u64) -> Join {
        let mut fx = Effects::default();
        let mut st = self.lock();
        // What is held for the display-rate write goes out first: the snapshot below is the
        // stream as produced, and this reader reads the log from its head on.
        self.flush_held(&mut st, &mut fx);
        let seq = st.text.seq();
        let durable = st.durable.seq();
        let at = from.min(seq);
        if at < st.text.floor() {
            let stale = Arc::new(MessageFrame::Stale { floor_seq: st.text.floor(), durable_seq: durable });
            metrics::counter!("twoplane_stale_endings_total", "cause" => "below_floor").increment(1);
            drop(st);
            self.apply(fx);
            return Join::Fixed(vec![stale].into());
        }
        let ended = st.life.is_ended();
        let mut replay = Replay::default();
        let parts = st.shape.as_ref().and_then(|shape| shape.part_table_at(at));
        replay.push_frame(Arc::new(MessageFrame::Open {
            stream_id: self.id_text.clone(),
            from: at,
            seq,
            durable_seq: durable,
            ended,
            parts,
        }));
        // The text as shared blocks: reference counts under the lock, the units copied out a
        // piece at a time as this subscriber drains (`replay.rs`); a message's events are the
        // very frames that were fanned out.
        match &st.shape {
            None => replay.push_text(st.text.span(at)),
            Some(shape) => {
                for item in shape.cut(at, seq) {
                    match item {
                        Item::Run { from, seq, part, at: body } => {
                            replay.push_text(st.text.span_range(from, seq).of_part(part, body))
                        }
                        Item::Event(frame) => replay.push_frame(frame),
                    }
                }
            }
        }
        if durable > at {
            replay.push_frame(Arc::new(MessageFrame::Durable { seq: durable }));
        }
        if ended {
            if let Some(end) = st.life.end_frame() {
                replay.push_frame(end.clone());
            }
            drop(st);
            self.apply(fx);
            return Join::Fixed(replay);
        }
        let (key, changes) = self.shards.attach(&mut st.shards, self.cfg.max_queued_frames, replay);
        drop(st);
        self.apply(fx);
        Join::Live(self.reader(key, changes))
    }

    /// The atomic join of a UI reader (`ui_log.rs`) that holds the message at `from`: with
    /// `fresh`, `start` and the message there, then what takes it to the message now (without,
    /// only the latter: the continuation of a response under way), then the log's UI events,
    /// encoded once for every UI reader by the stream's [`UiLog`] (made here, from the stream's
    /// own message, when the stream has none in step with its log). `None` when the stream no
    /// longer holds its whole text (a callback plane's trimmed stream), so the message cannot be
    /// rebuilt here.
    pub fn join_ui(self: &Arc<Self>, from: u64, fresh: bool) -> Option<JoinUi> {
        let mut fx = Effects::default();
        let mut st = self.lock();
        self.flush_held(&mut st, &mut fx);
        let seq = st.text.seq();
        if st.text.floor() > 0 {
            drop(st);
            self.apply(fx);
            return None;
        }
        let now = message_at(&st, seq);
        let held = message_at(&st, from.min(seq));
        let mut out = String::new();
        let mut events = UiEvents::join(&mut out, &self.id_text, held, Some(&now), fresh);
        if st.life.is_ended() {
            let ended = st.life.end_frame().is_some_and(|end| events.frame(&mut out, end));
            drop(st);
            self.apply(fx);
            return Some(JoinUi::Fixed(Bytes::from(out), UiOutcome { at: events.at(), ended, started: true }));
        }
        if st.shards.ui.as_ref().is_none_or(|log| log.message().len() != seq) {
            st.shards.ui = Some(UiLog::new(&self.id_text, now));
        }
        let at = events.at();
        let (key, changes) = self.shards.attach_ui(&mut st.shards, self.cfg.max_queued_frames, Bytes::from(out), at);
        drop(st);
        self.apply(fx);
        Some(JoinUi::Live(self.reader(key, changes)))
    }

    fn reader(self: &Arc<Self>, key: SubKey, changes: Arc<AtomicU64>) -> Reader {
        Reader {
            stream: self.clone(),
            key,
            changes,
            caught_up_at: None,
            armed: None,
            taken: VecDeque::new(),
            done: false,
        }
    }
}

/// The stream's message as it stood at `d` (its whole text is held: the caller checked).
fn message_at(st: &State, d: u64) -> Message {
    let units = |f: u64, t: u64| Text::from_slice(&st.text.range(f, t));
    match &st.shape {
        None => Message::from_text(units(0, d)),
        Some(shape) => shape.message_at(d, &mut |f, t| units(f, t)),
    }
}

/// What a UI join gives: its whole answer (the stream ended), or a live reader.
pub(crate) enum JoinUi {
    Fixed(Bytes, UiOutcome),
    Live(Reader),
}

/// A cursor on a hosted stream's shard, with what it took but has not handed out yet.
pub(crate) struct Reader {
    stream: Arc<LiveStream>,
    key: SubKey,
    /// Its shard's change counter (see `fanout/wake.rs`).
    changes: Arc<AtomicU64>,
    /// The counter when this cursor last took everything available.
    caught_up_at: Option<u64>,
    /// The waker the slot holds, while it is parked there.
    armed: Option<Waker>,
    /// Frames taken under the lock, not yet handed out. Empty (no allocation) while idle.
    taken: VecDeque<Arc<MessageFrame>>,
    done: bool,
}

impl Reader {
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
    fn refill(&mut self, park: Option<&Waker>) -> Option<Arc<MessageFrame>> {
        let mut first = None;
        let taken = &mut self.taken;
        let mut out = |f| match first {
            None => first = Some(f),
            Some(_) => taken.push_back(f),
        };
        let d = self.stream.shards.drain(self.key, LOCAL_BATCH, &mut out, park);
        self.note(d, park);
        first
    }

    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Arc<MessageFrame>>> {
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

    pub fn try_next(&mut self) -> Option<Arc<MessageFrame>> {
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
    fn pop(&mut self) -> Option<Arc<MessageFrame>> {
        let f = self.taken.pop_front()?;
        if self.taken.is_empty() {
            self.taken = VecDeque::new();
        }
        Some(f)
    }

    pub fn poll_sse(&mut self, cx: &mut Context<'_>, max_bytes: usize) -> Poll<Option<SseBatch>> {
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
        let got = self.stream.shards.drain_sse(self.key, max_bytes, Some(cx.waker()));
        self.note(got.state, Some(cx.waker()));
        match got.bytes {
            Some(bytes) => Poll::Ready(Some(SseBatch { bytes, frames: got.frames, terminal: got.state.done })),
            None if self.done => Poll::Ready(None),
            None => Poll::Pending,
        }
    }

    /// Where this reader got to, when it reads UI events.
    pub fn ui_outcome(&self) -> Option<UiOutcome> {
        self.stream.shards.ui_outcome(self.key)
    }

    /// Hand this reader's events to `sink` (see `Subscription::deliver_to`): only when it owes
    /// nothing right now; `false` and nothing changes otherwise.
    pub fn deliver_to(&mut self, sink: Arc<dyn SseSink>, max_bytes: usize) -> bool {
        if self.done || !self.taken.is_empty() {
            return false;
        }
        if !Writers::attach_sink(&self.stream, self.key, sink, max_bytes) {
            return false;
        }
        // The slot no longer holds this cursor's waker, and the counter says nothing about what
        // the writer took: the next poll after `resume` takes the lock.
        self.armed = None;
        self.caught_up_at = None;
        true
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(writer) = self.stream.shards.detach(self.key) {
            self.stream.writers.wake(writer);
        }
    }
}
