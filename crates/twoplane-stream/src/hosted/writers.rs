//! Direct delivery: a hosted stream's subscriber written to by one of the stream's writer tasks
//! instead of being woken. Owns the writer tasks (their wakers and running flags) and their loop.
//!
//! Why: at a model's pace every frame is one write per subscriber. When each subscriber is a
//! task, each of those writes also costs a task wake-up and a poll that touches the task, its
//! response body and its subscription, all cold in the cache by the next frame (measured in
//! docs/server.md, "Fan-out"). A server that owns its sockets can instead hand a caught-up
//! subscription to a [`SseSink`]: a push then wakes one writer task per runtime worker, which
//! takes its waiting subscribers' owed events, a group per pass over the stream's shards, and
//! hands each to its sink, which writes them without waiting.
//!
//! Guarantees:
//! - Order: a subscription is handed over only when it owes nothing, and taken back only by the
//!   writer task, after which the sink's owner is told ([`SseSink::resume`]). So at any moment
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
//! - Every other guarantee of the fan-out holds unchanged (`fanout/`): one encoding per frame,
//!   the bounded queue ending in `stale`, the terminal last.
//! - A sink that panics is treated as one that kept its bytes; the writer task survives.
//! - A stream has one writer task per runtime worker, each with a fixed share of the subscribers
//!   of every fan-out shard (so every core writes, and a subscriber is only ever delivered by its
//!   own writer, in order); a writer runs while any of its subscribers is handed over and ends
//!   with the last, however that one leaves: a subscription dropped while handed over wakes its
//!   idle writer to find out (a writer left waiting with no subscriber would keep its stream
//!   alive for ever).
//!
//! The loop is written over [`WriterHost`] (whatever holds the shards and the writers: the
//! hosted stream), so this file sits below the stream and names no type above it; being
//! generic, it costs no indirection.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Poll, Waker};

use futures::task::AtomicWaker;

use super::shards::{Shards, SubKey, SHARDS};
use crate::fanout::{Delivery, Due, MAX_WRITERS};
use crate::sse::{Delivered, SseSink};

/// A writer takes at most this many subscribers per pass over the stream's shards: each shard's
/// lock stays short for the producer, and the batches a writer holds (not yet written) stay few.
const GROUP: usize = 64;

/// A direct-delivery writer task as its stream sees it.
struct WriterTask {
    /// Registered before each pass, so a change that names the writer is never missed.
    waker: AtomicWaker,
    /// The task is running. Taken before a shard's lock, never after.
    running: Mutex<bool>,
}

impl WriterTask {
    fn running(&self) -> MutexGuard<'_, bool> {
        twoplane_runtime::lock(&self.running)
    }
}

/// The direct-delivery writer tasks of one stream, one per runtime worker (fixed by the first
/// hand-over): each serves its share of the handed-over subscribers of every shard.
pub(crate) struct Writers {
    tasks: OnceLock<Box<[WriterTask]>>,
}

/// What a writer task runs over: the stream that owns the shards and the writers.
pub(crate) trait WriterHost: Send + Sync + 'static {
    fn shards(&self) -> &Shards;
    fn writers(&self) -> &Writers;
}

impl Writers {
    pub fn new() -> Writers {
        Writers { tasks: OnceLock::new() }
    }

    fn task(&self, index: usize) -> Option<&WriterTask> {
        self.tasks.get()?.get(index)
    }

    /// Wake writer `index`, if it exists.
    pub fn wake(&self, index: usize) {
        if let Some(writer) = self.task(index) {
            writer.waker.wake();
        }
    }

    /// Wake every writer whose bit is set in `bits` (`Wakes::writers`).
    pub fn wake_all(&self, mut bits: u64) {
        while bits != 0 {
            self.wake(bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }

    /// Hand a subscriber's deliveries to `sink`; starts its writer task when that one is not
    /// running, and otherwise has it look at the subscriber's shard. `false` when refused, or
    /// when there is no tokio runtime to run it.
    pub fn attach_sink<H: WriterHost>(host: &Arc<H>, key: SubKey, sink: Arc<dyn SseSink>, max_bytes: usize) -> bool {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return false };
        let writers = host.writers().tasks.get_or_init(|| {
            // Fixed by the first hand-over, for every shard.
            let count = runtime.metrics().num_workers().clamp(1, MAX_WRITERS);
            (0..count).map(|_| WriterTask { waker: AtomicWaker::new(), running: Mutex::new(false) }).collect()
        });
        let count = writers.len();
        let Some(index) =
            host.shards().on(key.shard, |fan| fan.attach_sink(key.slot, sink, max_bytes, count)).flatten()
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
            runtime.spawn(write_loop(host.clone(), index));
        }
        true
    }

    /// One pass of writer `index` over the shards, from shard `*next` on: up to `group`
    /// deliveries into `out` (`FanOut::take_due`, a shard at a time). `Ready(true)` when it took
    /// some or more may be due (write them, then pass again), `Pending` when nothing is due,
    /// `Ready(false)` when none of its slots in any shard has a sink: the task is marked stopped
    /// and must end. The waker is registered before the shards are looked at, so a change
    /// after that wakes the task and one before it is seen.
    fn take_due(
        &self,
        shards: &Shards,
        index: usize,
        next: &mut usize,
        group: usize,
        out: &mut Vec<Delivery>,
        waker: &Waker,
    ) -> Poll<bool> {
        let Some(writer) = self.task(index) else { return Poll::Ready(false) };
        writer.waker.register(waker);
        let mut work = false;
        let mut sinks = false;
        for _ in 0..SHARDS {
            let shard = *next;
            *next = (shard + 1) % SHARDS;
            let left = group.saturating_sub(out.len());
            match shards.on(shard, |fan| fan.take_due(index, left, out)) {
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
        if (0..SHARDS).any(|shard| shards.on(shard, |fan| fan.has_sinks(index)) == Some(true)) {
            return Poll::Ready(true);
        }
        *running = false;
        Poll::Ready(false)
    }
}

/// Writer task `index` of a stream: deliver its due subscribers' events, a group at a time,
/// until none of its subscribers is handed over. A stream has one writer per runtime worker,
/// each with a fixed share of the subscribers, so every core writes and no subscriber is ever
/// delivered by two writers.
async fn write_loop<H: WriterHost>(host: Arc<H>, index: usize) {
    // Grown as deliveries need it, not made for a whole group: a stream's writer lives as long as
    // one of its readers is handed over, and most streams have one reader (a group's room was
    // 6.5 KiB per idle reader in the conversations benchmark).
    let mut out = Vec::new();
    let mut next = 0;
    loop {
        let (shards, writers) = (host.shards(), host.writers());
        let more =
            std::future::poll_fn(|cx| writers.take_due(shards, index, &mut next, GROUP, &mut out, cx.waker())).await;
        deliver_all(shards, out.drain(..));
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
fn deliver_all(shards: &Shards, deliveries: impl IntoIterator<Item = Delivery>) {
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
            let key = SubKey { shard: delivery.shard, slot: delivery.key };
            shards.on(key.shard, |fan| fan.detach_sink(key.slot, &delivery.sink));
            let sink = &delivery.sink;
            let _ = catch_unwind(AssertUnwindSafe(|| sink.resume()));
        }
    }
}
