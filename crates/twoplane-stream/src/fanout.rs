//! One shard of a stream's fan-out: a frame log and its subscribers' cursors. A stream spreads
//! its subscribers over a few shards (`hosted/shards.rs`), each under its own lock, and
//! publishes every frame to each shard in use; everything below holds within a shard, and
//! across shards each subscriber still sees the same frames in the same order.
//!
//! It is plain storage: no tokio, no stream, no subscription. The hosted stream drives it under
//! the shard's lock and acts on what it returns ([`Wakes`], [`Delivery`], [`Drained`]) after.
//!
//! Each produced frame is stored once in a log shared by every subscriber, as an `Arc<MessageFrame>`
//! and, once any subscriber wants it as server-sent events, as its encoded SSE bytes
//! (docs/contract.md §5: `id:` then `data:`, from the core's encoder, so the bytes are exactly
//! what encoding the frame per subscriber would give). A subscriber is a small slot holding a
//! cursor into that log, its own join replay (a few frames and a span of the stream's shared
//! text blocks, `replay.rs`), and a waker; it holds no copy of any log frame, nor of the text:
//! a replay's pieces are copied out one at a time as it drains, each of at most the drain's
//! batch limit (a frame drain takes at most one piece).
//!
//! Guarantees:
//! - Encoded once: a log frame is encoded when it enters the log if an SSE reader is attached to
//!   the stream (once for all its shards, by the stream; otherwise the first SSE reader of a
//!   shard to reach it encodes it and that shard's log keeps the result), and every SSE reader's
//!   write reuses those bytes: one owed frame is handed over as the shared `Bytes` itself,
//!   several are concatenated into the one buffer of that reader's next write.
//! - One wake-up per push, only for the waiting: a publish wakes exactly the subscribers parked
//!   on the log (each at most once) and bumps the change counter (`changes`); a woken subscriber
//!   takes everything available up to its batch limit under one lock, so a burst of N frames
//!   costs a subscriber one wake-up, not N. A subscriber that has caught up and is parked can
//!   tell from the counter alone, without the lock, that nothing changed.
//! - Bounded: a subscriber whose queue (its replay, counted as at most three entries, plus the
//!   log frames behind its cursor) has reached the cap when a new frame arrives is dropped with one `stale` frame, its queue is
//!   released at once, and the log never holds more than the cap (plus the replay allowance)
//!   frames behind the slowest live subscriber. Read frames do not linger: every
//!   [`TRIM_EVERY`] frames the log releases everything below the slowest live subscriber. The
//!   producer never waits for a reader.
//! - Ordered and gap-free: a subscriber sees its replay, then every log frame from the moment it
//!   attached, in order, then nothing after its terminal frame.
//! - Terminal frames (`end`, a fenced producer's `stale`) bypass the cap: they are the last thing
//!   a subscriber gets.
//! - Direct delivery (see `hosted/writers.rs`): a slot handed to a sink is never woken; a
//!   change marks it due with its writer (one of the stream's writer tasks, fixed per slot: `key % writers`,
//!   each serving its share of every shard) and names that writer to be woken instead, once
//!   per change however many of its slots became due ([`Wakes::writers`]); the writer takes due
//!   slots' owed events a group at a time ([`FanOut::take_due`]). A slot is handed over only
//!   when it owes nothing, and is delivered and taken back by its one writer alone, so its
//!   events are written in order by one writer at a time.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Waker;

use bytes::Bytes;
use twoplane_core::message::MessageFrame;

use crate::replay::{Replay, FRAME_PIECE_BYTES};
use crate::sse::{encode, SseEvents, SseSink};
use crate::ui_log::UiOutcome;

/// A replay counts as at most this many entries against the queue bound: a single text's replay
/// is three (open, chunk, durable), and a message's, one per run and event, is bounded by what
/// the message holds (it is owed once, not grown by the producer), so it is counted as a
/// single text's is.
const REPLAY_ALLOWANCE: usize = 3;

/// Every this many frames the log releases what every subscriber has read. Without it the log
/// kept every frame until it reached the queue bound (4,096 by default): a stream whose readers
/// all keep up held thousands of frames, and their encodings, for nothing.
const TRIM_EVERY: u64 = 64;

/// A direct slot owing more frames than this when its writer gets to it is handed back to its
/// owner instead of delivered (see `take_due`).
const DIRECT_MAX_OWED: u64 = 32;

/// A log frame and, once someone needed them, its SSE bytes; its UI events when the stream had
/// UI readers as it entered (`ui_log.rs`: encoded by the stream, which holds the message).
struct Entry {
    frame: Arc<MessageFrame>,
    sse: Option<Bytes>,
    ui: Option<Bytes>,
}

/// A UI reader's place: its replay's events until taken, and where it got to.
struct UiCursor {
    prefix: Option<Bytes>,
    outcome: UiOutcome,
}

struct Slot {
    /// Absolute index of the next log frame to deliver.
    cursor: u64,
    /// The join replay, delivered before the log (its text cut into pieces as it is taken).
    replay: Replay,
    /// A terminal of this subscriber's own (the overflow `stale`).
    terminal: Option<Arc<MessageFrame>>,
    /// Reads no more log frames (saw a terminal, or overflowed).
    finished: bool,
    waker: Option<Waker>,
    /// Its key is in `parked` (so it is listed once).
    parked: bool,
    /// Reads SSE bytes (counted in `FanOut::sse_readers`).
    sse: bool,
    /// Delivered by its writer task to this sink, not woken (counted in its `Writer::sinks`).
    sink: Option<Arc<dyn SseSink>>,
    /// The byte limit of one direct delivery.
    direct_max: usize,
    /// Its key is in its writer's `due` (so it is listed once).
    due: bool,
    /// Reads UI events, not frames (counted in `FanOut::ui_readers`).
    ui: Option<UiCursor>,
}

/// One direct delivery taken by [`FanOut::take_due`]: the slot (in the fan-out's shard), its
/// sink, and its events (`None` when the slot ended without owing any).
pub(crate) struct Delivery {
    pub shard: usize,
    pub key: usize,
    pub sink: Arc<dyn SseSink>,
    pub batch: Option<SseEvents>,
}

/// What [`FanOut::take_due`] found for a writer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// Deliveries were taken, or more are due than the group held: write them, then ask again.
    Work,
    /// Nothing is due here; a change that makes one of its slots due names the writer.
    Idle,
    /// Nothing is due and none of this writer's slots here has a sink: the writer may stop, if
    /// every shard says so.
    Empty,
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

