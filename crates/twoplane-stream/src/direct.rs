//! Direct delivery: a hosted stream's subscriber written to by one of the stream's writer tasks
//! instead of being woken.
//!
//! Why: at a model's pace every frame is one write per subscriber. When each subscriber is a
//! task, each of those writes also costs a task wake-up and a poll that touches the task, its
//! response body and its subscription, all cold in the cache by the next frame (measured in
//! docs/server.md, "Fan-out"). A server that owns its sockets can instead hand a caught-up
//! subscription to a [`crate::SseSink`]: a push then wakes one writer task per runtime worker, which
//! takes its waiting subscribers' owed events, a group per pass over the stream's shards, and
//! hands each to its sink, which writes them without waiting.
//!
//! Guarantees:
//! - Order: a subscription is handed over only when it owes nothing, and taken back only by the
//!   writer task, after which the sink's owner is told ([`crate::SseSink::resume`]). So at any moment
//!   exactly one party takes events from the subscription, and events reach a sink in log order.
//! - Nothing is lost: a sink that cannot write everything at once keeps the rest
//!   ([`Delivered::Held`]); the writer then takes the subscription back and resumes the owner,
//!   which writes what the sink kept before anything it takes itself.
//! - A burst is handed back: a subscriber that owes more than a few dozen frames when its writer
//!   gets to it (a tool result or a cached answer pushed at once) is taken back untouched, and
//!   its own task writes the burst in large batches beside the other subscribers' tasks; it is
//!   handed over again once it has caught up. Measured, a burst written by the writers instead
//!   took twice as long to reach the last of 1,000 clients, at three times the server CPU
//!   (docs/server.md, "Fan-out").
//! - The terminal ends direct delivery: after a batch whose `terminal` is set (or a slot that
//!   ended owing nothing), the subscription is taken back and the owner resumed; it then sees the
//!   subscription end.
//! - Every other guarantee of the fan-out holds unchanged (`fanout.rs`): one encoding per frame,
//!   the bounded queue ending in `stale`, the terminal last.
//! - A sink that panics is treated as one that kept its bytes; the writer task survives.
//! - A stream has one writer task per runtime worker, each with a fixed share of the subscribers
//!   of every fan-out shard (so every core writes, and a subscriber is only ever delivered by its
//!   own writer, in order); a writer runs while any of its subscribers is handed over and ends
//!   with the last, however that one leaves: a subscription dropped while handed over wakes its
//!   idle writer to find out (a writer left waiting with no subscriber would keep its stream
//!   alive for ever).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::fanout::Delivery;
use crate::live::{LiveStream, SubKey};
use crate::sse::Delivered;

/// A writer takes at most this many subscribers per pass over the stream's shards: each shard's
/// lock stays short for the producer, and the batches a writer holds (not yet written) stay few.
const GROUP: usize = 64;

/// Writer task `index` of a stream: deliver its due subscribers' events, a group at a time,
/// until none of its subscribers is handed over. A stream has one writer per runtime worker,
/// each with a fixed share of the subscribers, so every core writes and no subscriber is ever
/// delivered by two writers.
pub(crate) async fn write_loop(stream: Arc<LiveStream>, index: usize) {
    let mut out = Vec::with_capacity(GROUP);
    let mut next = 0;
    loop {
        let more = std::future::poll_fn(|cx| stream.take_due(index, &mut next, GROUP, &mut out, cx.waker())).await;
        deliver_all(&stream, out.drain(..));
        if !more {
            return;
        }
        // A long round yields between groups, so a writer sharing a worker with the producer or
        // the other writer does not hold it for the whole round.
        tokio::task::consume_budget().await;
    }
}

/// Hand each delivery to its sink; take back the subscriptions whose sink kept bytes or got the
/// terminal, and resume their owners.
fn deliver_all(stream: &LiveStream, deliveries: impl IntoIterator<Item = Delivery>) {
    for delivery in deliveries {
        let over = match &delivery.batch {
            None => true,
            Some(batch) => {
                let sink = &delivery.sink;
                let held = catch_unwind(AssertUnwindSafe(|| sink.deliver(batch))).unwrap_or(Delivered::Held);
                held == Delivered::Held || batch.terminal
            }
        };
        if over {
            stream.detach_sink(SubKey { shard: delivery.shard, slot: delivery.key }, &delivery.sink);
            let sink = &delivery.sink;
            let _ = catch_unwind(AssertUnwindSafe(|| sink.resume()));
        }
    }
}
