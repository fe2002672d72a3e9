//! The checkpoint driver: one task per hosted stream moves its durable position.
//!
//! Guarantees:
//! - Single flight: one task per stream, so at most one write is in flight; when the store is
//!   slow, each write simply carries more text, and writes never pile up behind each other.
//! - A round starts when the undurable text reaches `chars`, when the interval timer fires (the
//!   interval plus a bounded jitter: `jitter.rs`), or when a flush asks; a failed commit is retried `retries` times with doubling backoff, then
//!   the stream stalls to the interval cadence (text keeps flowing to subscribers meanwhile).
//! - After a failed round the store is read back: a commit whose acknowledgement was lost may
//!   have landed, and adopting the store's length keeps the next slice contiguous. When a later
//!   append finds the store already part-way through its slice, the store's answer is adopted
//!   and the rest is written at once: no waiter is failed on a store that answered.
//! - A seal requested while a round is in flight or backing off supersedes it at once: the
//!   seal writes the whole body, which also repairs whatever the stalled round missed. A
//!   failing seal is retried until `seal_deadline` (backing off, at most 2 s apart), holding
//!   the whole text meanwhile; `end` goes out only when the seal landed, or at the deadline
//!   with the durable length the store reports then.
//! - After the seal the stream stays joinable for `linger`; then `drive` returns, which is the
//!   stream's "evict me": whoever spawned the driver (the plane) removes it from its map. The
//!   stream itself holds no pointer back to the plane.
//! - A message with parts (docs/contract.md §8) checkpoints exactly as a text does, one write
//!   per round however many parts changed: a slice past the first structural event is written
//!   as a parts row (its frames as JSON, cut from the stream's shape), and the seal writes the
//!   message document beside the text parts' bodies.
//! - Fencing: when the store refuses a checkpoint or the seal with `fenced` (a sweeper released
//!   the row: docs/contract.md §6), the stream stops at once. Its subscribers and the relay get
//!   `stale` (go to the database, whose row the sweep left consistent), every waiter and every
//!   later push, flush and seal get the `fenced` error, and the stream leaves the plane's map
//!   without lingering. Nothing more is written: the store refuses it anyway.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::time::{sleep, sleep_until, Instant};
use twoplane_core::message::MessageFrame;
use twoplane_core::Text;

use super::lifecycle::Seal;
use super::policy::interval_deadline;
use super::state::State;
use super::stream::{Effects, LiveStream};
use super::waiters::shortfall;
use crate::error::{PlaneError, PlaneErrorKind};
use crate::report;
use crate::target::{AppendAck, AppendRequest, CloseRequest};

/// One slice to commit: text, or (past a message's first structural event) a parts row.
struct Slice {
    from: u64,
    to: u64,
    text: Vec<u16>,
    parts: Option<String>,
}

enum Step {
    Seal,
    Append(Slice),
    Wait(Option<Instant>),
}

impl LiveStream {
    /// Run the stream's checkpoints until it is sealed (or fenced) and has lingered; returns
    /// when the stream is to leave the plane's map.
    pub(crate) async fn drive(self: Arc<Self>) {
        loop {
            // A round's future is boxed while it runs: the driver's task is as large as its
            // largest state for the stream's whole life, and a round (1.2 KiB) is far larger
            // than the wait (0.2 KiB) an open stream spends most of its time in. One allocation
            // per round, beside a store call.
            match self.next_step() {
                Step::Seal => {
                    Box::pin(self.seal_round()).await;
                    break;
                }
                Step::Append(slice) => Box::pin(self.append_round(slice)).await,
                Step::Wait(deadline) => self.wait(deadline).await,
            }
            if self.lock().life.fenced().is_some() {
                break;
            }
        }
        if self.lock().life.fenced().is_none() {
            sleep(self.cfg.linger).await;
        }
    }