/// One SSE write's worth of a subscriber's frames.
pub(crate) struct SseDrained {
    /// The events, in order; `None` when nothing was available.
    pub bytes: Option<Bytes>,
    pub frames: u64,
    pub state: Drained,
}

pub(crate) struct FanOut {
    /// Which of its stream's shards this is (named in each [`Delivery`]).
    shard: usize,
    log: VecDeque<Entry>,
    /// Absolute index of `log[0]`.
    base: u64,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    /// Slots still reading the log.
    active: usize,
    /// Attached slots that read SSE bytes: while there is one, frames are encoded as they enter.
    sse_readers: usize,
    /// Attached slots that read UI events (the stream encodes them while there is one).
    ui_readers: usize,
    /// Keys of slots waiting for a frame.
    parked: Vec<usize>,
    cap: usize,
    /// Bumped (under the shard's lock) by every change a subscriber could be waiting for.
    changes: Arc<AtomicU64>,
    /// Reused for encoding, so each encoded frame is one exact-size allocation.
    scratch: String,
    /// The writer tasks' state, one per runtime worker (created by the first hand-over); slot
    /// `key` belongs to writer `key % writers.len()`.
    writers: Vec<Writer>,
}

/// One writer task's share of the direct slots (the task and its waker belong to the stream).
#[derive(Default)]
struct Writer {
    /// Keys of its slots with something to deliver, oldest first.
    due: VecDeque<usize>,
    /// Its slots with a sink.
    sinks: usize,
}

/// Whom a change wakes, collected under the lock and acted on after it: subscribers' tasks, and
/// the stream's writer tasks (bit `i` for writer `i`, so each is woken once however many shards
/// and slots name it).
#[derive(Default)]
pub(crate) struct Wakes {
    pub tasks: Vec<Waker>,
    pub writers: u64,
}

/// A stream has at most this many writer tasks (one bit each in [`Wakes::writers`]).
pub(crate) const MAX_WRITERS: usize = 64;

impl FanOut {
    pub fn new(cap: usize, shard: usize) -> Self {
        FanOut {
            shard,
            log: VecDeque::new(),
            base: 0,
            slots: Vec::new(),
            free: Vec::new(),
            active: 0,
            sse_readers: 0,
            ui_readers: 0,
            parked: Vec::new(),
            cap,
            changes: Arc::new(AtomicU64::new(0)),
            scratch: String::new(),
            writers: Vec::new(),
        }
    }

    fn head(&self) -> u64 {
        self.base + self.log.len() as u64
    }

    /// The change counter, for a subscription to read without the lock.
    pub fn changes(&self) -> Arc<AtomicU64> {
        self.changes.clone()
    }

    fn bump(&self) {
        self.changes.fetch_add(1, Ordering::Release);
    }

    /// Its subscribers still reading the log, those of them that read SSE bytes, and those that
    /// read UI events (a stream keeps the totals over its shards).
    pub fn readers(&self) -> (usize, usize, usize) {
        (self.active, self.sse_readers, self.ui_readers)
    }

    /// Register a live subscriber after its replay; it reads every frame published from now on.
    pub fn attach(&mut self, replay: impl Into<Replay>) -> usize {
        self.attach_slot(replay.into(), None)
    }

    /// Register a live UI reader (`ui_log.rs`) after its replay's events, `prefix`, which bring it
    /// to the message's length `at`; it reads the UI events of every frame published from now on.
    pub fn attach_ui(&mut self, prefix: Bytes, at: u64) -> usize {
        self.ui_readers += 1;
        let prefix = (!prefix.is_empty()).then_some(prefix);
        self.attach_slot(
            Replay::default(),
            Some(UiCursor { prefix, outcome: UiOutcome { at, ended: false, started: true } }),
        )
    }

    fn attach_slot(&mut self, replay: Replay, ui: Option<UiCursor>) -> usize {
        let slot = Slot {
            cursor: self.head(),
            replay,
            terminal: None,
            finished: false,
            waker: None,
            parked: false,
            sse: false,
            sink: None,
            direct_max: 0,
            due: false,
            ui,
        };
        self.active += 1;
        match self.free.pop() {
            Some(key) => {
                self.slots[key] = Some(slot);
                key
            }
            None => {
                self.slots.push(Some(slot));
                self.slots.len() - 1
            }
        }
    }

    /// Remove `key`. Returns its writer when that was the writer's last slot with a sink here:
    /// woken, the writer finds out whether it has any left and ends if not (idle, it would
    /// otherwise wait for ever, its waker keeping the stream alive).
    #[must_use]
    pub fn detach(&mut self, key: usize) -> Option<usize> {
        let mut wake = None;
        let entry = self.slots.get_mut(key)?;
        if let Some(slot) = entry.take() {
            if !slot.finished {
                self.active -= 1;
            }
            if slot.sse {
                self.sse_readers -= 1;
            }
            if slot.ui.is_some() {
                self.ui_readers -= 1;
            }
            if slot.sink.is_some() {
                // Its key may stay in `due`; `take_due` skips a slot without a sink.
                let index = writer_index(key, &self.writers);
                let writer = &mut self.writers[index];
                writer.sinks -= 1;
                if writer.sinks == 0 {
                    wake = Some(index);
                }
            }
            self.free.push(key);
        }
        if self.active == 0 {
            // Nobody reads the log any more: release it now rather than at the next overflow scan.
            self.base = self.head();
            self.log.clear();
        }
        wake
    }

    /// [`FanOut::publish_encoded`], encoding here when this fan-out has an SSE reader.
    #[cfg(test)]
    pub fn publish(&mut self, frame: Arc<MessageFrame>, stale: impl Fn() -> MessageFrame, wake: &mut Wakes) {
        self.publish_encoded(frame, None, None, stale, wake)
    }

    /// Append a frame for every live subscriber, with its SSE bytes when the caller has them
    /// (one encoding shared by every shard of a stream; without them, the frame is encoded here
    /// if this fan-out has an SSE reader). Subscribers at the cap are dropped with the frame
    /// `stale()` builds. Whom to wake (after the caller releases its lock) is added to `wake`.
    pub fn publish_encoded(
        &mut self,
        frame: Arc<MessageFrame>,
        sse: Option<Bytes>,
        ui: Option<Bytes>,
        stale: impl Fn() -> MessageFrame,
        wake: &mut Wakes,
    ) {
        if self.active == 0 {
            return;
        }
        if self.log.len() + REPLAY_ALLOWANCE >= self.cap {
            self.reclaim(&stale, wake);
            if self.active == 0 {
                self.bump();
                self.wake_writers(wake);
                return;
            }
        }
        self.push_entry(frame, sse, ui);
        self.wake_parked(wake);
    }

