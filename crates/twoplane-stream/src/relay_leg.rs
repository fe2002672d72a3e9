//! The subscribe-miss leg: serving a stream hosted elsewhere through the relay.
//!
//! Guarantees: `attach` is bounded by the attach timeout; any failure there (an error, a panic,
//! a timeout, no source) is `absent`. An attached source is read by one task that runs every
//! frame through the message conform pass ([`MessageRelayConform`]: §3 and the part rules of
//! §8), queues at most `max_queued_frames` frames for the subscriber
//! (then a `stale`), turns a failing or panicking source into one `stale`, reports every
//! problem to the relay hook, and drops the source as soon as the subscription is dropped or
//! finished.
//!
//! Display-rate writes (`display.rs`, `PlaneOptions::write_interval_ms`): the relay carries every
//! frame as it was produced, so the leg itself holds the frames that arrive within an interval of
//! its last hand-over and queues them merged at the interval's end, which the subscriber then
//! writes at once: a reader of a stream hosted elsewhere is written at the rate of one on its
//! host. The first frame after a quiet interval is queued at once; a terminal frame (and a hold
//! that reaches the queue bound) queues what is held first; nothing is reordered or dropped.
//!
//! It returns the queue it feeds, not a subscription: the plane wraps it into one, so this leg
//! sits below `subscription.rs` and knows nothing of hosted streams.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use tokio::time::Instant;
use twoplane_core::message::{MessageConformed, MessageFrame, MessageRelayConform};
use twoplane_core::Text;

use crate::display::{earliest, Display, Offer as Hold};
use crate::options::Config;
use crate::relay::{FrameSource, RelayFailure, RelayPhase};
use crate::relay_queue::{Offer, RelayQueue};
use crate::report;

/// Ask the relay for `stream_id` from `from`: the queue its reader task fills, or `None`
/// (answer `absent`).
pub(crate) async fn attach(cfg: &Arc<Config>, stream_id: &str, from: u64) -> Option<Arc<RelayQueue>> {
    let relay = cfg.relay.as_ref().filter(|_| cfg.topology.attach)?;
    let dial = AssertUnwindSafe(relay.attach(stream_id, from)).catch_unwind();
    let failure = |msg: String| {
        report::relay_error(cfg, stream_id, RelayPhase::Attach, &RelayFailure(msg));
        None
    };
    match tokio::time::timeout(cfg.attach_timeout, dial).await {
        Err(_) => {
            failure(format!("stream {stream_id}: relay.attach timed out after {} ms", cfg.attach_timeout.as_millis()))
        }
        Ok(Err(_panic)) => failure(format!("stream {stream_id}: relay.attach panicked")),
        Ok(Ok(Err(e))) => {
            report::relay_error(cfg, stream_id, RelayPhase::Attach, e.as_ref());
            None
        }
        Ok(Ok(Ok(None))) => None,
        Ok(Ok(Ok(Some(source)))) => {
            let queue = RelayQueue::new(cfg.max_queued_frames);
            tokio::spawn(read_source(cfg.clone(), stream_id.to_owned(), from, source, queue.clone()));
            Some(queue)
        }
    }
}

async fn read_source(cfg: Arc<Config>, stream_id: String, from: u64, mut source: FrameSource, queue: Arc<RelayQueue>) {
    let mut conform = MessageRelayConform::new(Text::from(stream_id.as_str()), from);
    let mut leg = Leg { cfg: &cfg, stream_id: &stream_id, queue: &queue, display: Display::default(), due: None };
    loop {
        let closed = queue.closed_signal.notified();
        if queue.is_closed() {
            break;
        }
        let due = leg.due;
        let next = tokio::select! {
            biased;
            _ = closed => break,
            _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                leg.due = None;
                leg.display.fired();
                if !leg.release(&mut conform) {
                    break;
                }
                continue;
            }
            next = AssertUnwindSafe(source.next()).catch_unwind() => next,
        };
        let out = match next {
            Err(_panic) => {
                report::relay_error(
                    &cfg,
                    &stream_id,
                    RelayPhase::Frames,
                    &RelayFailure("the relay source panicked".into()),
                );
                conform.fail()
            }
            Ok(None) => conform.end(),
            Ok(Some(Err(e))) => {
                report::relay_error(&cfg, &stream_id, RelayPhase::Frames, e.as_ref());
                conform.fail()
            }
            Ok(Some(Ok(frame))) => conform.feed(frame),
        };
        if !leg.deliver(out, &mut conform) {
            break;
        }
    }
    // Dropping the source here is what releases the adapter's channel.
    drop(source);
}

/// One reader's leg: where its conformed frames go, and the frames held for its next write.
struct Leg<'a> {
    cfg: &'a Config,
    stream_id: &'a str,
    queue: &'a RelayQueue,
    display: Display,
    /// When the held frames are due (a flush is armed).
    due: Option<Instant>,
}

impl Leg<'_> {
    /// Queue conformed frames, or hold them for the next display-rate write; `false` once the
    /// subscription is finished.
    fn deliver(&mut self, out: MessageConformed, conform: &mut MessageRelayConform) -> bool {
        if let Some(reason) = out.violation {
            report::relay_error(self.cfg, self.stream_id, RelayPhase::Frames, &RelayFailure(reason));
        }
        let interval = self.cfg.write_interval;
        // The frames of one source item arrive together: once one of them goes out, the rest go
        // with it (a synthesized `open` and the first chunk are one write, not two intervals).
        let mut going = false;
        for frame in out.frames {
            if frame.is_terminal() {
                if !self.release(conform) {
                    return false;
                }
                self.queue.finish(frame);
                return false;
            }
            if interval.is_zero() || going {
                if !self.offer(frame, conform) {
                    return false;
                }
                continue;
            }
            match self.display.offer(&frame, interval, self.cfg.interval, Instant::now()) {
                Hold::Now { flush } => {
                    if flush && !self.release(conform) {
                        return false;
                    }
                    if !self.offer(frame, conform) {
                        return false;
                    }
                    going = true;
                }
                Hold::Held { arm } => {
                    self.due = earliest(self.due, arm);
                    // Frames that do not merge pile up as they come: past the queue's bound they
                    // go to the queue now, which ends a reader that cannot take them with `stale`.
                    if self.display.held_len() >= self.cfg.max_queued_frames && !self.release(conform) {
                        return false;
                    }
                }
            }
        }
        !conform.is_done()
    }

    /// Queue what is held, in order.
    fn release(&mut self, conform: &mut MessageRelayConform) -> bool {
        if !self.display.holds() {
            return true;
        }
        let held = self.display.take(Instant::now());
        held.into_iter().all(|frame| self.offer(frame, conform))
    }

    /// Queue one non-terminal frame; `false` once the subscription is finished.
    fn offer(&self, frame: MessageFrame, conform: &mut MessageRelayConform) -> bool {
        match self.queue.offer(frame) {
            Offer::Accepted => true,
            Offer::Stop => false,
            Offer::Full => {
                // Relayed readers get the same queue limit as local ones: falling behind ends
                // this reader with `stale` instead of growing memory.
                for stale in conform.fail().frames {
                    self.queue.finish(stale);
                }
                false
            }
        }
    }
}
