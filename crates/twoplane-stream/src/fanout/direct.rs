//! Direct delivery's bookkeeping in a shard (see `hosted/writers.rs` for the writer tasks): which
//! slots are handed to a sink, which writer delivers each, and which of them are due.
//!
//! Guarantees:
//! - A slot's writer is fixed: slot `key` belongs to writer `key % writers` (one of the stream's
//!   writer tasks, at most [`MAX_WRITERS`]), the same split in every shard, so a writer task
//!   serves writer `i` of each and a slot is only ever delivered by its own writer.
//! - A change marks a handed-over slot due with its writer, listed once however many changes
//!   reach it first ([`Writers::mark_due`]), and names each writer with due slots once per
//!   change, however many of its slots became due ([`Wakes::writers`]).
//! - A writer learns when it may stop: [`Due::Empty`] once none of its slots here has a sink,
//!   and [`Writers::release`] names it when its last sink here leaves.

use std::collections::VecDeque;
use std::sync::Arc;

use super::wake::Wakes;
use crate::sse::{SseEvents, SseSink};

/// A stream has at most this many writer tasks (one bit each in [`Wakes::writers`]).
pub(crate) const MAX_WRITERS: usize = 64;

/// A direct slot owing more frames than this when its writer gets to it is handed back to its
/// owner instead of delivered (see `FanOut::take_due`).
pub(super) const DIRECT_MAX_OWED: u64 = 32;

/// One direct delivery taken by `FanOut::take_due`: the slot (in the fan-out's shard), its
/// sink, and its events (`None` when the slot ended without owing any).
pub(crate) struct Delivery {
    pub shard: usize,
    pub key: usize,
    pub sink: Arc<dyn SseSink>,
    pub batch: Option<SseEvents>,
}

/// What `FanOut::take_due` found for a writer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Due {
    /// Deliveries were taken, or more are due than the group held: write them, then ask again.
    Work,
    /// Nothing is due here; a change that makes one of its slots due names the writer.
    Idle,
    /// Nothing is due and none of this writer's slots here has a sink: the writer may stop, if
    /// every shard says so.
    Empty,
}

/// A slot delivered by its writer task to a sink instead of woken (counted in its writer's
/// `sinks`).
pub(super) struct Direct {
    pub sink: Arc<dyn SseSink>,
    /// The byte limit of one direct delivery.
    pub max_bytes: usize,
    /// Its key is in its writer's `due` (so it is listed once).
    pub due: bool,
}

/// One writer task's share of the direct slots (the task and its waker belong to the stream).
#[derive(Default)]
struct Writer {
    /// Keys of its slots with something to deliver, oldest first.
    due: VecDeque<usize>,
    /// Its slots with a sink.
    sinks: usize,
}

/// The writer tasks' state, one per runtime worker (created by the first hand-over).
#[derive(Default)]
pub(super) struct Writers {
    writers: Vec<Writer>,
}

impl Writers {
    /// The writer that delivers slot `key`.
    fn index(&self, key: usize) -> usize {
        key % self.writers.len()
    }

    /// Count slot `key`'s sink with its writer, creating `count` writers (the stream's number,
    /// the same for every shard) at the first hand-over. Returns the writer.
    pub fn attach(&mut self, key: usize, count: usize) -> usize {
        if self.writers.is_empty() {
            self.writers.resize_with(count.clamp(1, MAX_WRITERS), Writer::default);
        }
        let index = self.index(key);
        self.writers[index].sinks += 1;
        index
    }

    /// Uncount slot `key`'s sink. Returns its writer when that was the writer's last sink here.
    /// The key may stay in the writer's `due`: `FanOut::take_due` skips a slot without a sink.
    pub fn release(&mut self, key: usize) -> Option<usize> {
        let index = self.index(key);
        let writer = &mut self.writers[index];
        writer.sinks -= 1;
        (writer.sinks == 0).then_some(index)
    }

    /// Whether writer `index` has a slot with a sink here.
    pub fn has_sinks(&self, index: usize) -> bool {
        self.writers.get(index).is_some_and(|w| w.sinks > 0)
    }

    /// List direct slot `key` with its writer (once).
    pub fn mark_due(&mut self, direct: &mut Direct, key: usize) {
        if !direct.due {
            direct.due = true;
            let index = self.index(key);
            self.writers[index].due.push_back(key);
        }
    }

    /// Name each writer task with due slots, however many became due.
    pub fn wake(&self, wake: &mut Wakes) {
        for (index, writer) in self.writers.iter().enumerate() {
            if !writer.due.is_empty() {
                wake.writers |= 1 << index;
            }
        }
    }

    /// How many of writer `index`'s slots are listed due (`None`: there is no such writer).
    pub fn due_len(&self, index: usize) -> Option<usize> {
        self.writers.get(index).map(|w| w.due.len())
    }

    /// The oldest slot listed due with writer `index`.
    pub fn pop_due(&mut self, index: usize) -> Option<usize> {
        self.writers[index].due.pop_front()
    }

    /// What writer `index` is left with after a pass that did (`took`) or did not take a
    /// delivery.
    pub fn left(&self, index: usize, took: bool) -> Due {
        let writer = &self.writers[index];
        if took || !writer.due.is_empty() {
            return Due::Work;
        }
        if writer.sinks == 0 {
            Due::Empty
        } else {
            Due::Idle
        }
    }
}