    /// [`FanOut::finish_encoded`], encoding here when this fan-out has an SSE reader.
    #[cfg(test)]
    pub fn finish(&mut self, end: Arc<MessageFrame>, wake: &mut Wakes) {
        self.finish_encoded(end, None, None, wake)
    }

    /// Append the terminal frame, bypassing the cap (`sse` as for `publish_encoded`).
    pub fn finish_encoded(&mut self, end: Arc<MessageFrame>, sse: Option<Bytes>, ui: Option<Bytes>, wake: &mut Wakes) {
        if self.active == 0 {
            return;
        }
        self.push_entry(end, sse, ui);
        self.wake_parked(wake);
    }

    fn push_entry(&mut self, frame: Arc<MessageFrame>, sse: Option<Bytes>, ui: Option<Bytes>) {
        let sse = sse.or_else(|| (self.sse_readers > 0).then(|| encode(&mut self.scratch, &frame)));
        self.log.push_back(Entry { frame, sse, ui });
        if self.head().is_multiple_of(TRIM_EVERY) {
            self.trim();
        }
    }

    /// Release the log below the slowest live subscriber.
    fn trim(&mut self) {
        let slowest = self.slots.iter().flatten().filter(|slot| !slot.finished).map(|slot| slot.cursor).min();
        self.release_below(slowest.unwrap_or(self.head()));
    }

    fn release_below(&mut self, cursor: u64) {
        let n = (cursor - self.base) as usize;
        self.log.drain(..n);
        self.base = cursor;
    }

    fn wake_parked(&mut self, wake: &mut Wakes) {
        self.bump();
        // One allocation for the whole list, not a doubling series per push.
        wake.tasks.reserve(self.parked.len());
        for key in self.parked.drain(..) {
            if let Some(Some(slot)) = self.slots.get_mut(key) {
                slot.parked = false;
                notify(slot, key, &mut self.writers, wake);
            }
        }
        self.wake_writers(wake);
    }

    /// Name each writer task with due slots, however many became due.
    fn wake_writers(&mut self, wake: &mut Wakes) {
        for (index, writer) in self.writers.iter().enumerate() {
            if !writer.due.is_empty() {
                wake.writers |= 1 << index;
            }
        }
    }

    /// Drop every subscriber at the cap, then release the log below the slowest survivor.
    fn reclaim(&mut self, stale: &impl Fn() -> MessageFrame, wake: &mut Wakes) {
        let head = self.head();
        let mut min = head;
        let mut stale_frame: Option<Arc<MessageFrame>> = None;
        for (key, slot) in self.slots.iter_mut().enumerate() {
            let Some(slot) = slot else { continue };
            if slot.finished {
                continue;
            }
            let queued = slot.replay.len().min(REPLAY_ALLOWANCE) as u64 + (head - slot.cursor);
            if queued >= self.cap as u64 {
                slot.replay = Replay::default();
                slot.terminal = Some(stale_frame.get_or_insert_with(|| Arc::new(stale())).clone());
                metrics::counter!("twoplane_stale_endings_total", "cause" => "overflow").increment(1);
                slot.finished = true;
                self.active -= 1;
                // Its key may stay in `parked`; `wake_parked` skips a slot without a waker.
                slot.parked = false;
                notify(slot, key, &mut self.writers, wake);
            } else {
                min = min.min(slot.cursor);
            }
        }
        self.release_below(min);
    }

    /// Register `waker` for the slot's next change (listed in `parked` once).
    fn park(&mut self, key: usize, waker: &Waker) {
        let Some(Some(slot)) = self.slots.get_mut(key) else { return };
        match &slot.waker {
            Some(w) if w.will_wake(waker) => {}
            _ => slot.waker = Some(waker.clone()),
        }
        list_parked(slot, key, &mut self.parked);
    }

    /// The state after a drain of `key` that did (`more == false`) or did not take everything.
    fn settle(&mut self, key: usize, more: bool, park: Option<&Waker>) -> Drained {
        let done = self.is_done(key);
        if let (false, Some(waker)) = (done, park) {
            // Parked even when frames were just taken: if nothing changes before the caller has
            // used them, it can wait again without taking the lock.
            self.park(key, waker);
        }
        let parked = matches!(self.slots.get(key), Some(Some(slot)) if slot.parked);
        let at = self.changes.load(Ordering::Relaxed);
        Drained { done, parked, caught_up_at: (!more && !done).then_some(at) }
    }

    /// Whether `key` will never yield another frame.
    fn is_done(&self, key: usize) -> bool {
        match self.slots.get(key).and_then(|s| s.as_ref()) {
            None => true,
            Some(slot) => slot.finished && slot.replay.is_empty() && slot.terminal.is_none(),
        }
    }

    /// Hand up to `max` frames of `key` (replay, own terminal, log, in that order) to `out`,
    /// then park on `park` unless the slot is done. At most one piece of the replay's text is
    /// handed out per call (of at most [`FRAME_PIECE_BYTES`]), so a caller that keeps what it
    /// took holds one piece, not the text.
    pub fn drain(
        &mut self,
        key: usize,
        max: usize,
        out: &mut dyn FnMut(Arc<MessageFrame>),
        park: Option<&Waker>,
    ) -> Drained {
        let head = self.head();
        let base = self.base;
        let mut taken = 0;
        let mut more = false;
        if let Some(Some(slot)) = self.slots.get_mut(key) {
            let mut pieces = 0;
            while taken < max {
                if slot.replay.text_next() && pieces > 0 {
                    break;
                }
                pieces += usize::from(slot.replay.text_next());
                if let Some(f) = slot.replay.pop(FRAME_PIECE_BYTES) {
                    out(f);
                } else if let Some(t) = slot.terminal.take() {
                    out(t);
                } else if !slot.finished && slot.cursor < head {
                    let frame = self.log[(slot.cursor - base) as usize].frame.clone();
                    slot.cursor += 1;
                    if frame.is_terminal() {
                        slot.finished = true;
                        self.active -= 1;
                    }
                    out(frame);
                } else {
                    break;
                }
                taken += 1;
            }
            more = (taken == max || slot.replay.text_next()) && has_more(slot, head);
            slot.replay.release_if_empty();
        }
        self.settle(key, more, park)
    }

