//! twoplane-redis: relay adapters that carry the live plane between instances over Redis.
//!
//! A reader often lands on an instance that does not host its stream. The plane then asks its
//! relay (`twoplane_stream::Relay`) for the frames; these adapters implement it twice:
//!
//! - [`BroadcastRelay`] (pub/sub, one channel per stream): `publish` mirrors each produced
//!   frame; `attach` subscribes and serves readers from the live position on. Pub/sub keeps no
//!   history, so a reader that joins behind the live position ends with `stale` (it reads the
//!   store). Cheapest; right when readers join at the start of a stream, or when a rejoin may
//!   fall back to the store.
//! - [`LogRelay`] (Redis Streams, one key per stream, trimmed to a bounded length): `attach`
//!   replays the retained entries from the reader's offset, then follows new ones. Serves any
//!   join offset still retained; right when readers join late, reload, or reconnect.
//!
//! [`Topology`] and [`connect_relay`] pick one by name (a deployment's `--relay broadcast|log`).
//!
//! What both guarantee:
//! - `publish` never blocks the producer: frames go to one background task over a bounded
//!   queue; a full queue drops the frame and returns an error (the plane reports it), and
//!   failed writes are retried for a while (Redis restarts) and then reported.
//! - A source yields only frames the conform pass would accept unchanged: replays (a reconnect
//!   re-delivering, a retried write landing twice) are absorbed here; a join the transport cannot
//!   serve ends with `stale`; a loss in the middle of a stream (dropped messages, a trimmed log,
//!   a lost connection) ends the source with an error, which the plane reports and turns into
//!   `stale` at the delivered position. Frames are never synthesized, reordered or altered.
//! - Each produced stream carries a generation token, so frames of two producers that used the
//!   same stream id one after the other are never spliced together.
//! - A source never hangs: nothing at all within `first_frame_timeout_ms` ends it with `absent`,
//!   and silence within a stream for `idle_timeout_ms` ends it with `stale`.
//! - Nothing panics on what Redis returns: a payload that is not a frame is an adapter error.
//!
//! Errors: synchronous ones (a full publish queue) are returned to the plane, which reports them
//! through its relay hook; attach failures are returned from `attach` (the plane answers
//! `absent`); a failing source yields an error (the plane reports it and answers `stale`).
//! Failures of the background writer happen after `publish` returned, so they go to
//! [`RedisRelayOptions::on_error`] (pass the plane's own hook to see everything in one place),
//! or to `tracing` without one.

mod broadcast;
mod cursor;
mod envelope;
mod error;
mod log;
mod options;
mod publisher;
mod source;
mod tls;
mod topology;

pub use broadcast::BroadcastRelay;
pub use error::RedisRelayError;
pub use log::LogRelay;
pub use options::{
    LogOptions, RedisRelayOptions, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_END_TTL_MS, DEFAULT_FIRST_FRAME_TIMEOUT_MS,
    DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_LIVE_TTL_MS, DEFAULT_MAX_LEN, DEFAULT_PREFIX, DEFAULT_PUBLISH_QUEUE,
    DEFAULT_PUBLISH_RETRY_MS, DEFAULT_READER_BUFFER,
};
pub use topology::{connect_relay, Topology};
