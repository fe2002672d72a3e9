//! Producing into one hosted stream: text in, frames out, in production order.
//!
//! Guarantees (each under the stream's lock, so atomic):
//! - `push` appends to the text and fans `chunk{from: old seq, seq, text}` out to the relay and
//!   every subscriber in the same critical section, so frames leave in production order; a
//!   frame nobody reads (no subscriber, no publishing relay) is not built. A push past the
//!   bound on undurable text (`backlog.rs`) is refused whole with `backpressure`.
//! - Parts (docs/contract.md §8): `push_part` is a push into one part's body, `start_part` and
//!   `event` append one structural event (one unit of the coordinate, a placeholder unit in the
//!   text). Each is checked by the core's part rules ([`MessageShape`]) before anything changes,
//!   so a delta for a part that has not started or has ended, or an event naming an unknown
//!   part, is refused (`invalid_argument`) and appends nothing. Until the first event the
//!   stream keeps no shape at all: a single text costs what it did.
//! - `advance` moves the durable length only forward, never past the produced length, and
//!   emits `durable` for each move; then releases the text below the retained allowance and
//!   resolves the flushes it covers.
//! - A relay's `publish` failure or panic is collected and reported after the lock (it never
//!   reaches the producer); the terminal frame goes to every subscriber past the queue cap.
//! - `push_checked` is a producer call's whole append under one acquisition of the lock: the
//!   stream open, the offset its length, the push, and where the stream then stands.
//! - A flush registers for everything produced so far and forces a checkpoint round, unless it
//!   can be answered at once (already durable, fenced, or ended short).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use twoplane_core::frame::chunk_end;
use twoplane_core::message::{Event, MessageFrame, MessageShape};
use twoplane_core::Text;

use super::backlog::OverBound;
use super::policy::interval_deadline;
use super::state::{Position, State};
use super::stream::{Effects, LiveStream};
use super::waiters::{shortfall, FlushWait};
use crate::display::{earliest, Offer};
use crate::error::{PlaneError, PlaneErrorKind};
use crate::relay::{RelayError, RelayFailure};

impl LiveStream {
    /// Append `text` to part 0's body (the whole text of a single-text stream).
    pub fn push(&self, text: Text) -> Result<(), PlaneError> {
        self.push_part(0, text)
    }

    /// Append `text` to part `part`'s body.
    pub fn push_part(&self, part: u32, text: Text) -> Result<(), PlaneError> {
        if text.is_empty() {
            return Ok(());
        }
        let mut fx = Effects::default();
        let pushed = self.push_locked(&mut self.lock(), part, text, &mut fx);
        self.apply(fx);
        pushed
    }

    /// A producer's append in one acquisition of the lock: refused when a reader cancelled,
    /// when the stream is sealing or ended, or when `offset` (if given) is not the produced
    /// length; otherwise `push_part`. Either way, where the stream stands after it, read under
    /// the same lock (an answer that read it later could show another call's text).
    pub fn push_checked(&self, part: u32, text: Text, offset: Option<u64>) -> Result<Position, Refused> {
        let mut fx = Effects::default();
        let answer = {
            let mut st = self.lock();
            let why = if st.life.cancelled() {
                Some(Refusal::Cancelled)
            } else if st.life.is_sealing_or_ended() {
                Some(Refusal::Sealed)
            } else {
                match offset {
                    Some(at) if at != st.text.seq() => Some(Refusal::Offset { asked: at }),
                    _ if text.is_empty() => None,
                    _ => self.push_locked(&mut st, part, text, &mut fx).err().map(Refusal::Plane),
                }
            };
            let at = st.position();
            match why {
                None => Ok(at),
                Some(why) => Err(Refused { why, at }),
            }
        };
        self.apply(fx);
        answer
    }

    /// The push itself, under the lock; `fx` collects what runs after it.
    fn push_locked(&self, st: &mut State, part: u32, text: Text, fx: &mut Effects) -> Result<(), PlaneError> {
        st.life.admits_text(&self.id)?;
        let from = st.text.seq();
        let seq = chunk_end(from, text.len()).map_err(|_| {
            PlaneError::new(PlaneErrorKind::InvalidArgument, "the stream would pass 2^53 - 1 code units")
        })?;
        if part != 0 && st.shape.is_none() {
            return Err(unknown_part(&self.id, part));
        }
        self.admit(st, text.len() as u64)?;
        // The part rules first (nothing has changed yet); a single text has no shape and
        // part 0 is always at its `from`.
        let at = match st.shape.as_mut() {
            None => from,
            Some(shape) => shape.delta(part, text.len()).map_err(|e| rule_broken(&self.id, e))?.1,
        };
        st.text.append(text.units(), seq);
        if self.has_readers() || self.cfg.topology.publish {
            let frame = Arc::new(MessageFrame::Chunk { from, seq, part, at, text });
            self.fan_out(st, frame, fx);
        }
        self.after_push(st, fx);
        Ok(())
    }