    /// Take `key`'s owed frames as SSE bytes, up to about `max_bytes` (a batch stops growing
    /// once it reaches the limit, so it can exceed it by one event; the replay's text is cut
    /// into pieces of at most `max_bytes` each), then park on `park` unless the slot is done. Marks the slot as an SSE reader, so later frames are encoded as they
    /// enter the log.
    pub fn drain_sse(&mut self, key: usize, max_bytes: usize, park: Option<&Waker>) -> SseDrained {
        let (batch, state) = self.drain_batch(key, max_bytes, park, Batch::default());
        let frames = batch.frames;
        SseDrained { bytes: batch.finish(), frames, state }
    }

    /// [`FanOut::drain_sse`]'s work, into `batch` (joined, or kept apart for direct delivery).
    fn drain_batch(
        &mut self,
        key: usize,
        max_bytes: usize,
        park: Option<&Waker>,
        mut batch: Batch,
    ) -> (Batch, Drained) {
        let head = self.head();
        let base = self.base;
        let mut more = false;
        if let Some(Some(slot)) = self.slots.get_mut(key) {
            if !slot.sse && slot.ui.is_none() {
                slot.sse = true;
                self.sse_readers += 1;
            }
            while batch.len() < max_bytes {
                if let Some(ui) = slot.ui.as_mut() {
                    // A UI reader: its replay's events, then the log's UI events; its own `stale`
                    // (an overflow) is no event, and its outcome says where it got to.
                    if let Some(prefix) = ui.prefix.take() {
                        batch.push_owned(prefix);
                    } else if slot.terminal.take().is_some() {
                        // Nothing to write, and nothing after it.
                    } else if !slot.finished && slot.cursor < head {
                        let entry = &self.log[(slot.cursor - base) as usize];
                        slot.cursor += 1;
                        // A frame no UI reader sees (`open`, `durable`) writes nothing.
                        if let Some(events) = entry.ui.as_ref().filter(|events| !events.is_empty()) {
                            batch.push_shared(events);
                            ui.outcome.at = entry.frame.span().map_or(ui.outcome.at, |(_, seq)| seq);
                        }
                        if entry.frame.is_terminal() {
                            ui.outcome.ended = matches!(&*entry.frame, MessageFrame::End { .. });
                            slot.finished = true;
                            self.active -= 1;
                        }
                    } else {
                        break;
                    }
                    continue;
                }
                if let Some(f) = slot.replay.pop(max_bytes) {
                    batch.push_owned(encode(&mut self.scratch, &f));
                } else if let Some(t) = slot.terminal.take() {
                    batch.push_owned(encode(&mut self.scratch, &t));
                } else if !slot.finished && slot.cursor < head {
                    let entry = &mut self.log[(slot.cursor - base) as usize];
                    let scratch = &mut self.scratch;
                    batch.push_shared(entry.sse.get_or_insert_with(|| encode(scratch, &entry.frame)));
                    slot.cursor += 1;
                    if entry.frame.is_terminal() {
                        slot.finished = true;
                        self.active -= 1;
                    }
                } else {
                    break;
                }
            }
            more = batch.len() >= max_bytes && has_more(slot, head);
            slot.replay.release_if_empty();
        }
        let state = self.settle(key, more, park);
        (batch, state)
    }

    /// Whether `key` is delivered by the writer task (its owner must not drain it meanwhile).
    pub fn has_sink(&self, key: usize) -> bool {
        matches!(self.slots.get(key), Some(Some(slot)) if slot.sink.is_some())
    }

    /// Hand `key`'s deliveries to `sink`, at most `max_bytes` per delivery. Refused (`None`,
    /// nothing changes) unless the slot is live and owes nothing now, so no event handed to the
    /// sink can overtake one its owner took and has yet to write. `writers` is how many writer
    /// tasks the stream uses (the same for every shard). Returns the slot's writer, which the
    /// caller makes sure is running.
    pub fn attach_sink(
        &mut self,
        key: usize,
        sink: Arc<dyn SseSink>,
        max_bytes: usize,
        writers: usize,
    ) -> Option<usize> {
        let head = self.head();
        let Some(Some(slot)) = self.slots.get_mut(key) else { return None };
        if slot.sink.is_some() || slot.finished || has_more(slot, head) {
            return None;
        }
        if !slot.sse && slot.ui.is_none() {
            slot.sse = true;
            self.sse_readers += 1;
        }
        slot.sink = Some(sink);
        slot.direct_max = max_bytes.max(1);
        // Not woken any more: the writer task delivers instead.
        slot.waker = None;
        list_parked(slot, key, &mut self.parked);
        if self.writers.is_empty() {
            self.writers.resize_with(writers.clamp(1, MAX_WRITERS), Writer::default);
        }
        let index = writer_index(key, &self.writers);
        self.writers[index].sinks += 1;
        Some(index)
    }

    /// Whether writer `index` has a slot with a sink here.
    pub fn has_sinks(&self, index: usize) -> bool {
        self.writers.get(index).is_some_and(|w| w.sinks > 0)
    }

    /// Take `key` back from direct delivery (its writer task does this, after a sink kept bytes
    /// or after the terminal). The slot is left unparked: its owner's next drain parks it.
    /// Only `sink` itself is taken back: the key may already belong to a later subscriber.
    pub fn detach_sink(&mut self, key: usize, sink: &Arc<dyn SseSink>) {
        let Some(Some(slot)) = self.slots.get_mut(key) else { return };
        let same = slot.sink.as_ref().is_some_and(|s| std::ptr::addr_eq(Arc::as_ptr(s), Arc::as_ptr(sink)));
        if same {
            slot.sink = None;
            slot.due = false;
            slot.parked = false;
            let index = writer_index(key, &self.writers);
            self.writers[index].sinks -= 1;
        }
    }

