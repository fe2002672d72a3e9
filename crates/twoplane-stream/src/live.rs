//! One hosted stream: its produced text, its durable position, its subscribers, its waiters.
//!
//! Guarantees (everything here happens under the stream's lock, so each is atomic; the
//! subscribers' cursors live in the stream's fan-out shards, each under a lock of its own, taken
//! after the stream's lock whenever both are held):
//! - `push` appends to the text and fans `chunk{from: old seq, seq, text}` out to subscribers
//!   and the relay in the same critical section, so frames leave in production order.
//! - A join is one snapshot: `open`, one coalesced `chunk`, `durable` when the store is past the
//!   join offset and `end` when sealed, then every later frame, with nothing missed or doubled
//!   in between (contract S).
//! - The durable position only moves forward, only to a length the store confirmed, and never
//!   past the produced length (contract P as the plane sees it); each move emits `durable`.
//! - A flush waiter is resolved only once the store holds its prefix and rejected when an
//!   append attempt sent after it registered, carrying its text, failed (a waiter that arrived
//!   while a failed round was reading the store back gets a round of its own), or when the text
//!   cannot be written yet.
//! - The terminal `end` reports the durable length; a stream never takes a push after its seal
//!   was requested.
//! - Subscribers are spread over up to [`SHARDS`] fan-out shards, round robin, so that
//!   subscribers read on different threads at once without waiting for one another's lock. A
//!   frame is published to every shard in use under the stream's lock, with one encoding of its
//!   SSE bytes shared by all of them, so every subscriber still sees the frames in production
//!   order. A shard is created by its first subscriber: a stream with one subscriber has one.
//!
//! The checkpoint driver that moves the durable position lives in `checkpoint.rs`.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::task::{Poll, Waker};

use futures::task::AtomicWaker;
use tokio::sync::{oneshot, watch, Notify};
use tokio::time::Instant;
use twoplane_core::frame::chunk_end;
use twoplane_core::text::pair_safe_cut;
use twoplane_core::{Frame, StreamStatus, Text};

use crate::error::{PlaneError, PlaneErrorKind};
use crate::fanout::{Delivery, Drained, Due, FanOut, SseDrained, Wakes, MAX_WRITERS};
use crate::options::Config;
use crate::plane::PlaneShared;
use crate::relay::{RelayError, RelayFailure, RelayPhase};
use crate::report;
use crate::sse::{encode, SseSink};
use crate::subscription::Subscription;

/// How a stream is being sealed.
#[derive(Clone, Debug)]
pub(crate) struct Seal {
    pub status: StreamStatus,
    pub error: Option<String>,
}

/// A flush answered at once, or the channel its answer will arrive on.
pub(crate) enum FlushWait {
    Done(u64),
    Pending(oneshot::Receiver<Result<u64, PlaneError>>),
}

struct Waiter {
    at: u64,
    /// `State::attempts` when it registered: attempts numbered above it were sent after it.
    since: u64,
    tx: oneshot::Sender<Result<u64, PlaneError>>,
}

pub(crate) struct State {
    /// The text still held in memory; its first unit is at offset `buf_from` of the stream.
    pub buf: Vec<u16>,
    pub buf_from: u64,
    /// Produced length.
    pub seq: u64,
    /// Length the store confirmed.
    pub durable: u64,
    /// A reader cancelled (see `request_cancel` and the checkpoint's read-back).
    pub cancelled: bool,
    /// The seal that was asked for (the first request wins).
    pub sealing: Option<Seal>,
    pub ended: bool,
    /// Set when the store fenced this producer off (checkpoint.rs): the stream ended with `stale`
    /// and every later push, flush and seal answers this error.
    pub fenced: Option<PlaneError>,
    pub end_frame: Option<Arc<Frame>>,
    /// A flush or the interval timer asked for a round regardless of the threshold.
    pub forced: bool,
    /// The last round failed: wait for the interval (or a force) instead of hot-looping.
    pub stalled: bool,
    /// When the interval timer fires.
    pub deadline: Option<Instant>,
    waiters: Vec<Waiter>,
    /// Append attempts sent so far (numbered from 1), so a failure answers only the waiters
    /// that were waiting when the failed attempt was sent.
    pub attempts: u64,
    /// Shards that have had a subscriber (`0..shards_used`); frames are published to these.
    shards_used: usize,
    /// Subscribers attached so far: the next goes to shard `attached % SHARDS`.
    attached: usize,
    /// Reused for encoding published frames, so each is one exact-size allocation.
    scratch: String,
}