    /// Start the next part of the message; returns its number.
    pub fn start_part(&self, kind: Text, value: twoplane_core::message::Attrs) -> Result<u32, PlaneError> {
        let mut part = 0;
        self.append_event(|shape| {
            part = u32::try_from(shape.part_count()).unwrap_or(u32::MAX);
            Event::Start { part, kind, value }
        })?;
        Ok(part)
    }

    /// Append one structural event (a part's end, attributes, metadata, the finish reason, a
    /// transient part); returns the message's length after it.
    pub fn event(&self, event: Event) -> Result<u64, PlaneError> {
        self.append_event(|_| event)
    }

    /// One structural event, built from the shape as it stands (a part's start needs the next
    /// part number): checked, appended as one placeholder unit, fanned out.
    fn append_event(&self, build: impl FnOnce(&MessageShape) -> Event) -> Result<u64, PlaneError> {
        if !self.cfg.parts {
            return Err(PlaneError::new(
                PlaneErrorKind::InvalidArgument,
                format!(
                    "stream {}: this plane's store keeps no parts (map the two parts columns; a trimming callback \
                     plane, with retain_chars, cannot keep them)",
                    self.id
                ),
            ));
        }
        let mut fx = Effects::default();
        let seq;
        {
            let mut st = self.lock();
            st.life.admits_text(&self.id)?;
            let from = st.text.seq();
            seq = chunk_end(from, 1).map_err(|_| {
                PlaneError::new(PlaneErrorKind::InvalidArgument, "the stream would pass 2^53 - 1 code units")
            })?;
            self.admit(&st, 1)?;
            let shape = st.shape.get_or_insert_with(|| MessageShape::from_text(from));
            let event = build(shape);
            let frame = shape.event(event).map_err(|e| rule_broken(&self.id, e))?;
            st.text.append(&[EVENT_PLACEHOLDER], seq);
            if self.has_readers() || self.cfg.topology.publish {
                self.fan_out(&mut st, frame, &mut fx);
            }
            self.after_push(&mut st, &mut fx);
        }
        self.apply(fx);
        Ok(seq)
    }

    /// The backlog bound, for `units` more (`backlog.rs`).
    fn admit(&self, st: &State, units: u64) -> Result<(), PlaneError> {
        let waiting = st.undurable();
        st.backlog.admit(waiting, units, &self.cfg.backlog, Instant::now()).map_err(|over| self.backpressure(st, over))
    }

    /// What every push does once its frame left: arm the checkpoint policy.
    fn after_push(&self, st: &mut State, fx: &mut Effects) {
        let behind = st.writable_end().saturating_sub(st.durable.seq());
        let State { policy, durable, .. } = st;
        fx.kick =
            policy.after_push(behind, self.cfg.chars, || interval_deadline(&self.cfg, &self.id, durable.attempts()));
    }

    /// The refusal of a push past the backlog bound: what waits, and when to try again (the
    /// next checkpoint's deadline is as soon as the store could confirm anything).
    fn backpressure(&self, st: &State, over: OverBound) -> PlaneError {
        PlaneError::new(
            PlaneErrorKind::Backpressure,
            format!(
                "stream {}: {} code units are not durable yet and the store has not answered a checkpoint for {} ms \
                 (at most {} code units, {} ms); nothing was appended, push it again later ({} of {} are durable)",
                self.id,
                over.waiting,
                over.silent_for.as_millis(),
                self.cfg.backlog.max_chars,
                self.cfg.backlog.max_age.as_millis(),
                st.durable.seq(),
                st.text.seq()
            ),
        )
        .with_retry_after(self.cfg.interval.max(Duration::from_secs(1)))
    }

    /// Send a frame to the relay, then to every subscriber: now, or at the next display-rate
    /// write (`display.rs`), under the lock. The relay gets every frame as it was produced (a
    /// reader on another instance is held to the interval by its relay leg, `relay_leg.rs`).
    pub(super) fn fan_out(&self, st: &mut State, frame: Arc<MessageFrame>, fx: &mut Effects) {
        if self.cfg.topology.publish {
            if let Some(e) = self.publish_relay(&frame) {
                fx.relay_errors.push(e);
            }
        }
        let interval = self.cfg.write_interval;
        // Held frames need a timer to flush them, so outside a runtime nothing is held.
        if interval.is_zero() || !self.has_readers() || tokio::runtime::Handle::try_current().is_err() {
            self.flush_held(st, fx);
            return self.publish_now(st, frame, fx);
        }
        let now = Instant::now();
        // A `durable` frame waits for the next delta's write, at most a checkpoint interval.
        match st.display.offer(&frame, interval, self.cfg.interval, now) {
            Offer::Now { flush } => {
                if flush {
                    self.flush_held(st, fx);
                }
                self.publish_now(st, frame, fx);
            }
            Offer::Held { arm } => fx.flush_at = earliest(fx.flush_at, arm),
        }
    }