    /// For writer task `index`: take up to `group` of its due slots' owed events (one delivery
    /// each, up to the slot's byte limit), park the ones that caught up, and keep the others due
    /// (behind the rest). A group at a time keeps the lock short and the batches a writer holds
    /// few.
    pub fn take_due(&mut self, index: usize, group: usize, out: &mut Vec<Delivery>) -> Due {
        let (shard, before) = (self.shard, out.len());
        let Some(writer) = self.writers.get_mut(index) else { return Due::Empty };
        let mut take = writer.due.len().min(group);
        // Draining adds nothing to the log: one head for the whole group.
        let head = self.head();
        while take > 0 {
            take -= 1;
            let Some(key) = self.writers[index].due.pop_front() else { break };
            let (sink, max, owed) = match self.slots.get_mut(key) {
                Some(Some(slot)) if slot.due => match slot.sink.clone() {
                    Some(sink) => {
                        slot.due = false;
                        (sink, slot.direct_max, owed(slot, head))
                    }
                    None => continue,
                },
                _ => continue,
            };
            if owed > DIRECT_MAX_OWED {
                // A burst: handed back, for the subscriber's own task to write in large batches
                // beside the other subscribers' tasks, as it would without direct delivery.
                out.push(Delivery { shard, key, sink, batch: None });
                continue;
            }
            // The events stay the log's shared bytes: the sink writes them with one vectored
            // write, so nothing is copied under the lock.
            let (batch, state) = self.drain_batch(key, max, None, Batch::apart());
            let (done, caught_up) = (state.done, state.caught_up_at.is_some());
            if let Some(Some(slot)) = self.slots.get_mut(key) {
                if !done && caught_up {
                    list_parked(slot, key, &mut self.parked);
                } else if !done {
                    mark_due(slot, key, &mut self.writers);
                }
            }
            let batch = batch.finish_apart(done);
            if batch.is_some() || done {
                out.push(Delivery { shard, key, sink, batch });
            }
        }
        let writer = &self.writers[index];
        if out.len() > before || !writer.due.is_empty() {
            return Due::Work;
        }
        if writer.sinks == 0 {
            Due::Empty
        } else {
            Due::Idle
        }
    }

    /// Where UI reader `key` got to (`None`: not a UI reader, or gone).
    pub fn ui_outcome(&self, key: usize) -> Option<UiOutcome> {
        self.slots.get(key)?.as_ref()?.ui.as_ref().map(|ui| ui.outcome)
    }

    #[cfg(test)]
    pub fn log_len(&self) -> usize {
        self.log.len()
    }
}

/// Frames `slot` owes (replay, its own terminal, log frames behind the head).
fn owed(slot: &Slot, head: u64) -> u64 {
    let log = if slot.finished { 0 } else { head - slot.cursor };
    let prefix = slot.ui.as_ref().is_some_and(|ui| ui.prefix.is_some());
    slot.replay.len() as u64 + u64::from(slot.terminal.is_some()) + u64::from(prefix) + log
}

/// The writer that delivers slot `key`: the same split of keys in every shard, so a writer task
/// serves writer `i` of each.
fn writer_index(key: usize, writers: &[Writer]) -> usize {
    key % writers.len()
}

/// List a direct slot with its writer (once).
fn mark_due(slot: &mut Slot, key: usize, writers: &mut [Writer]) {
    if !slot.due {
        slot.due = true;
        writers[writer_index(key, writers)].due.push_back(key);
    }
}

/// A change reached a waiting slot: a direct one is marked due with its writer, any other's
/// waker goes to `wake`.
fn notify(slot: &mut Slot, key: usize, writers: &mut [Writer], wake: &mut Wakes) {
    if slot.sink.is_some() {
        mark_due(slot, key, writers);
    } else if let Some(w) = slot.waker.take() {
        wake.tasks.push(w);
    }
}

/// List `key` among the slots waiting for a change (once).
fn list_parked(slot: &mut Slot, key: usize, parked: &mut Vec<usize>) {
    if !slot.parked {
        slot.parked = true;
        parked.push(key);
    }
}

fn has_more(slot: &Slot, head: u64) -> bool {
    !slot.replay.is_empty()
        || slot.terminal.is_some()
        || slot.ui.as_ref().is_some_and(|ui| ui.prefix.is_some())
        || (!slot.finished && slot.cursor < head)
}

/// A write being assembled: one event is passed on as the shared bytes themselves; more are
/// copied into one buffer, or (for direct delivery) kept apart as the shared bytes.
#[derive(Default)]
struct Batch {
    single: Option<Bytes>,
    joined: Vec<u8>,
    apart: bool,
    rest: Vec<Bytes>,
    len: usize,
    frames: u64,
}

impl Batch {
    fn apart() -> Batch {
        Batch { apart: true, ..Batch::default() }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn push_shared(&mut self, event: &Bytes) {
        self.frames += 1;
        self.len += event.len();
        if self.frames == 1 {
            self.single = Some(event.clone());
            return;
        }
        if self.apart {
            self.rest.push(event.clone());
            return;
        }
        if let Some(first) = self.single.take() {
            self.joined.reserve(first.len() + 2 * event.len());
            self.joined.extend_from_slice(&first);
        }
        self.joined.extend_from_slice(event);
    }

    fn push_owned(&mut self, event: Bytes) {
        self.push_shared(&event);
    }

    fn finish(self) -> Option<Bytes> {
        match self.frames {
            0 => None,
            1 => self.single,
            _ => Some(Bytes::from(self.joined)),
        }
    }

    fn finish_apart(self, terminal: bool) -> Option<SseEvents> {
        let first = self.single?;
        Some(SseEvents::new(first, self.rest, self.len, terminal))
    }
}

#[cfg(test)]
mod tests {
    use twoplane_core::message::encode_message_event_into;

    use super::*;

    /// The `open` of stream "s" at offset 0, as a writer's first frame.
    fn open_s() -> Arc<MessageFrame> {
        Arc::new(MessageFrame::Open {
            stream_id: "s".into(),
            from: 0,
            seq: 0,
            durable_seq: 0,
            ended: false,
            parts: None,
        })
    }

    fn chunk(i: u64) -> Arc<MessageFrame> {
        Arc::new(MessageFrame::chunk(i, 0, i, "x".into()).unwrap())
    }

    fn stale() -> MessageFrame {
        MessageFrame::Stale { floor_seq: 0, durable_seq: 0 }
    }

    fn take(fan: &mut FanOut, key: usize) -> Option<Arc<MessageFrame>> {
        let mut out = None;
        fan.drain(key, 1, &mut |f| out = Some(f), None);
        out
    }

    /// Publish chunk `i` for each `i` of `range`, the reader `fast` taking each as it comes.
    fn publish_taken(fan: &mut FanOut, wake: &mut Wakes, range: std::ops::Range<u64>, fast: usize) {
        for i in range {
            fan.publish(chunk(i), stale, wake);
            assert_eq!(take(fan, fast).as_deref(), Some(&*chunk(i)));
        }
    }

    fn drain_all(
        fan: &mut FanOut,
        key: usize,
        max: usize,
        out: &mut Vec<Arc<MessageFrame>>,
        park: Option<&Waker>,
    ) -> Drained {
        fan.drain(key, max, &mut |f| out.push(f), park)
    }

