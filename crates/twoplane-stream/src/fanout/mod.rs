//! One shard of a stream's fan-out: a frame log and its subscribers' cursors. A stream spreads
//! its subscribers over a few shards (`hosted/shards.rs`), each under its own lock, and
//! publishes every frame to each shard in use; everything below holds within a shard, and
//! across shards each subscriber still sees the same frames in the same order.
//!
//! It is plain storage: no tokio, no stream, no subscription. The hosted stream drives it under
//! the shard's lock and acts on what it returns ([`Wakes`], [`Delivery`], [`Drained`]) after.
//!
//! Each produced frame is stored once in a log shared by every subscriber, as an `Arc<MessageFrame>`
//! and, once any subscriber wants it as server-sent events, as its encoded SSE bytes. A
//! subscriber is a small slot holding a cursor into that log, its own join replay (a few frames
//! and a span of the stream's shared text blocks, `replay.rs`), and a waker; it holds no copy of
//! any log frame, nor of the text.
//!
//! The files, each using only those listed before it; each states its own guarantees:
//! - `wake.rs`: who waits for the next change and whom a change wakes: one wake-up per push,
//!   only for the waiting, and a change counter to tell without the lock that nothing changed.
//! - `log.rs`: the frame log and its cursors: ordered, gap-free, trimmed below the slowest
//!   reader.
//! - `encoding.rs`: the SSE and UI encodings: each log frame encoded once and its bytes shared
//!   by every SSE reader's write.
//! - `direct.rs`: direct delivery's bookkeeping: each handed-over slot's writer, and which are
//!   due (the writer tasks are `hosted/writers.rs`).
//! - `shard.rs`: [`FanOut`] itself: the slots (one part from each file above) and the
//!   operations that join them: attach, publish with its bound, drain, hand over and take due.

mod direct;
mod encoding;
mod log;
mod shard;
mod wake;

#[cfg(test)]
mod tests;

pub(crate) use direct::{Delivery, Due, MAX_WRITERS};
pub(crate) use encoding::SseDrained;
pub(crate) use shard::FanOut;
pub(crate) use wake::{Drained, Wakes};