/// Fan-out shards per stream, at most. One lock for every subscriber made the readers of a
/// stream queue on each other whenever two runtime workers ran them at once: `bench_fanout` at
/// 100 subscribers cost 0.12 us per frame on one worker and 0.37 us on two (2-core machine),
/// most of the difference in that lock. With the subscribers spread over several shards two
/// workers rarely want the same one; a publish takes one lock per shard in use. (32 shards
/// measured no better than 8.)
pub(crate) const SHARDS: usize = 8;

/// A direct-delivery writer task as its stream sees it.
struct WriterTask {
    /// Registered before each pass, so a change that names the writer is never missed.
    waker: AtomicWaker,
    /// The task is running. Taken before a shard's lock, never after.
    running: Mutex<bool>,
}

impl WriterTask {
    fn running(&self) -> MutexGuard<'_, bool> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A subscriber's place: its shard, and its slot in that shard's fan-out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SubKey {
    pub shard: usize,
    pub slot: usize,
}

/// Collected while the lock is held, acted on after it is released (wakers, hooks, signals).
#[derive(Default)]
pub(crate) struct Effects {
    pub wake: Wakes,
    pub relay_errors: Vec<RelayError>,
    pub kick: bool,
    pub cancelled: bool,
}

pub(crate) struct LiveStream {
    pub id: String,
    id_text: Text,
    pub cfg: Arc<Config>,
    pub plane: Weak<PlaneShared>,
    state: Mutex<State>,
    /// The subscribers' cursors and the frame logs they read (see [`SHARDS`]); shard `i` exists
    /// once `State::shards_used > i` (it is created under the stream's lock before any
    /// subscriber can name it).
    fans: [OnceLock<Box<Mutex<FanOut>>>; SHARDS],
    /// Subscribers still reading, over every shard (kept by [`LiveStream::on_shard`]).
    readers: AtomicUsize,
    /// Those of them that read SSE bytes: while there is one, a published frame is encoded.
    sse_readers: AtomicUsize,
    /// The direct-delivery writer tasks, one per runtime worker (fixed by the first hand-over):
    /// each serves its share of the handed-over subscribers of every shard.
    writers: OnceLock<Box<[WriterTask]>>,
    /// Wakes the checkpoint driver (a permit is kept when it is busy, so no kick is lost).
    pub kick: Notify,
    /// Wakes `pump` when a reader's cancel arrives (read back from the store, or
    /// `request_cancel`).
    pub cancel_signal: Notify,
    /// The seal's outcome, once known; every `close`/`fail`/`drain` caller reads the same one.
    seal_tx: watch::Sender<Option<Result<(), PlaneError>>>,
}

impl LiveStream {
    pub fn new(id: &str, cfg: Arc<Config>, plane: Weak<PlaneShared>) -> Arc<LiveStream> {
        Arc::new(LiveStream {
            id: id.to_owned(),
            id_text: Text::from(id),
            cfg,
            plane,
            state: Mutex::new(State {
                buf: Vec::new(),
                buf_from: 0,
                seq: 0,
                durable: 0,
                cancelled: false,
                sealing: None,
                ended: false,
                fenced: None,
                end_frame: None,
                forced: false,
                stalled: false,
                deadline: None,
                waiters: Vec::new(),
                attempts: 0,
                shards_used: 0,
                attached: 0,
                scratch: String::new(),
            }),
            fans: Default::default(),
            readers: AtomicUsize::new(0),
            sse_readers: AtomicUsize::new(0),
            writers: OnceLock::new(),
            kick: Notify::new(),
            cancel_signal: Notify::new(),
            seal_tx: watch::channel(None).0,
        })
    }

    /// The lock, tolerating poison: every mutation keeps the state consistent before anything
    /// that could panic (adapter code) runs, so a poisoned guard is still a valid state.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run `f` on shard `shard` under its lock, keeping the stream's reader totals; `None` when
    /// the shard has never had a subscriber.
    fn on_shard<R>(&self, shard: usize, f: impl FnOnce(&mut FanOut) -> R) -> Option<R> {
        let mut fan = self.fans[shard].get()?.lock().unwrap_or_else(|e| e.into_inner());
        let before = fan.readers();
        let out = f(&mut fan);
        let after = fan.readers();
        // Wrapping arithmetic moves the totals by the (possibly negative) difference.
        if after.0 != before.0 {
            self.readers.fetch_add(after.0.wrapping_sub(before.0), Ordering::Relaxed);
        }
        if after.1 != before.1 {
            self.sse_readers.fetch_add(after.1.wrapping_sub(before.1), Ordering::Relaxed);
        }
        Some(out)
    }

