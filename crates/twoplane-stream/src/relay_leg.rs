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
//! It returns the queue it feeds, not a subscription: the plane wraps it into one, so this leg
//! sits below `subscription.rs` and knows nothing of hosted streams.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use twoplane_core::message::{MessageConformed, MessageRelayConform};
use twoplane_core::Text;

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
    loop {
        let closed = queue.closed_signal.notified();
        if queue.is_closed() {
            break;
        }
        let next = tokio::select! {
            biased;
            _ = closed => break,
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
        if !deliver(&cfg, &stream_id, out, &mut conform, &queue) {
            break;
        }
    }
    // Dropping the source here is what releases the adapter's channel.
    drop(source);
}

/// Queue conformed frames; `false` once the subscription is finished.
fn deliver(
    cfg: &Config,
    stream_id: &str,
    out: MessageConformed,
    conform: &mut MessageRelayConform,
    queue: &RelayQueue,
) -> bool {
    if let Some(reason) = out.violation {
        report::relay_error(cfg, stream_id, RelayPhase::Frames, &RelayFailure(reason));
    }
    for frame in out.frames {
        if frame.is_terminal() {
            queue.finish(frame);
            return false;
        }
        match queue.offer(frame) {
            Offer::Accepted => {}
            Offer::Stop => return false,
            Offer::Full => {
                // Relayed readers get the same queue limit as local ones: falling behind ends
                // this reader with `stale` instead of growing memory.
                for stale in conform.fail().frames {
                    queue.finish(stale);
                }
                return false;
            }
        }
    }
    !conform.is_done()
}
