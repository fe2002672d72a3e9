//! [`FanOut`], one shard's fan-out: its subscribers' slots, each made of one part per concern
//! (its cursor in the log, what it reads, its waiting, its direct delivery), and the operations
//! the hosted stream runs under the shard's lock, which join those parts.
//!
//! Guarantees (besides those of the parts, which each operation keeps):
//! - Bounded: a subscriber whose queue (its replay, counted as at most three entries, plus the
//!   log frames behind its cursor) has reached the cap when a new frame arrives is dropped with
//!   one `stale` frame, its queue is released at once, and the log never holds more than the cap
//!   (plus the replay allowance) frames behind the slowest live subscriber. The producer never
//!   waits for a reader.
//! - Terminal frames (`end`, a fenced producer's `stale`) bypass the cap: they are the last thing
//!   a subscriber gets.
//! - A log nobody reads is released at once, when its last reader leaves.
//! - Direct delivery: a slot handed to a sink is never woken (a change marks it due with its
//!   writer instead); it is handed over only when it owes nothing, and is delivered and taken
//!   back by its one writer alone, so its events are written in order by one writer at a time.
//!   Its writer takes due slots' owed events a group at a time ([`FanOut::take_due`]), and hands
//!   back untaken a slot that owes a burst.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::task::Waker;

use bytes::Bytes;
use twoplane_core::message::MessageFrame;
use twoplane_core::ui::UiOutcome;

use super::direct::{Delivery, Direct, Due, Writers, DIRECT_MAX_OWED};
use super::encoding::{Batch, Encoder, Reads, SseDrained};
use super::log::{Cursor, Entry, Log, REPLAY_ALLOWANCE};
use super::wake::{Drained, Parking, Waiters, Wakes};
use crate::replay::Replay;
use crate::sse::SseSink;

pub(crate) struct FanOut {
    /// Which of its stream's shards this is (named in each [`Delivery`]).
    shard: usize,
    /// The frames, and how many slots still read them.
    log: Log,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    cap: usize,
    /// How many slots read SSE bytes and UI events, and the encoder's scratch.
    encoder: Encoder,
    /// The slots waiting for a change, and the change counter.
    waiters: Waiters,
    /// Direct delivery's writers (created by the first hand-over).
    writers: Writers,
}

/// A subscriber.
struct Slot {
    /// What it owes before the log, and where it is in the log.
    cursor: Cursor,
    /// Frames, SSE bytes, or UI events.
    reads: Reads,
    /// Its waker, and whether it is listed as waiting.
    parking: Parking,
    /// Its sink, while delivered by its writer task instead of woken.
    direct: Option<Direct>,
}

impl Slot {
    /// Frames it owes (replay, its own terminal, a UI reader's replay events, log frames behind
    /// the head).
    fn owed(&self, head: u64) -> u64 {
        self.cursor.owed(head) + u64::from(self.reads.prefix_owed())
    }

    fn has_more(&self, head: u64) -> bool {
        self.cursor.has_more(head) || self.reads.prefix_owed()
    }

    /// A change reached this waiting slot, `key`: a direct one is marked due with its writer,
    /// any other's waker goes to `wake`.
    fn notify(&mut self, key: usize, writers: &mut Writers, wake: &mut Wakes) {
        if let Some(direct) = self.direct.as_mut() {
            writers.mark_due(direct, key);
        } else if let Some(w) = self.parking.waker.take() {
            wake.tasks.push(w);
        }
    }
}

impl FanOut {
    pub fn new(cap: usize, shard: usize) -> Self {
        FanOut {
            shard,
            log: Log::default(),
            slots: Vec::new(),
            free: Vec::new(),
            cap,
            encoder: Encoder::default(),
            waiters: Waiters::default(),
            writers: Writers::default(),
        }
    }

    /// The change counter, for a subscription to read without the lock.
    pub fn changes(&self) -> Arc<AtomicU64> {
        self.waiters.changes()
    }

    /// Its subscribers still reading the log, those of them that read SSE bytes, and those that
    /// read UI events (a stream keeps the totals over its shards).
    pub fn readers(&self) -> (usize, usize, usize) {
        let (sse, ui) = self.encoder.readers();
        (self.log.active(), sse, ui)
    }

    /// Register a live subscriber after its replay; it reads every frame published from now on.
    pub fn attach(&mut self, replay: impl Into<Replay>) -> usize {
        self.attach_slot(replay.into(), Reads::Frames)
    }

    /// Register a live UI reader (`ui_log.rs`) after its replay's events, `prefix`, which bring it
    /// to the message's length `at`; it reads the UI events of every frame published from now on.
    pub fn attach_ui(&mut self, prefix: Bytes, at: u64) -> usize {
        let reads = self.encoder.attach_ui(prefix, at);
        self.attach_slot(Replay::default(), reads)
    }