    /// Whether any subscriber would receive a new frame (producers skip building frames nobody
    /// reads).
    pub fn has_readers(&self) -> bool {
        self.readers.load(Ordering::Relaxed) > 0
    }

    /// A frame for every shard in use: encoded once when any subscriber reads SSE bytes, then
    /// handed to each shard's `put`, under the stream's lock.
    fn to_shards(
        &self,
        st: &mut State,
        frame: Arc<Frame>,
        mut put: impl FnMut(&mut FanOut, Arc<Frame>, Option<bytes::Bytes>),
    ) {
        let sse = (self.sse_readers.load(Ordering::Relaxed) > 0).then(|| encode(&mut st.scratch, &frame));
        for shard in 0..st.shards_used {
            self.on_shard(shard, |fan| put(fan, frame.clone(), sse.clone()));
        }
    }

    /// The terminal frame for every subscriber, past the cap.
    pub fn finish_subscribers(&self, st: &mut State, end: Arc<Frame>, wake: &mut Wakes) {
        self.to_shards(st, end, |fan, frame, sse| fan.finish_encoded(frame, sse, wake));
    }

    /// Act on what a critical section collected. Never called with the lock held.
    pub fn apply(&self, fx: Effects) {
        for w in fx.wake.tasks {
            w.wake();
        }
        let mut writers = fx.wake.writers;
        while writers != 0 {
            self.wake_writer(writers.trailing_zeros() as usize);
            writers &= writers - 1;
        }
        if fx.kick {
            self.kick.notify_one();
        }
        if fx.cancelled {
            self.cancel_signal.notify_waiters();
        }
        for e in fx.relay_errors {
            report::relay_error(&self.cfg, &self.id, RelayPhase::Publish, e.as_ref());
        }
    }

    // ---- producer side

    pub fn push(&self, text: Text) -> Result<(), PlaneError> {
        if text.is_empty() {
            return Ok(());
        }
        let mut fx = Effects::default();
        {
            let mut st = self.lock();
            if let Some(err) = &st.fenced {
                return Err(err.clone());
            }
            if st.sealing.is_some() || st.ended {
                return Err(PlaneError::new(
                    PlaneErrorKind::StreamClosed,
                    format!("stream {} is sealed; it takes no more text", self.id),
                ));
            }
            let from = st.seq;
            let seq = chunk_end(from, text.len()).map_err(|_| {
                PlaneError::new(PlaneErrorKind::InvalidArgument, "the stream would pass 2^53 - 1 code units")
            })?;
            st.buf.extend_from_slice(text.units());
            st.seq = seq;
            if self.has_readers() || self.cfg.topology.publish {
                let frame = Arc::new(Frame::Chunk { from, seq, text });
                self.fan_out(&mut st, frame, &mut fx);
            }
            fx.kick = self.policy_after_push(&mut st);
        }
        self.apply(fx);
        Ok(())
    }

    /// Whether a push should wake the driver: the threshold was reached, or the interval timer
    /// was just armed (the driver must learn its deadline).
    fn policy_after_push(&self, st: &mut State) -> bool {
        let end = writable_end(st);
        if end <= st.durable {
            return false;
        }
        if !st.stalled && end - st.durable >= self.cfg.chars {
            return true;
        }
        if st.deadline.is_none() {
            st.deadline = Some(self.interval_deadline(st));
            return true;
        }
        false
    }

    /// Send a frame to the relay and every subscriber, in that order, under the lock.
    pub fn fan_out(&self, st: &mut State, frame: Arc<Frame>, fx: &mut Effects) {
        if self.cfg.topology.publish {
            if let Some(e) = self.publish_relay(&frame) {
                fx.relay_errors.push(e);
            }
        }
        let (floor, durable) = (st.buf_from, st.durable);
        let stale = || Frame::Stale { floor_seq: floor, durable_seq: durable };
        self.to_shards(st, frame, |fan, frame, sse| fan.publish_encoded(frame, sse, stale, &mut fx.wake));
    }