    /// One frame to every subscriber's shard (encoded once), under the lock.
    fn publish_now(&self, st: &mut State, frame: Arc<MessageFrame>, fx: &mut Effects) {
        let (floor, durable) = (st.text.floor(), st.durable.seq());
        let stale = || MessageFrame::Stale { floor_seq: floor, durable_seq: durable };
        self.shards.publish(&mut st.shards, frame, |fan, frame, sse, ui| {
            fan.publish_encoded(frame, sse, ui, stale, &mut fx.wake)
        });
    }

    /// Publish the frames held for the display-rate write, in order (before anything that must
    /// come after them: a join's snapshot, a terminal frame, a frame published now).
    pub(super) fn flush_held(&self, st: &mut State, fx: &mut Effects) {
        if !st.display.holds() {
            return;
        }
        for frame in st.display.take(Instant::now()) {
            self.publish_now(st, Arc::new(frame), fx);
        }
    }

    /// The scheduled display-rate write: what is held goes out now.
    pub(super) fn flush_display(&self) {
        let mut fx = Effects::default();
        {
            let mut st = self.lock();
            st.display.fired();
            self.flush_held(&mut st, &mut fx);
        }
        self.apply(fx);
    }

    /// The terminal frame for every subscriber, past the cap, after what is held.
    pub(super) fn finish_subscribers(&self, st: &mut State, end: Arc<MessageFrame>, fx: &mut Effects) {
        self.flush_held(st, fx);
        let wake = &mut fx.wake;
        self.shards.publish(&mut st.shards, end, |fan, frame, sse, ui| fan.finish_encoded(frame, sse, ui, wake));
    }

    pub(super) fn publish_relay(&self, frame: &MessageFrame) -> Option<RelayError> {
        let relay = self.cfg.relay.as_ref()?;
        match catch_unwind(AssertUnwindSafe(|| relay.publish(&self.id, frame))) {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some(Box::new(RelayFailure("relay.publish panicked".into()))),
        }
    }

    /// Record a confirmed durable length: position, `durable` frame, trim, waiters.
    pub(super) fn advance(&self, st: &mut State, seq: u64, fx: &mut Effects) {
        if seq <= st.durable.seq() {
            return;
        }
        st.durable.raise_to(seq.min(st.text.seq()));
        st.backlog.moved();
        if self.has_readers() || self.cfg.topology.publish {
            let frame = Arc::new(MessageFrame::Durable { seq: st.durable.seq() });
            self.fan_out(st, frame, fx);
        }
        if let Some(retain) = self.cfg.retain_chars {
            st.text.release_below(st.durable.seq().saturating_sub(retain));
        }
        st.durable.resolve();
    }

    /// Register a flush for everything produced so far (and force a round), unless it can be
    /// answered at once.
    pub fn flush_waiter(&self) -> Result<FlushWait, PlaneError> {
        let mut st = self.lock();
        let at = st.text.seq();
        if st.durable.seq() >= at {
            return Ok(FlushWait::Done(st.durable.seq()));
        }
        if let Some(err) = st.life.fenced() {
            return Err(err.clone());
        }
        if st.life.is_ended() {
            return Err(shortfall(&self.id, st.durable.seq(), st.text.seq()));
        }
        let rx = st.durable.wait_for(at);
        st.policy.force();
        Ok(FlushWait::Pending(rx))
    }
}

impl crate::display_clock::DisplayWrite for LiveStream {
    fn flush_display(&self) {
        LiveStream::flush_display(self);
    }
}

/// The unit an event occupies in the text (never read: a replay and a row take events from the
/// shape, and text only from runs).
pub(super) const EVENT_PLACEHOLDER: u16 = 0;

/// Why a checked push appended nothing.
#[derive(Debug)]
pub enum Refusal {
    /// A reader cancelled the stream.
    Cancelled,
    /// The stream is sealing or ended.
    Sealed,
    /// The producer's offset is not the produced length.
    Offset { asked: u64 },
    /// The plane refused the push (backpressure, a part rule, the 2^53 bound).
    Plane(PlaneError),
}

/// A checked push that appended nothing: why, and where the stream stands.
#[derive(Debug)]
pub struct Refused {
    pub why: Refusal,
    pub at: Position,
}

fn unknown_part(id: &str, part: u32) -> PlaneError {
    PlaneError::new(PlaneErrorKind::InvalidArgument, format!("stream {id}: part {part} has not started"))
}

/// A push or event the part rules refuse (docs/contract.md §8); nothing was appended.
fn rule_broken(id: &str, e: twoplane_core::Error) -> PlaneError {
    PlaneError::new(PlaneErrorKind::InvalidArgument, format!("stream {id}: {}; nothing was appended", e.message()))
}