    fn next_step(&self) -> Step {
        let mut st = self.lock();
        st.policy.round_over();
        if st.life.is_sealing() {
            return Step::Seal;
        }
        let end = st.writable_end();
        let durable = st.durable.seq();
        let behind = end.saturating_sub(durable);
        if st.policy.start_round(behind, self.cfg.chars) {
            st.backlog.round_started(Instant::now());
            return Step::Append(slice(&st, durable, end));
        }
        let seq = st.text.seq();
        if end < seq {
            // The text ends in half a surrogate pair: a flush for it cannot be honoured until
            // the partner arrives (or the seal writes the text whole), so it is told so now
            // rather than left hanging.
            let err = PlaneError::new(
                PlaneErrorKind::NotDurable,
                format!(
                    "stream {}: the produced text ends inside a surrogate pair; {} of {} code units are durable \
                     until its other half is pushed",
                    self.id, durable, seq
                ),
            );
            st.durable.reject_between(durable.max(end), seq, &err);
        }
        let State { policy, durable: waiters, .. } = &mut *st;
        Step::Wait(policy.wait_until(end > durable, || interval_deadline(&self.cfg, &self.id, waiters.attempts())))
    }

    async fn wait(&self, deadline: Option<Instant>) {
        let kicked = self.kick.notified();
        match deadline {
            None => kicked.await,
            Some(at) => {
                tokio::select! {
                    _ = kicked => {}
                    _ = sleep_until(at) => {
                        self.lock().policy.fired(at);
                    }
                }
            }
        }
    }

    fn seal_requested(&self) -> bool {
        self.lock().life.is_sealing()
    }

    /// Run `fut` unless a seal is requested first (`None`: superseded; `fut` is dropped, which
    /// is safe because every statement is idempotent and guarded, and the seal overwrites).
    async fn unless_sealed<T>(&self, fut: impl Future<Output = T>) -> Option<T> {
        tokio::pin!(fut);
        loop {
            let kicked = self.kick.notified();
            if self.seal_requested() {
                return None;
            }
            tokio::select! {
                biased;
                out = &mut fut => return Some(out),
                _ = kicked => {}
            }
        }
    }

    async fn append_round(&self, slice: Slice) {
        // The number of the attempt last sent, so a failure answers only the waiters it carried.
        let sent = AtomicU64::new(0);
        let attempt = |_| {
            let number = self.lock().durable.next_attempt();
            sent.store(number, Ordering::Relaxed);
            let request = AppendRequest {
                stream_id: &self.id,
                host_token: &self.cfg.host_token,
                from: slice.from,
                seq: slice.to,
                text: &slice.text,
                parts: slice.parts.as_deref(),
            };
            self.cfg.target.append(request)
        };
        // A seal supersedes the round at any point, in flight or backing off. Timed as the
        // store's answer took, retries included (a round a seal superseded is not timed).
        let started = Instant::now();
        let answered = self.unless_sealed(self.cfg.retry.retry(attempt, PlaneError::is_retryable)).await;
        if answered.is_some() {
            metrics::histogram!("twoplane_checkpoint_duration_seconds").record(started.elapsed().as_secs_f64());
        }
        match answered {
            None => {}
            Some(Ok(ack)) => self.accept_ack(&slice, ack, sent.load(Ordering::Relaxed)),
            Some(Err(err)) if err.kind() == PlaneErrorKind::Fenced => self.fence(err),
            Some(Err(err)) => self.append_failed(&slice, err, sent.load(Ordering::Relaxed)).await,
        }
    }

    /// `sent`: the number of the attempt this acknowledges.
    fn accept_ack(&self, slice: &Slice, ack: AppendAck, sent: u64) {
        let mut fx = Effects::default();
        let mut failure = None;
        {
            let mut st = self.lock();
            if ack.cancel_requested && st.life.mark_cancelled() {
                fx.cancelled = true;
            }
            let confirmed = if ack.durable_seq > slice.to {
                // More than was ever sent to it: the store cannot be believed past that (P).
                tracing::warn!(stream_id = ?self.id, claimed = ack.durable_seq, sent = slice.to,
                    "the target confirmed more than was written; capping");
                slice.to
            } else {
                ack.durable_seq
            };
            self.advance(&mut st, confirmed, &mut fx);
            let durable = st.durable.seq();
            if durable < slice.to && durable > slice.from {
                // The store was already past this slice's start (an earlier write landed but its
                // acknowledgement was lost, and the read-back failed), so the guard skipped it.
                // Its answer says exactly where it stands and it answered: write the rest from
                // there at once, and keep the waiters for that round rather than failing a
                // flush on a store that is healthy now.
                st.policy.force();
            } else if durable < slice.to {
                // The store confirmed no progress at all: stall and tell the waiters.
                let err = PlaneError::store(format!(
                    "stream {}: the store confirmed {} of {}; re-covering from there",
                    self.id, durable, slice.to
                ));
                self.stall(&mut st, slice.to, sent, &err);
                failure = Some(err);
            }
        }
        self.apply(fx);
        if let Some(err) = failure {
            report::checkpoint_error(&self.cfg, &self.id, slice.from, slice.to, &err);
        }
    }