    pub fn publish_relay(&self, frame: &Frame) -> Option<RelayError> {
        let relay = self.cfg.relay.as_ref()?;
        match catch_unwind(AssertUnwindSafe(|| relay.publish(&self.id, frame))) {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some(Box::new(RelayFailure("relay.publish panicked".into()))),
        }
    }

    /// Record a confirmed durable length: position, `durable` frame, trim, waiters.
    pub fn advance(&self, st: &mut State, seq: u64, fx: &mut Effects) {
        if seq <= st.durable {
            return;
        }
        st.durable = seq.min(st.seq);
        if self.has_readers() || self.cfg.topology.publish {
            let frame = Arc::new(Frame::Durable { seq: st.durable });
            self.fan_out(st, frame, fx);
        }
        if let Some(retain) = self.cfg.retain_chars {
            let floor = st.durable.saturating_sub(retain);
            if floor > st.buf_from {
                st.buf.drain(..(floor - st.buf_from) as usize);
                st.buf_from = floor;
            }
        }
        resolve_waiters(st);
    }

    /// Register a flush for everything produced so far (and force a round), unless it can be
    /// answered at once.
    pub fn flush_waiter(&self) -> Result<FlushWait, PlaneError> {
        let mut st = self.lock();
        let at = st.seq;
        if st.durable >= at {
            return Ok(FlushWait::Done(st.durable));
        }
        if let Some(err) = &st.fenced {
            return Err(err.clone());
        }
        if st.ended {
            return Err(shortfall(&self.id, st.durable, st.seq));
        }
        let (tx, rx) = oneshot::channel();
        let since = st.attempts;
        st.waiters.push(Waiter { at, since, tx });
        st.forced = true;
        Ok(FlushWait::Pending(rx))
    }

    /// Ask for the seal (the first request wins) and return where its outcome will appear.
    pub fn request_seal(&self, seal: Seal) -> watch::Receiver<Option<Result<(), PlaneError>>> {
        {
            let mut st = self.lock();
            if !st.ended && st.sealing.is_none() {
                st.sealing = Some(seal);
                st.deadline = None;
            }
        }
        self.kick.notify_one();
        self.seal_tx.subscribe()
    }

    pub fn publish_seal_outcome(&self, outcome: Result<(), PlaneError>) {
        self.seal_tx.send_replace(Some(outcome));
    }

    // ---- waiters

    /// Reject the waiters whose prefix ends in `(durable, up_to]`.
    pub fn reject_waiters(&self, st: &mut State, up_to: u64, err: &PlaneError) {
        let lo = st.durable;
        reject_waiters_between(st, lo, up_to, err)
    }

    /// Reject the waiters whose prefix ends in `(lo, hi]`.
    pub fn reject_waiters_between(&self, st: &mut State, lo: u64, hi: u64, err: &PlaneError) {
        reject_waiters_between(st, lo, hi, err)
    }

    /// Reject the waiters whose prefix ends in `(durable, up_to]` and that were already waiting
    /// when append attempt `attempt` was sent (it carried their text and failed). Returns whether
    /// waiters in that range remain: they registered later and are owed an attempt of their own.
    pub fn reject_waiters_sent(&self, st: &mut State, up_to: u64, attempt: u64, err: &PlaneError) -> bool {
        let lo = st.durable;
        settle_waiters(st, |w| (w.at > lo && w.at <= up_to && w.since < attempt).then(|| Err(err.clone())));
        st.waiters.iter().any(|w| w.at > lo && w.at <= up_to)
    }

    pub fn resolve_waiters(&self, st: &mut State) {
        resolve_waiters(st)
    }

    // ---- subscriber side