    fn sse(frames: &[Arc<MessageFrame>]) -> Vec<u8> {
        let mut s = String::new();
        for f in frames {
            encode_message_event_into(&mut s, f);
        }
        s.into_bytes()
    }

    fn noop_waker() -> Waker {
        futures::task::noop_waker()
    }

    #[test]
    fn slow_reader_is_dropped_with_stale_and_the_log_stays_bounded() {
        let mut fan = FanOut::new(8, 0);
        let mut wake = Wakes::default();
        let slow = fan.attach(VecDeque::new());
        let fast = fan.attach(VecDeque::new());
        for i in 0..100 {
            publish_taken(&mut fan, &mut wake, i..i + 1, fast);
            assert!(fan.log_len() <= 8);
        }
        // The slow reader got as far as the cap allowed, then its own stale.
        let mut got = Vec::new();
        while let Some(f) = take(&mut fan, slow) {
            got.push(f);
        }
        assert_eq!(got.len(), 1);
        assert!(matches!(*got[0], MessageFrame::Stale { .. }));
        assert!(fan.is_done(slow));
        assert!(!fan.is_done(fast));
    }

    #[test]
    fn read_frames_are_released_without_waiting_for_the_cap() {
        let mut fan = FanOut::new(4096, 0);
        let mut wake = Wakes::default();
        let fast = fan.attach(VecDeque::new());
        let slow = fan.attach(VecDeque::new());
        publish_taken(&mut fan, &mut wake, 0..1000, fast);
        assert_eq!(fan.log_len(), 1000, "the slow reader has read nothing: everything is kept for it");
        for _ in 0..600 {
            take(&mut fan, slow);
        }
        // The next multiple of TRIM_EVERY (1,024 frames) releases what both have read.
        for i in 1000..1024 {
            fan.publish(chunk(i), stale, &mut wake);
            take(&mut fan, fast);
        }
        assert_eq!(fan.log_len(), 1024 - 600, "everything below the slow reader is released");
        // The slow reader still gets every frame after the trim, in order.
        for i in 600..1024 {
            assert_eq!(take(&mut fan, slow).as_deref(), Some(&*chunk(i)));
        }
        let _ = fan.detach(slow);
        for i in 1024..1200 {
            fan.publish(chunk(i), stale, &mut wake);
            take(&mut fan, fast);
        }
        assert!(fan.log_len() <= TRIM_EVERY as usize, "one reader that keeps up: kept {}", fan.log_len());
    }

    #[test]
    fn replay_comes_first_and_terminal_ends_it() {
        let mut fan = FanOut::new(16, 0);
        let mut wake = Wakes::default();
        let open = open_s();
        let key = fan.attach(VecDeque::from(vec![open.clone()]));
        fan.publish(chunk(0), stale, &mut wake);
        let end = Arc::new(MessageFrame::End { seq: 1, status: twoplane_core::StreamStatus::Complete, error: None });
        fan.finish(end.clone(), &mut wake);
        assert_eq!(take(&mut fan, key), Some(open));
        assert_eq!(take(&mut fan, key), Some(chunk(0)));
        assert_eq!(take(&mut fan, key), Some(end));
        assert_eq!(take(&mut fan, key), None);
        assert!(fan.is_done(key));
    }

    #[test]
    fn detach_of_the_last_reader_releases_the_log() {
        let mut fan = FanOut::new(16, 0);
        let mut wake = Wakes::default();
        let key = fan.attach(VecDeque::new());
        fan.publish(chunk(0), stale, &mut wake);
        assert!(fan.detach(key).is_none(), "no writer to wake");
        assert_eq!(fan.log_len(), 0);
        let again = fan.attach(VecDeque::new());
        assert_eq!(again, key, "slots are reused");
        assert_eq!(take(&mut fan, again), None);
    }

    #[test]
    fn a_burst_wakes_a_parked_reader_once_and_one_drain_takes_it_all() {
        let mut fan = FanOut::new(64, 0);
        let key = fan.attach(VecDeque::new());
        let mut out = Vec::new();
        let parked = drain_all(&mut fan, key, 64, &mut out, Some(&noop_waker()));
        assert!(out.is_empty() && parked.parked && !parked.done);
        let before = parked.caught_up_at.expect("nothing was left behind");
        let mut wake = Wakes::default();
        for i in 0..10 {
            fan.publish(chunk(i), stale, &mut wake);
        }
        assert_eq!(wake.tasks.len(), 1, "ten pushes, one wake-up");
        assert_ne!(fan.changes.load(Ordering::Relaxed), before, "the counter moved");
        let d = drain_all(&mut fan, key, 64, &mut out, Some(&noop_waker()));
        assert_eq!(out.len(), 10);
        assert!(d.parked, "parked again after taking everything");
        assert_eq!(d.caught_up_at, Some(fan.changes.load(Ordering::Relaxed)));
        // A batch limit below what is owed says so: the counter alone cannot be trusted then.
        for i in 10..15 {
            fan.publish(chunk(i), stale, &mut wake);
        }
        out.clear();
        let d = drain_all(&mut fan, key, 2, &mut out, None);
        assert_eq!(out.len(), 2);
        assert_eq!(d.caught_up_at, None);
    }

    #[test]
    fn sse_bytes_are_encoded_once_and_shared_and_a_span_is_one_write() {
        let mut fan = FanOut::new(64, 0);
        let open = open_s();
        let a = fan.attach(VecDeque::from(vec![open.clone()]));
        let b = fan.attach(VecDeque::new());
        let mut wake = Wakes::default();
        // Published before any SSE reader: encoded lazily by the first one, then kept.
        fan.publish(chunk(0), stale, &mut wake);
        let first = fan.drain_sse(a, 1 << 20, None);
        assert_eq!(first.frames, 2);
        assert_eq!(first.bytes.as_deref(), Some(&sse(&[open, chunk(0)])[..]));
        // `a` is an SSE reader now: later frames are encoded as they enter.
        fan.publish(chunk(1), stale, &mut wake);
        assert!(fan.log.back().unwrap().sse.is_some());
        let one = fan.drain_sse(a, 1 << 20, None);
        assert_eq!(one.frames, 1);
        let shared = fan.log.back().unwrap().sse.clone().unwrap();
        assert_eq!(one.bytes.as_ref().unwrap().as_ptr(), shared.as_ptr(), "one owed frame: the log's own bytes");
        // `b` owes both: one buffer holding both events, byte for byte.
        let span = fan.drain_sse(b, 1 << 20, None);
        assert_eq!(span.frames, 2);
        assert_eq!(span.bytes.as_deref(), Some(&sse(&[chunk(0), chunk(1)])[..]));
        // The byte limit splits a span, and says more is owed.
        for i in 2..6 {
            fan.publish(chunk(i), stale, &mut wake);
        }
        let part = fan.drain_sse(b, 1, None);
        assert_eq!(part.frames, 1);
        assert_eq!(part.state.caught_up_at, None);
        let rest = fan.drain_sse(b, 1 << 20, None);
        assert_eq!(rest.frames, 3);
        assert!(rest.state.caught_up_at.is_some());
    }

