//! Direct delivery: a hosted stream's subscriber written to by the stream's one writer task
//! instead of being woken.
//!
//! Why: at a model's pace every frame is one write per subscriber. When each subscriber is a
//! task, each of those writes also costs a task wake-up and a poll that touches the task, its
//! response body and its subscription, all cold in the cache by the next frame (measured in
//! docs/server.md, "Fan-out"). A server that owns its sockets can instead hand a caught-up
//! subscription to a [`SseSink`]: a push then wakes one task per stream, which takes every
//! waiting subscriber's owed events under one lock and hands each to its sink, which writes
//! them without waiting.
//!
//! Guarantees:
//! - Order: a subscription is handed over only when it owes nothing, and taken back only by the
//!   writer task, after which the sink's owner is told ([`SseSink::resume`]). So at any moment
//!   exactly one party takes events from the subscription, and events reach a sink in log order.
//! - Nothing is lost: a sink that cannot write everything at once keeps the rest
//!   ([`Delivered::Held`]); the writer then takes the subscription back and resumes the owner,
//!   which writes what the sink kept before anything it takes itself.
//! - The terminal ends direct delivery: after a batch whose `terminal` is set (or a slot that
//!   ended owing nothing), the subscription is taken back and the owner resumed; it then sees the
//!   subscription end.
//! - Every other guarantee of the fan-out holds unchanged (`fanout.rs`): one encoding per frame,
//!   the bounded queue ending in `stale`, the terminal last.
//! - A sink that panics is treated as one that kept its bytes; the writer task survives.
//! - The writer task runs while any subscriber of the stream is handed over and ends with the
//!   last one. A pass over many subscribers is split among helper tasks (one per runtime
//!   worker); each subscriber is in one share, and the next pass starts when every share is
//!   written, so its order holds.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::fanout::{Delivery, Due};
use crate::live::LiveStream;
use crate::subscription::SseBatch;

/// Where a directly delivered subscription's events go: a connection the server owns.
pub trait SseSink: Send + Sync + 'static {
    /// Write `batch` (whole SSE events) now, without waiting. Called by the stream's writer task
    /// only, one batch at a time, in order.
    fn deliver(&self, batch: &SseBatch) -> Delivered;

    /// Direct delivery is over (the sink kept bytes, or the terminal went out): the owner takes
    /// the subscription back, writes what the sink kept, then polls the subscription itself.
    fn resume(&self);
}

/// What a sink did with a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// Every byte was written.
    Written,
    /// Some or all of it was kept, to be written by the sink's owner.
    Held,
}

/// Below this many deliveries a pass is written by the writer task alone: a helper task costs
/// more than it saves.
const MIN_SHARE: usize = 128;

/// The stream's writer task: deliver every due subscriber's events, until none is handed over.
/// A large pass is shared with helper tasks, one per runtime worker, so every core writes.
pub(crate) async fn write_loop(stream: Arc<LiveStream>) {
    let workers = tokio::runtime::Handle::current().metrics().num_workers().max(1);
    let mut out = Vec::new();
    loop {
        let due = std::future::poll_fn(|cx| match stream.take_due(&mut out, cx.waker()) {
            Due::Idle => std::task::Poll::Pending,
            due => std::task::Poll::Ready(due),
        })
        .await;
        let parts = (out.len() / MIN_SHARE).clamp(1, workers);
        let mut helpers = Vec::with_capacity(parts - 1);
        for part in 1..parts {
            let share = out.split_off(out.len() * (parts - part) / (parts - part + 1));
            let stream = stream.clone();
            helpers.push(tokio::spawn(async move { deliver_all(&stream, share) }));
        }
        deliver_all(&stream, out.drain(..));
        for helper in helpers {
            // A helper cannot panic (each sink call is caught); a cancelled one is a runtime
            // shutting down, when nothing is delivered any more.
            let _ = helper.await;
        }
        if due == Due::Exit {
            return;
        }
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
            stream.detach_sink(delivery.key, &delivery.sink);
            let sink = &delivery.sink;
            let _ = catch_unwind(AssertUnwindSafe(|| sink.resume()));
        }
    }
}