    /// The atomic join (see the module guarantees).
    pub fn subscribe(self: &Arc<Self>, from: u64) -> Subscription {
        let mut st = self.lock();
        let at = from.min(st.seq);
        if at < st.buf_from {
            return Subscription::fixed(vec![Arc::new(Frame::Stale {
                floor_seq: st.buf_from,
                durable_seq: st.durable,
            })]);
        }
        let mut replay = VecDeque::with_capacity(4);
        replay.push_back(Arc::new(Frame::Open {
            stream_id: self.id_text.clone(),
            from: at,
            seq: st.seq,
            durable_seq: st.durable,
            ended: st.ended,
        }));
        if st.seq > at {
            let text = Text::from_slice(&st.buf[(at - st.buf_from) as usize..]);
            replay.push_back(Arc::new(Frame::Chunk { from: at, seq: st.seq, text }));
        }
        if st.durable > at {
            replay.push_back(Arc::new(Frame::Durable { seq: st.durable }));
        }
        if st.ended {
            if let Some(end) = &st.end_frame {
                replay.push_back(end.clone());
            }
            return Subscription::fixed(replay.into());
        }
        let shard = st.attached % SHARDS;
        st.attached += 1;
        st.shards_used = st.shards_used.max(shard + 1);
        self.fans[shard].get_or_init(|| Box::new(Mutex::new(FanOut::new(self.cfg.max_queued_frames, shard))));
        let (slot, changes) = self.on_shard(shard, |fan| (fan.attach(replay), fan.changes())).expect("created above");
        drop(st);
        Subscription::local(self.clone(), SubKey { shard, slot }, changes)
    }

    /// Hand up to `max` of a subscriber's frames to `out` and park it on `park` (one lock).
    /// Nothing while the subscriber is delivered directly (its sink's writer owns its cursor).
    pub fn drain_sub(&self, key: SubKey, max: usize, out: &mut dyn FnMut(Arc<Frame>), park: Option<&Waker>) -> Drained {
        self.on_shard(key.shard, |fan| {
            if fan.has_sink(key.slot) {
                return Drained::HANDED_OVER;
            }
            fan.drain(key.slot, max, out, park)
        })
        .unwrap_or(Drained::GONE)
    }

    /// A subscriber's owed frames as one SSE write, and park it on `park` (one lock).
    /// Nothing while the subscriber is delivered directly.
    pub fn drain_sub_sse(&self, key: SubKey, max_bytes: usize, park: Option<&Waker>) -> SseDrained {
        self.on_shard(key.shard, |fan| {
            if fan.has_sink(key.slot) {
                return SseDrained { bytes: None, frames: 0, state: Drained::HANDED_OVER };
            }
            fan.drain_sse(key.slot, max_bytes, park)
        })
        .unwrap_or(SseDrained { bytes: None, frames: 0, state: Drained::GONE })
    }

    fn writer(&self, index: usize) -> Option<&WriterTask> {
        self.writers.get()?.get(index)
    }

    fn wake_writer(&self, index: usize) {
        if let Some(writer) = self.writer(index) {
            writer.waker.wake();
        }
    }

