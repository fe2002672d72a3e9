//! The fan-out shards of one hosted stream: where its subscribers' cursors live.
//!
//! Owns: up to [`SHARDS`] shards (`fanout/`, each under a lock of its own), the totals of
//! readers over them, and which shards are in use (that part lives in the stream's state, under
//! the stream's lock: [`ShardUse`]).
//!
//! Guarantees:
//! - Subscribers are spread over the shards round robin, so that subscribers read on different
//!   threads at once without waiting for one another's lock. A shard is created by its first
//!   subscriber, under the stream's lock, before any subscriber can name it: a stream with one
//!   subscriber has one.
//! - A frame is published to every shard in use under the stream's lock, with one encoding of
//!   its SSE bytes shared by all of them (made only while some subscriber reads SSE bytes), so
//!   every subscriber still sees the frames in production order.
//! - A shard's lock is taken after the stream's lock whenever both are held, never before.
//! - The reader totals are kept by every call that could change a shard's, so `has_readers`
//!   is one atomic load (producers skip building frames nobody reads).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Waker;

use bytes::Bytes;
use twoplane_core::message::MessageFrame;
use twoplane_core::ui::UiOutcome;

use crate::fanout::{Drained, FanOut, SseDrained};
use crate::replay::Replay;
use crate::sse::encode;
use crate::ui_log::UiLog;

/// Fan-out shards per stream, at most. One lock for every subscriber made the readers of a
/// stream queue on each other whenever two runtime workers ran them at once: `bench_fanout` at
/// 100 subscribers cost 0.12 us per frame on one worker and 0.37 us on two (2-core machine),
/// most of the difference in that lock. With the subscribers spread over several shards two
/// workers rarely want the same one; a publish takes one lock per shard in use. (32 shards
/// measured no better than 8.)
pub(crate) const SHARDS: usize = 8;

/// A subscriber's place: its shard, and its slot in that shard's fan-out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SubKey {
    pub shard: usize,
    pub slot: usize,
}

/// Which shards are in use, kept under the stream's lock.
pub(crate) struct ShardUse {
    /// Shards that have had a subscriber (`0..used`); frames are published to these.
    used: usize,
    /// Subscribers attached so far: the next goes to shard `attached % SHARDS`.
    attached: usize,
    /// Reused for encoding published frames, so each is one exact-size allocation.
    scratch: String,
    /// The stream's UI encoder while it has UI readers (`ui_log.rs`), in step with the log.
    pub ui: Option<UiLog>,
}

impl ShardUse {
    pub fn new() -> ShardUse {
        ShardUse { used: 0, attached: 0, scratch: String::new(), ui: None }
    }
}

pub(crate) struct Shards {
    /// The subscribers' cursors and the frame logs they read; shard `i` exists once
    /// `ShardUse::used > i`.
    fans: [OnceLock<Box<Mutex<FanOut>>>; SHARDS],
    /// Subscribers still reading, over every shard (kept by [`Shards::on`]).
    readers: AtomicUsize,
    /// Those of them that read SSE bytes: while there is one, a published frame is encoded.
    sse_readers: AtomicUsize,
    /// Attached UI readers: while there is one, a published frame is encoded as UI events too.
    ui_readers: AtomicUsize,
}

impl Shards {
    pub fn new() -> Shards {
        Shards {
            fans: Default::default(),
            readers: AtomicUsize::new(0),
            sse_readers: AtomicUsize::new(0),
            ui_readers: AtomicUsize::new(0),
        }
    }

    /// Run `f` on shard `shard` under its lock, keeping the stream's reader totals; `None` when
    /// the shard has never had a subscriber.
    pub fn on<R>(&self, shard: usize, f: impl FnOnce(&mut FanOut) -> R) -> Option<R> {
        let mut fan = twoplane_runtime::lock(self.fans[shard].get()?);
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
        if after.2 != before.2 {
            self.ui_readers.fetch_add(after.2.wrapping_sub(before.2), Ordering::Relaxed);
        }
        Some(out)
    }

    /// Whether any subscriber would receive a new frame.
    pub fn has_readers(&self) -> bool {
        self.readers.load(Ordering::Relaxed) > 0
    }