    #[test]
    fn an_sse_reader_gets_its_stale_terminal_and_is_done() {
        let mut fan = FanOut::new(8, 0);
        let mut wake = Wakes::default();
        let slow = fan.attach(VecDeque::new());
        let fast = fan.attach(VecDeque::new());
        fan.drain_sse(slow, 1 << 20, None);
        for i in 0..20 {
            fan.publish(chunk(i), stale, &mut wake);
            fan.drain_sse(fast, 1 << 20, None);
        }
        let got = fan.drain_sse(slow, 1 << 20, None);
        assert_eq!(got.bytes.as_deref(), Some(&sse(&[Arc::new(stale())])[..]));
        assert!(got.state.done && !got.state.parked);
        let _ = fan.detach(slow);
        assert_eq!(fan.sse_readers, 1, "the fast reader still reads SSE");
        let _ = fan.detach(fast);
        assert_eq!(fan.sse_readers, 0);
    }

    /// A sink that records what it was handed and answers as told.
    #[derive(Default)]
    struct Recorder {
        got: std::sync::Mutex<Vec<SseEvents>>,
        hold: std::sync::atomic::AtomicBool,
    }

    impl SseSink for Recorder {
        fn deliver(&self, batch: &SseEvents) -> crate::Delivered {
            self.got.lock().unwrap().push(batch.clone());
            if self.hold.load(Ordering::Relaxed) {
                crate::Delivered::Held
            } else {
                crate::Delivered::Written
            }
        }
        fn resume(&self) {}
    }

    fn sink() -> (Arc<Recorder>, Arc<dyn SseSink>) {
        let rec = Arc::new(Recorder::default());
        let dynamic: Arc<dyn SseSink> = rec.clone();
        (rec, dynamic)
    }

    fn take_all(fan: &mut FanOut) -> (Vec<Delivery>, Due) {
        take_from(fan, 0, usize::MAX)
    }

    fn take_from(fan: &mut FanOut, writer: usize, group: usize) -> (Vec<Delivery>, Due) {
        let mut out = Vec::new();
        let due = fan.take_due(writer, group, &mut out);
        (out, due)
    }

    #[test]
    fn a_direct_slot_is_handed_over_only_when_it_owes_nothing() {
        let mut fan = FanOut::new(64, 0);
        let open = open_s();
        let key = fan.attach(VecDeque::from(vec![open]));
        let (_, s) = sink();
        assert_eq!(fan.attach_sink(key, s.clone(), 1024, 1), None, "its replay is owed");
        fan.drain_sse(key, 1 << 20, None);
        let mut wake = Wakes::default();
        fan.publish(chunk(0), stale, &mut wake);
        assert_eq!(fan.attach_sink(key, s.clone(), 1024, 1), None, "a log frame is owed");
        fan.drain_sse(key, 1 << 20, None);
        assert_eq!(fan.attach_sink(key, s.clone(), 1024, 1), Some(0), "caught up: handed to its writer");
        assert_eq!(fan.attach_sink(key, s.clone(), 1024, 1), None, "already handed over");
        let other = fan.attach(VecDeque::new());
        assert_eq!(fan.attach_sink(other, s, 1024, 1), Some(0));
    }

