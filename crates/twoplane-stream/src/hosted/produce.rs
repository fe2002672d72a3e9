//! Producing into one hosted stream: text in, frames out, in production order.
//!
//! Guarantees (each under the stream's lock, so atomic):
//! - `push` appends to the text and fans `chunk{from: old seq, seq, text}` out to the relay and
//!   every subscriber in the same critical section, so frames leave in production order; a
//!   frame nobody reads (no subscriber, no publishing relay) is not built. A push past the
//!   bound on undurable text (`backlog.rs`) is refused whole with `backpressure`.
//! - `advance` moves the durable length only forward, never past the produced length, and
//!   emits `durable` for each move; then releases the text below the retained allowance and
//!   resolves the flushes it covers.
//! - A relay's `publish` failure or panic is collected and reported after the lock (it never
//!   reaches the producer); the terminal frame goes to every subscriber past the queue cap.
//! - A flush registers for everything produced so far and forces a checkpoint round, unless it
//!   can be answered at once (already durable, fenced, or ended short).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use twoplane_core::frame::chunk_end;
use twoplane_core::{Frame, Text};

use super::backlog::OverBound;
use super::policy::interval_deadline;
use super::state::State;
use super::stream::{Effects, LiveStream};
use super::waiters::{shortfall, FlushWait};
use crate::error::{PlaneError, PlaneErrorKind};
use crate::fanout::Wakes;
use crate::relay::{RelayError, RelayFailure};

impl LiveStream {
    pub fn push(&self, text: Text) -> Result<(), PlaneError> {
        if text.is_empty() {
            return Ok(());
        }
        let mut fx = Effects::default();
        {
            let mut st = self.lock();
            st.life.admits_text(&self.id)?;
            let from = st.text.seq();
            let seq = chunk_end(from, text.len()).map_err(|_| {
                PlaneError::new(PlaneErrorKind::InvalidArgument, "the stream would pass 2^53 - 1 code units")
            })?;
            let waiting = st.undurable();
            let now = Instant::now();
            if let Err(over) = st.backlog.admit(waiting, text.len() as u64, &self.cfg.backlog, now) {
                return Err(self.backpressure(&st, over));
            }
            st.text.append(text.units(), seq);
            if self.has_readers() || self.cfg.topology.publish {
                let frame = Arc::new(Frame::Chunk { from, seq, text });
                self.fan_out(&mut st, frame, &mut fx);
            }
            let behind = st.writable_end().saturating_sub(st.durable.seq());
            let State { policy, durable, .. } = &mut *st;
            fx.kick = policy
                .after_push(behind, self.cfg.chars, || interval_deadline(&self.cfg, &self.id, durable.attempts()));
        }
        self.apply(fx);
        Ok(())
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

    /// Send a frame to the relay and every subscriber, in that order, under the lock.
    pub(super) fn fan_out(&self, st: &mut State, frame: Arc<Frame>, fx: &mut Effects) {
        if self.cfg.topology.publish {
            if let Some(e) = self.publish_relay(&frame) {
                fx.relay_errors.push(e);
            }
        }
        let (floor, durable) = (st.text.floor(), st.durable.seq());
        let stale = || Frame::Stale { floor_seq: floor, durable_seq: durable };
        self.shards
            .publish(&mut st.shards, frame, |fan, frame, sse| fan.publish_encoded(frame, sse, stale, &mut fx.wake));
    }

    /// The terminal frame for every subscriber, past the cap.
    pub(super) fn finish_subscribers(&self, st: &mut State, end: Arc<Frame>, wake: &mut Wakes) {
        self.shards.publish(&mut st.shards, end, |fan, frame, sse| fan.finish_encoded(frame, sse, wake));
    }

    pub(super) fn publish_relay(&self, frame: &Frame) -> Option<RelayError> {
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
            let frame = Arc::new(Frame::Durable { seq: st.durable.seq() });
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