    /// Hand a subscriber's deliveries to `sink` (see `direct.rs`); starts its writer task when
    /// that one is not running, and otherwise has it look at the subscriber's shard. `false` when
    /// refused, or when there is no tokio runtime to run it.
    pub fn attach_sink(self: &Arc<Self>, key: SubKey, sink: Arc<dyn SseSink>, max_bytes: usize) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return false };
        let writers = self.writers.get_or_init(|| {
            // Fixed by the first hand-over, for every shard.
            let count = runtime.metrics().num_workers().clamp(1, MAX_WRITERS);
            (0..count).map(|_| WriterTask { waker: AtomicWaker::new(), running: Mutex::new(false) }).collect()
        });
        let count = writers.len();
        let Some(index) = self.on_shard(key.shard, |fan| fan.attach_sink(key.slot, sink, max_bytes, count)).flatten()
        else {
            return false;
        };
        let mut running = writers[index].running();
        if *running {
            // It may have passed this shard already: have it look again.
            drop(running);
            writers[index].waker.wake();
        } else {
            *running = true;
            runtime.spawn(crate::direct::write_loop(self.clone(), index));
        }
        true
    }

    pub fn detach_sink(&self, key: SubKey, sink: &Arc<dyn SseSink>) {
        self.on_shard(key.shard, |fan| fan.detach_sink(key.slot, sink));
    }

    /// One pass of writer `index` over the shards, from shard `*next` on: up to `group`
    /// deliveries into `out` (`FanOut::take_due`, a shard at a time). `Ready(true)` when it took
    /// some or more may be due (write them, then pass again), `Pending` when nothing is due,
    /// `Ready(false)` when none of its slots in any shard has a sink: the task is marked stopped
    /// and must end. The waker is registered before the shards are looked at, so a change
    /// after that wakes the task and one before it is seen.
    pub fn take_due(
        &self,
        index: usize,
        next: &mut usize,
        group: usize,
        out: &mut Vec<Delivery>,
        waker: &Waker,
    ) -> Poll<bool> {
        let Some(writer) = self.writer(index) else { return Poll::Ready(false) };
        writer.waker.register(waker);
        let mut work = false;
        let mut sinks = false;
        for _ in 0..SHARDS {
            let shard = *next;
            *next = (shard + 1) % SHARDS;
            let left = group.saturating_sub(out.len());
            match self.on_shard(shard, |fan| fan.take_due(index, left, out)) {
                Some(Due::Work) => work = true,
                Some(Due::Idle) => sinks = true,
                Some(Due::Empty) | None => {}
            }
            if out.len() >= group {
                // The rest waits for the next pass, which starts after this shard.
                return Poll::Ready(true);
            }
        }
        if work {
            return Poll::Ready(true);
        }
        if sinks {
            return Poll::Pending;
        }
        // No sink anywhere: stop, unless a hand-over came after its shard was looked at. A
        // hand-over counts its sink in its shard before it looks at the task under this lock, so
        // either this check sees the sink or the hand-over sees the task stopped and starts one.
        let mut running = writer.running();
        if (0..SHARDS).any(|shard| self.on_shard(shard, |fan| fan.has_sinks(index)) == Some(true)) {
            return Poll::Ready(true);
        }
        *running = false;
        Poll::Ready(false)
    }

    pub fn detach_sub(&self, key: SubKey) {
        if let Some(writer) = self.on_shard(key.shard, |fan| fan.detach(key.slot)).flatten() {
            self.wake_writer(writer);
        }
    }

    // ---- observers

    pub fn seq(&self) -> u64 {
        self.lock().seq
    }

    pub fn durable_seq(&self) -> u64 {
        self.lock().durable
    }

    pub fn cancelled(&self) -> bool {
        self.lock().cancelled
    }

    /// A reader's cancel, delivered to the process hosting the stream: what a checkpoint does when
    /// it reads the store's cancel flag back, at once. `false` when the stream already ended or is
    /// being sealed (there is nothing left to stop).
    pub fn request_cancel(&self) -> bool {
        let mut fx = Effects::default();
        let live = {
            let mut st = self.lock();
            let live = !st.ended && st.sealing.is_none();
            if live && !st.cancelled {
                st.cancelled = true;
                fx.cancelled = true;
            }
            live
        };
        self.apply(fx);
        live
    }

    pub fn is_ended(&self) -> bool {
        self.lock().ended
    }

    pub fn is_sealing_or_ended(&self) -> bool {
        let st = self.lock();
        st.ended || st.sealing.is_some()
    }
}

/// The end of the text a checkpoint may write now: the core's cut rule
/// ([`twoplane_core::text::pair_safe_cut`]) applied to the produced text. At the seal the whole
/// text is written, lone surrogate or not; the durable length never goes backwards.
pub(crate) fn writable_end(st: &State) -> u64 {
    if st.sealing.is_some() || st.seq <= st.durable {
        return st.seq;
    }
    // Everything past `durable` is still in the buffer (trimming only goes below it).
    let held = (st.seq - st.buf_from) as usize;
    let cut = st.buf_from + pair_safe_cut(&st.buf, held) as u64;
    cut.max(st.durable)
}

pub(crate) fn shortfall(id: &str, durable: u64, seq: u64) -> PlaneError {
    PlaneError::new(
        PlaneErrorKind::NotDurable,
        format!("stream {id} ended with only {durable} of {seq} code units durable"),
    )
}

fn resolve_waiters(st: &mut State) {
    let durable = st.durable;
    settle_waiters(st, |w| (w.at <= durable).then_some(Ok(durable)));
}

/// Reject the waiters whose prefix ends in `(lo, hi]`: the round that carried their text did not
/// land it. Waiters for more text than that stay queued for the next round.
fn reject_waiters_between(st: &mut State, lo: u64, hi: u64, err: &PlaneError) {
    settle_waiters(st, |w| (w.at > lo && w.at <= hi).then(|| Err(err.clone())));
}

/// Answer every waiter `decide` has an answer for; keep the rest in order.
fn settle_waiters(st: &mut State, decide: impl Fn(&Waiter) -> Option<Result<u64, PlaneError>>) {
    if st.waiters.is_empty() {
        return;
    }
    let waiters = std::mem::take(&mut st.waiters);
    for w in waiters {
        match decide(&w) {
            // A waiter whose caller went away simply drops its answer.
            Some(answer) => drop(w.tx.send(answer)),
            None => st.waiters.push(w),
        }
    }
}