    /// The round failed after its retries (`sent`: its last attempt): read the store back, adopt
    /// what landed, tell the waiters whose text did not, and stall to the interval.
    async fn append_failed(&self, slice: &Slice, err: PlaneError, sent: u64) {
        let truth = match self.unless_sealed(self.cfg.target.probe_durable_seq(&self.id)).await {
            None => return,
            Some(Ok(seq)) => seq,
            Some(Err(probe_err)) => {
                tracing::debug!(stream_id = ?self.id, error = %probe_err, "read-back after a failed checkpoint failed");
                None
            }
        };
        let mut fx = Effects::default();
        let landed;
        {
            let mut st = self.lock();
            if let Some(t) = truth {
                self.advance(&mut st, t.min(slice.to), &mut fx);
            }
            landed = st.durable.seq() >= slice.to;
            if !landed {
                self.stall(&mut st, slice.to, sent, &err);
            }
        }
        self.apply(fx);
        if landed {
            tracing::debug!(stream_id = ?self.id, error = %err, "checkpoint acknowledgement lost; the read-back confirmed it");
        } else {
            report::checkpoint_error(&self.cfg, &self.id, slice.from, slice.to, &err);
        }
    }

    /// Attempt `sent` did not land the text through `up_to`: fail the waiters it carried and
    /// slow to the interval. A waiter that registered after that attempt was sent (while the
    /// round was backing off or reading the store back) never had an attempt of its own, so it
    /// keeps waiting and gets one at once.
    fn stall(&self, st: &mut State, up_to: u64, sent: u64, err: &PlaneError) {
        let late = st.durable.reject_sent(up_to, sent, err);
        let waiting = st.writable_end() > st.durable.seq();
        let State { policy, durable, .. } = st;
        policy.stall(late, waiting, || interval_deadline(&self.cfg, &self.id, durable.attempts()));
    }