    #[test]
    fn pushes_wake_the_writer_once_and_it_delivers_each_span_in_order() {
        let mut fan = FanOut::new(64, 0);
        let (rec_a, a_sink) = sink();
        let (rec_b, b_sink) = sink();
        let a = fan.attach(VecDeque::new());
        let b = fan.attach(VecDeque::new());
        let task = fan.attach(VecDeque::new());
        fan.attach_sink(a, a_sink, 1 << 20, 1).unwrap();
        fan.attach_sink(b, b_sink, 1 << 20, 1).unwrap();
        fan.drain(task, 64, &mut |_| {}, Some(&noop_waker()));
        assert_eq!(take_all(&mut fan).1, Due::Idle, "nothing due: the writer waits");
        let mut wake = Wakes::default();
        for i in 0..3 {
            fan.publish(chunk(i), stale, &mut wake);
        }
        assert_eq!(
            (wake.tasks.len(), wake.writers),
            (1, 0b1),
            "the writer and the one task-driven subscriber, once each"
        );
        let (out, due) = take_all(&mut fan);
        assert_eq!(due, Due::Work);
        assert_eq!(out.len(), 2);
        for d in &out {
            let batch = d.batch.as_ref().unwrap();
            assert_eq!(batch.to_bytes(), sse(&[chunk(0), chunk(1), chunk(2)]));
            assert_eq!((batch.frames(), batch.terminal), (3, false));
            let shared: Vec<_> = fan.log.iter().map(|e| e.sse.as_ref().unwrap().as_ptr()).collect();
            let handed: Vec<_> = batch.events().map(|e| e.as_ptr()).collect();
            assert_eq!(handed, shared, "the log's own bytes, uncopied");
            d.sink.deliver(batch);
        }
        assert_eq!(rec_a.got.lock().unwrap().len(), 1);
        assert_eq!(rec_b.got.lock().unwrap().len(), 1);
        // Parked again: once the writer waits, the next push wakes it (alone: the task-driven
        // subscriber did not park again) and makes both due again.
        assert_eq!(take_all(&mut fan).1, Due::Idle);
        let mut wake = Wakes::default();
        fan.publish(chunk(3), stale, &mut wake);
        assert_eq!((wake.tasks.len(), wake.writers), (0, 0b1), "only the writer");
        let (out, _) = take_all(&mut fan);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].batch.as_ref().unwrap().to_bytes(), sse(&[chunk(3)]));
        // The end: delivered as a terminal batch.
        let end = Arc::new(MessageFrame::End { seq: 4, status: twoplane_core::StreamStatus::Complete, error: None });
        fan.finish(end.clone(), &mut Wakes::default());
        let (out, _) = take_all(&mut fan);
        assert_eq!(out.len(), 2);
        for d in &out {
            let batch = d.batch.as_ref().unwrap();
            assert!(batch.terminal);
            assert_eq!(batch.to_bytes(), sse(std::slice::from_ref(&end)));
            fan.detach_sink(d.key, &d.sink);
        }
        assert!(fan.is_done(a) && fan.is_done(b));
        let _ = fan.detach(a);
        let _ = fan.detach(b);
        assert_eq!(take_all(&mut fan).1, Due::Empty, "no sink left: the writer may stop");
        assert!(!fan.has_sinks(0));
    }

    #[test]
    fn a_batch_limit_keeps_a_slot_due_and_overflow_delivers_its_stale() {
        let mut fan = FanOut::new(8, 0);
        let (_, s) = sink();
        let key = fan.attach(VecDeque::new());
        fan.attach_sink(key, s, 1, 1).unwrap();
        let mut wake = Wakes::default();
        fan.publish(chunk(0), stale, &mut wake);
        fan.publish(chunk(1), stale, &mut wake);
        let (out, due) = take_all(&mut fan);
        assert_eq!((out.len(), due), (1, Due::Work));
        assert_eq!(out[0].batch.as_ref().unwrap().frames(), 1, "one event per delivery at this limit");
        let (out, _) = take_all(&mut fan);
        assert_eq!(out[0].batch.as_ref().unwrap().to_bytes(), sse(&[chunk(1)]));
        assert_eq!(take_all(&mut fan).1, Due::Idle);
        // Never taken: the writer is busy elsewhere while the queue overflows.
        for i in 2..20 {
            fan.publish(chunk(i), stale, &mut wake);
        }
        let (out, _) = take_all(&mut fan);
        let batch = out[0].batch.as_ref().unwrap();
        assert!(batch.terminal, "the subscriber fell a whole queue behind");
        assert_eq!(batch.to_bytes(), sse(&[Arc::new(stale())]));
    }

    #[test]
    fn the_last_sink_leaving_wakes_its_idle_writer() {
        let mut fan = FanOut::new(64, 0);
        let keys: Vec<usize> = (0..3).map(|_| fan.attach(VecDeque::new())).collect();
        for &key in &keys {
            let (_, s) = sink();
            fan.attach_sink(key, s, 1 << 20, 2).unwrap();
        }
        // Writer 0 has keys 0 and 2, writer 1 key 1; both wait.
        assert_eq!((take_from(&mut fan, 0, 4).1, take_from(&mut fan, 1, 4).1), (Due::Idle, Due::Idle));
        assert_eq!(fan.detach(keys[0]), None, "writer 0 still has a sink");
        assert_eq!(fan.detach(keys[1]), Some(1), "writer 1's last sink: it is woken to end");
        assert_eq!(fan.detach(keys[2]), Some(0), "writer 0's last sink");
        assert_eq!((take_from(&mut fan, 0, 4).1, take_from(&mut fan, 1, 4).1), (Due::Empty, Due::Empty));
    }

    #[test]
    fn taking_a_sink_back_is_for_that_sink_only() {
        let mut fan = FanOut::new(64, 0);
        let (_, first) = sink();
        let (_, second) = sink();
        let key = fan.attach(VecDeque::new());
        fan.attach_sink(key, first.clone(), 64, 1).unwrap();
        let _ = fan.detach(key);
        let again = fan.attach(VecDeque::new());
        assert_eq!(again, key, "the key is reused");
        fan.attach_sink(again, second.clone(), 64, 1).unwrap();
        fan.detach_sink(again, &first);
        assert!(fan.has_sink(again), "a late hand-back of the old sink leaves the new one");
        fan.detach_sink(again, &second);
        assert!(!fan.has_sink(again));
        assert_eq!(fan.writers[0].sinks, 0);
    }

    #[test]
    fn each_writer_delivers_its_own_share_a_group_at_a_time() {
        let mut fan = FanOut::new(64, 0);
        let keys: Vec<usize> = (0..10).map(|_| fan.attach(VecDeque::new())).collect();
        for &key in &keys {
            let (_, s) = sink();
            assert_eq!(fan.attach_sink(key, s, 1 << 20, 2), Some(key % 2), "the slot's writer");
        }
        assert_eq!((take_from(&mut fan, 0, 4).1, take_from(&mut fan, 1, 4).1), (Due::Idle, Due::Idle));
        let mut wake = Wakes::default();
        fan.publish(chunk(0), stale, &mut wake);
        fan.publish(chunk(1), stale, &mut wake);
        assert_eq!((wake.tasks.len(), wake.writers), (0, 0b11), "one wake-up per writer for two pushes");
        for writer in 0..2 {
            let mut seen = Vec::new();
            loop {
                let (out, due) = take_from(&mut fan, writer, 2);
                assert!(out.len() <= 2, "a group at a time");
                for d in &out {
                    assert_eq!(d.key % 2, writer, "only its own share");
                    assert_eq!(d.batch.as_ref().unwrap().to_bytes(), sse(&[chunk(0), chunk(1)]));
                    seen.push(d.key);
                }
                if due == Due::Idle {
                    break;
                }
            }
            seen.sort_unstable();
            let mine: Vec<usize> = keys.iter().copied().filter(|k| k % 2 == writer).collect();
            assert_eq!(seen, mine, "every one of its slots, once");
        }
    }

    #[test]
    fn a_burst_is_handed_back_untaken() {
        let mut fan = FanOut::new(4096, 0);
        let (_, s) = sink();
        let key = fan.attach(VecDeque::new());
        fan.attach_sink(key, s.clone(), 1 << 20, 1).unwrap();
        let mut wake = Wakes::default();
        for i in 0..DIRECT_MAX_OWED {
            fan.publish(chunk(i), stale, &mut wake);
        }
        let (out, _) = take_all(&mut fan);
        assert_eq!(out[0].batch.as_ref().unwrap().frames(), DIRECT_MAX_OWED, "up to the limit: delivered");
        for i in 0..=DIRECT_MAX_OWED {
            fan.publish(chunk(100 + i), stale, &mut wake);
        }
        let (out, _) = take_all(&mut fan);
        assert_eq!(out.len(), 1);
        assert!(out[0].batch.is_none(), "over the limit: handed back with nothing taken");
        fan.detach_sink(key, &s);
        let mut got = Vec::new();
        fan.drain(key, usize::MAX, &mut |f| got.push(f), None);
        assert_eq!(got.len() as u64, DIRECT_MAX_OWED + 1, "its owner takes the whole burst");
        assert_eq!(got[0], chunk(100));
    }
}