    fn attach_slot(&mut self, replay: Replay, reads: Reads) -> usize {
        let slot = Slot { cursor: self.log.attach(replay), reads, parking: Parking::default(), direct: None };
        match self.free.pop() {
            Some(key) => {
                self.slots[key] = Some(slot);
                key
            }
            None => {
                // Most streams have one reader: room for one first, not the four a push makes.
                if self.slots.capacity() == 0 {
                    self.slots.reserve_exact(1);
                }
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
            self.log.detach(&slot.cursor);
            self.encoder.detach(&slot.reads);
            if slot.direct.is_some() {
                wake = self.writers.release(key);
            }
            self.free.push(key);
        }
        if self.log.active() == 0 {
            // Nobody reads the log any more: release it now rather than at the next overflow scan.
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
        if self.log.active() == 0 {
            return;
        }
        if self.log.len() + REPLAY_ALLOWANCE >= self.cap {
            self.reclaim(&stale, wake);
            if self.log.active() == 0 {
                self.waiters.bump();
                self.writers.wake(wake);
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
        if self.log.active() == 0 {
            return;
        }
        self.push_entry(end, sse, ui);
        self.wake_parked(wake);
    }

    fn push_entry(&mut self, frame: Arc<MessageFrame>, sse: Option<Bytes>, ui: Option<Bytes>) {
        let sse = self.encoder.entering(&frame, sse);
        if self.log.push(Entry { frame, sse, ui }) {
            self.trim();
        }
    }

    /// Release the log below the slowest live subscriber.
    fn trim(&mut self) {
        let live = self.slots.iter().flatten().filter(|slot| !slot.cursor.finished);
        let slowest = live.map(|slot| slot.cursor.next).min();
        self.log.release_below(slowest.unwrap_or(self.log.head()));
    }

    fn wake_parked(&mut self, wake: &mut Wakes) {
        self.waiters.bump();
        let parked = self.waiters.take();
        // One allocation for the whole list, not a doubling series per push.
        wake.tasks.reserve(parked.len());
        for key in parked {
            if let Some(Some(slot)) = self.slots.get_mut(key) {
                slot.parking.parked = false;
                slot.notify(key, &mut self.writers, wake);
            }
        }
        self.writers.wake(wake);
    }

    /// Drop every subscriber at the cap, then release the log below the slowest survivor.
    fn reclaim(&mut self, stale: &impl Fn() -> MessageFrame, wake: &mut Wakes) {
        let head = self.log.head();
        let mut min = head;
        let mut stale_frame: Option<Arc<MessageFrame>> = None;
        for (key, slot) in self.slots.iter_mut().enumerate() {
            let Some(slot) = slot else { continue };
            if slot.cursor.finished {
                continue;
            }
            if slot.cursor.queued(head) >= self.cap as u64 {
                let stale = stale_frame.get_or_insert_with(|| Arc::new(stale())).clone();
                self.log.end_with(&mut slot.cursor, stale);
                metrics::counter!("twoplane_stale_endings_total", "cause" => "overflow").increment(1);
                // Its key may stay in the waiting list; `wake_parked` skips a slot without a waker.
                slot.parking.parked = false;
                slot.notify(key, &mut self.writers, wake);
            } else {
                min = min.min(slot.cursor.next);
            }
        }
        self.log.release_below(min);
    }

    /// Register `waker` for the slot's next change (listed as waiting once).
    fn park(&mut self, key: usize, waker: &Waker) {
        let Some(Some(slot)) = self.slots.get_mut(key) else { return };
        self.waiters.park(&mut slot.parking, key, waker);
    }

    /// The state after a drain of `key` that did (`more == false`) or did not take everything.
    fn settle(&mut self, key: usize, more: bool, park: Option<&Waker>) -> Drained {
        let done = self.is_done(key);
        if let (false, Some(waker)) = (done, park) {
            // Parked even when frames were just taken: if nothing changes before the caller has
            // used them, it can wait again without taking the lock.
            self.park(key, waker);
        }
        let parked = matches!(self.slots.get(key), Some(Some(slot)) if slot.parking.parked);
        let at = self.waiters.now();
        Drained { done, parked, caught_up_at: (!more && !done).then_some(at) }
    }

    /// Whether `key` will never yield another frame.
    pub(super) fn is_done(&self, key: usize) -> bool {
        match self.slots.get(key).and_then(|s| s.as_ref()) {
            None => true,
            Some(slot) => slot.cursor.is_done(),
        }
    }

    /// Hand up to `max` frames of `key` (replay, own terminal, log, in that order) to `out`,
    /// then park on `park` unless the slot is done. At most one piece of the replay's text is
    /// handed out per call (see `Log::take_frames`), so a caller that keeps what it took holds
    /// one piece, not the text.
    pub fn drain(
        &mut self,
        key: usize,
        max: usize,
        out: &mut dyn FnMut(Arc<MessageFrame>),
        park: Option<&Waker>,
    ) -> Drained {
        let mut more = false;
        if let Some(Some(slot)) = self.slots.get_mut(key) {
            let stopped = self.log.take_frames(&mut slot.cursor, max, out);
            more = stopped && slot.has_more(self.log.head());
            slot.cursor.replay.release_if_empty();
        }
        self.settle(key, more, park)
    }

    /// Take `key`'s owed frames as SSE bytes, up to about `max_bytes` (a batch stops growing
    /// once it reaches the limit, so it can exceed it by one event; the replay's text is cut
    /// into pieces of at most `max_bytes` each), then park on `park` unless the slot is done.
    /// Marks the slot as an SSE reader, so later frames are encoded as they enter the log.
    pub fn drain_sse(&mut self, key: usize, max_bytes: usize, park: Option<&Waker>) -> SseDrained {
        let (batch, state) = self.drain_batch(key, max_bytes, park, Batch::default());
        let frames = batch.frames();
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
        let mut more = false;
        if let Some(Some(slot)) = self.slots.get_mut(key) {
            self.encoder.fill(&mut batch, &mut self.log, &mut slot.cursor, &mut slot.reads, max_bytes);
            more = batch.len() >= max_bytes && slot.has_more(self.log.head());
            slot.cursor.replay.release_if_empty();
        }
        let state = self.settle(key, more, park);
        (batch, state)
    }

    /// Whether `key` is delivered by the writer task (its owner must not drain it meanwhile).
    pub fn has_sink(&self, key: usize) -> bool {
        matches!(self.slots.get(key), Some(Some(slot)) if slot.direct.is_some())
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
        let head = self.log.head();
        let Some(Some(slot)) = self.slots.get_mut(key) else { return None };
        if slot.direct.is_some() || slot.cursor.finished || slot.has_more(head) {
            return None;
        }
        self.encoder.read_sse(&mut slot.reads);
        slot.direct = Some(Direct { sink, max_bytes: max_bytes.max(1), due: false });
        // Not woken any more: the writer task delivers instead.
        slot.parking.waker = None;
        self.waiters.list(&mut slot.parking, key);
        Some(self.writers.attach(key, writers))
    }

    /// Whether writer `index` has a slot with a sink here.
    pub fn has_sinks(&self, index: usize) -> bool {
        self.writers.has_sinks(index)
    }

    /// Take `key` back from direct delivery (its writer task does this, after a sink kept bytes
    /// or after the terminal). The slot is left unparked: its owner's next drain parks it.
    /// Only `sink` itself is taken back: the key may already belong to a later subscriber.
    pub fn detach_sink(&mut self, key: usize, sink: &Arc<dyn SseSink>) {
        let Some(Some(slot)) = self.slots.get_mut(key) else { return };
        let same = slot.direct.as_ref().is_some_and(|d| std::ptr::addr_eq(Arc::as_ptr(&d.sink), Arc::as_ptr(sink)));
        if same {
            slot.direct = None;
            slot.parking.parked = false;
            // The writer asking is the one to wake: nothing to name.
            let _ = self.writers.release(key);
        }
    }

    /// For writer task `index`: take up to `group` of its due slots' owed events (one delivery
    /// each, up to the slot's byte limit), park the ones that caught up, and keep the others due
    /// (behind the rest). A group at a time keeps the lock short and the batches a writer holds
    /// few.
    pub fn take_due(&mut self, index: usize, group: usize, out: &mut Vec<Delivery>) -> Due {
        let (shard, before) = (self.shard, out.len());
        let Some(due) = self.writers.due_len(index) else { return Due::Empty };
        let mut take = due.min(group);
        // Draining adds nothing to the log: one head for the whole group.
        let head = self.log.head();
        while take > 0 {
            take -= 1;
            let Some(key) = self.writers.pop_due(index) else { break };
            let Some(Some(slot)) = self.slots.get_mut(key) else { continue };
            let owed = slot.owed(head);
            let Some(direct) = slot.direct.as_mut().filter(|direct| direct.due) else { continue };
            direct.due = false;
            let (sink, max) = (direct.sink.clone(), direct.max_bytes);
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
                    self.waiters.list(&mut slot.parking, key);
                } else if let (false, Some(direct)) = (done, slot.direct.as_mut()) {
                    self.writers.mark_due(direct, key);
                }
            }
            let batch = batch.finish_apart(done);
            if batch.is_some() || done {
                out.push(Delivery { shard, key, sink, batch });
            }
        }
        self.writers.left(index, out.len() > before)
    }

    /// Where UI reader `key` got to (`None`: not a UI reader, or gone).
    pub fn ui_outcome(&self, key: usize) -> Option<UiOutcome> {
        self.slots.get(key)?.as_ref()?.reads.ui_outcome()
    }

    #[cfg(test)]
    pub fn log_len(&self) -> usize {
        self.log.len()
    }

    /// The SSE bytes the log holds for each of its frames, oldest first.
    #[cfg(test)]
    pub(super) fn log_sse(&self) -> Vec<Option<Bytes>> {
        self.log.entries().iter().map(|entry| entry.sse.clone()).collect()
    }
}
#[cfg(test)]
mod size {
    /// Every subscriber is a slot in its shard's table for as long as it is subscribed, and the
    /// table grows by doubling: a field that grows a slot grows every subscriber, idle or not
    /// (160 bytes before the replay's queue and a UI reader's place were boxed, 104 after).
    #[test]
    fn a_slot_stays_small() {
        let size = std::mem::size_of::<Option<super::Slot>>();
        assert!(size <= 104, "a slot is {size} bytes");
    }
}