    /// The seal: compaction (or the callback's close) with retries, then `end` to everyone.
    async fn seal_round(&self) {
        let (seal, from, seq, body, body_from, document) = {
            let mut st = self.lock();
            st.policy.disarm();
            let seal = st.life.seal().cloned().unwrap_or_else(Seal::interrupted);
            let (from, seq) = (st.durable.seq(), st.text.seq());
            match st.shape.as_ref().filter(|shape| shape.structured_before(seq)) {
                // A message: its document, with the order of its runs and events so that it
                // can be cut and go on exactly, and the text parts' bodies as the plain body. The
                // plane keeps the whole text when streams carry parts (`Config::parts`).
                Some(shape) => {
                    let message = shape.message_at(seq, &mut |f, t| Text::from_slice(&st.text.range(f, t)));
                    let document = shape.sealed_document(&message, seq).to_string_lossy();
                    (seal, from, seq, message.text_body().into_units(), 0, Some(document))
                }
                None => (seal, from, seq, st.text.held().to_vec(), st.text.floor(), None),
            }
        };
        let close = |attempt: u32| {
            if attempt > 0 {
                metrics::counter!("twoplane_seal_retries_total").increment(1);
            }
            self.cfg.target.close(CloseRequest {
                stream_id: &self.id,
                host_token: &self.cfg.host_token,
                from,
                seq,
                body: &body,
                body_from,
                document: document.as_deref(),
                status: seal.status,
                error: seal.error.as_deref(),
            })
        };
        // Retried until the seal deadline, not a count: the text past the last checkpoint
        // exists only here, and a store that restarts or fails over within the deadline must
        // get it. Readers wait for `end` meanwhile (it is sent below, once this settles).
        let deadline = Instant::now() + self.cfg.seal_deadline;
        let outcome = self.cfg.seal_retry.retry_until(deadline, close, PlaneError::is_retryable).await;
        if let Err(err) = &outcome {
            if err.kind() == PlaneErrorKind::Fenced {
                self.fence(err.clone());
                return;
            }
        }
        let truth = match &outcome {
            Ok(()) => None,
            // The seal failed: learn how much the store holds anyway, so `end` reports it.
            Err(_) => self.cfg.target.probe_durable_seq(&self.id).await.ok().flatten(),
        };
        let mut fx = Effects::default();
        let result = {
            let mut st = self.lock();
            let result = match outcome {
                Ok(()) => {
                    // The compaction wrote the whole body: everything produced is durable.
                    let produced = st.text.seq();
                    st.durable.raise_to(produced);
                    Ok(())
                }
                Err(cause) => {
                    if let Some(t) = truth {
                        let capped = t.min(st.text.seq());
                        st.durable.raise_to(capped);
                    }
                    report::checkpoint_error(&self.cfg, &self.id, from, seq, &cause);
                    Err(PlaneError::new(
                        PlaneErrorKind::NotDurable,
                        format!(
                            "stream {}: the seal did not land within {} ms; the first {} of {} code units are durable, \
                             the rest is lost ({})",
                            self.id,
                            self.cfg.seal_deadline.as_millis(),
                            st.durable.seq(),
                            st.text.seq(),
                            cause.message()
                        ),
                    )
                    .with_source(cause))
                }
            };
            st.policy.disarm();
            let end = Arc::new(MessageFrame::End {
                seq: st.durable.seq(),
                status: seal.status,
                error: seal.error.as_deref().map(Text::from),
            });
            st.life.end(end.clone());
            if self.cfg.topology.publish {
                if let Some(e) = self.publish_relay(&end) {
                    fx.relay_errors.push(e);
                }
            }
            self.finish_subscribers(&mut st, end, &mut fx);
            st.durable.resolve();
            let err = shortfall(&self.id, st.durable.seq(), st.text.seq());
            st.durable.reject_up_to(u64::MAX, &err);
            result
        };
        self.apply(fx);
        self.publish_seal_outcome(result);
    }

    /// The store fenced this producer off: stop the stream (see the module guarantees).
    fn fence(&self, err: PlaneError) {
        let mut fx = Effects::default();
        {
            let mut st = self.lock();
            if st.life.is_ended() {
                return;
            }
            st.policy.disarm();
            // `stale`, not `end`: this process no longer knows what the row holds (the sweep
            // decided it), so it sends every reader to the database instead of claiming a length.
            let stale = Arc::new(MessageFrame::Stale { floor_seq: st.text.floor(), durable_seq: st.durable.seq() });
            st.life.fence(err.clone(), stale.clone());
            metrics::counter!("twoplane_stale_endings_total", "cause" => "fenced").increment(1);
            if self.cfg.topology.publish {
                if let Some(e) = self.publish_relay(&stale) {
                    fx.relay_errors.push(e);
                }
            }
            self.finish_subscribers(&mut st, stale, &mut fx);
            st.durable.reject_up_to(u64::MAX, &err);
        }
        self.apply(fx);
        tracing::warn!(stream_id = ?self.id, error = %err, "the store fenced this producer off; the stream stopped");
        self.publish_seal_outcome(Err(err));
    }
}

/// The slice `from..to` as it is written: part 0 text in the shorthand, or a parts row cut from
/// the stream's shape (docs/contract.md §8).
fn slice(st: &State, from: u64, to: u64) -> Slice {
    match st.shape.as_ref().filter(|shape| shape.structured_before(to)) {
        None => Slice { from, to, text: st.text.range(from, to).to_vec(), parts: None },
        Some(shape) => {
            let row = shape.row(from, to, &mut |f, t| Text::from_slice(&st.text.range(f, t)));
            // A parts row is JSON text, whose lone surrogates are escapes: valid Unicode.
            let parts = row.parts.map(|json| json.to_string_lossy()).unwrap_or_default();
            Slice { from, to, text: Vec::new(), parts: Some(parts) }
        }
    }
}