    /// A frame for every shard in use: encoded once when any subscriber reads SSE bytes, then
    /// handed to each shard's `put`, under the stream's lock (`used` is the stream's).
    pub fn publish(
        &self,
        used: &mut ShardUse,
        frame: Arc<MessageFrame>,
        mut put: impl FnMut(&mut FanOut, Arc<MessageFrame>, Option<Bytes>, Option<Bytes>),
    ) {
        let sse = (self.sse_readers.load(Ordering::Relaxed) > 0).then(|| encode(&mut used.scratch, &frame));
        let ui = if self.ui_readers.load(Ordering::Relaxed) > 0 {
            used.ui.as_mut().map(|log| log.encode(&frame))
        } else {
            // No UI reader left: the encoder goes (a later UI join makes one from the message).
            used.ui = None;
            None
        };
        for shard in 0..used.used {
            self.on(shard, |fan| put(fan, frame.clone(), sse.clone(), ui.clone()));
        }
    }

    /// Attach a live subscriber after its `replay`, to the next shard round robin (created
    /// here if it is new, with a queue bound of `cap`). Returns its key and its shard's change
    /// counter. Under the stream's lock.
    pub fn attach(&self, used: &mut ShardUse, cap: usize, replay: Replay) -> (SubKey, Arc<AtomicU64>) {
        self.attach_with(used, cap, |fan| fan.attach(replay))
    }

    /// [`Shards::attach`] for a UI reader (`ui_log.rs`): its replay's events, and the message
    /// length they bring it to.
    pub fn attach_ui(&self, used: &mut ShardUse, cap: usize, prefix: Bytes, at: u64) -> (SubKey, Arc<AtomicU64>) {
        self.attach_with(used, cap, |fan| fan.attach_ui(prefix, at))
    }

    fn attach_with(
        &self,
        used: &mut ShardUse,
        cap: usize,
        attach: impl FnOnce(&mut FanOut) -> usize,
    ) -> (SubKey, Arc<AtomicU64>) {
        let shard = used.attached % SHARDS;
        used.attached += 1;
        used.used = used.used.max(shard + 1);
        self.fans[shard].get_or_init(|| Box::new(Mutex::new(FanOut::new(cap, shard))));
        let (slot, changes) = self.on(shard, |fan| (attach(fan), fan.changes())).expect("created above");
        (SubKey { shard, slot }, changes)
    }

    /// Where a UI reader got to (`None`: not one).
    pub fn ui_outcome(&self, key: SubKey) -> Option<UiOutcome> {
        self.on(key.shard, |fan| fan.ui_outcome(key.slot)).flatten()
    }

    /// Hand up to `max` of a subscriber's frames to `out` and park it on `park` (one lock).
    /// Nothing while the subscriber is delivered directly (its sink's writer owns its cursor).
    pub fn drain(
        &self,
        key: SubKey,
        max: usize,
        out: &mut dyn FnMut(Arc<MessageFrame>),
        park: Option<&Waker>,
    ) -> Drained {
        self.on(key.shard, |fan| {
            if fan.has_sink(key.slot) {
                return Drained::HANDED_OVER;
            }
            fan.drain(key.slot, max, out, park)
        })
        .unwrap_or(Drained::GONE)
    }

    /// A subscriber's owed frames as one SSE write, and park it on `park` (one lock).
    /// Nothing while the subscriber is delivered directly.
    pub fn drain_sse(&self, key: SubKey, max_bytes: usize, park: Option<&Waker>) -> SseDrained {
        self.on(key.shard, |fan| {
            if fan.has_sink(key.slot) {
                return SseDrained { bytes: None, frames: 0, state: Drained::HANDED_OVER };
            }
            fan.drain_sse(key.slot, max_bytes, park)
        })
        .unwrap_or(SseDrained { bytes: None, frames: 0, state: Drained::GONE })
    }

    /// Remove a subscriber; returns the writer task to wake when it was that writer's last
    /// handed-over subscriber in its shard (see `FanOut::detach`).
    pub fn detach(&self, key: SubKey) -> Option<usize> {
        self.on(key.shard, |fan| fan.detach(key.slot)).flatten()
    }
}
