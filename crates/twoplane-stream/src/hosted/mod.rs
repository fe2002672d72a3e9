//! One hosted stream: its produced text, its durable position, its subscribers, its waiters,
//! its checkpoint driver.
//!
//! The files, each depending only on those listed before it (and on the crate's lower
//! modules: `fanout/`, `sse.rs`, `relay.rs`, `options.rs`, `display.rs` (the frames held for
//! the next display-rate write, the relay leg's too), ...):
//! - `text.rs`: the produced text still held, and where a checkpoint may cut it.
//! - `waiters.rs`: the durable length and the flushes waiting for it.
//! - `policy.rs`: when the next checkpoint round is due.
//! - `backlog.rs`: the bound on text held only in memory.
//! - `lifecycle.rs`: live, sealing, ended, fenced; a reader's cancel; the seal's outcome.
//! - `shards.rs`: the fan-out shards the subscribers' cursors live in.
//! - `writers.rs`: the direct-delivery writer tasks (over any [`writers::WriterHost`]).
//! - `state.rs`: the parts above that live under the stream's lock, together.
//! - `stream.rs`: [`LiveStream`] itself: its lock, its signals, what runs after a critical
//!   section.
//! - `produce.rs`: push, fan-out, durable advance, flush registration.
//! - `checkpoint.rs`: the driver task that moves the durable position and seals.
//! - `join.rs`: the atomic join, returning a [`Join`] (a fixed replay or a [`Reader`]).
//! - `goes_on.rs`: a new stream seeded with the message an earlier one made (a continuation).
//!
//! What holds across them (each file states its own part):
//! - Everything that changes the stream happens under its one lock, so each step is atomic;
//!   the subscribers' cursors live in the shards, each under a lock of its own, taken after the
//!   stream's lock whenever both are held.
//! - Frames leave in production order, to the relay and to every subscriber.
//! - The durable position only moves forward, only to a length the store confirmed, and never
//!   past the produced length (contract P as the plane sees it); each move emits `durable`.
//! - The terminal `end` reports the durable length; a stream never takes a push after its seal
//!   was requested.
//! - The stream knows no plane and no subscription: its driver returns when it is to leave the
//!   plane's map, and a join is a value the plane wraps.

mod backlog;
mod checkpoint;
mod goes_on;
mod join;
mod lifecycle;
mod policy;
mod produce;
mod shards;
mod state;
mod stream;
mod text;
mod waiters;
mod writers;

pub(crate) use join::{Join, JoinUi, Reader};
pub(crate) use lifecycle::{wait_seal, Seal};
pub use produce::{Refusal, Refused};
pub use state::Position;
pub(crate) use stream::LiveStream;
pub(crate) use waiters::FlushWait;
