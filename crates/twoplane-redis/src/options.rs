//! Adapter options, their defaults, and the construction-time check.
//!
//! Guarantees: [`RedisRelayOptions::default`] and [`LogOptions::default`] carry the documented
//! defaults; a value that cannot work (a zero-sized queue, a zero timeout, an empty prefix) is
//! refused by `connect` with a message that says why, never silently adjusted. Options that
//! only the log topology uses live in [`LogOptions`], so a broadcast relay cannot be handed a
//! setting it would ignore.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use twoplane_stream::RelayErrorHook;

use crate::error::RedisRelayError;

/// Key and channel prefix: `<prefix>:live:<streamId>` (pub/sub), `<prefix>:log:<streamId>` (log).
pub const DEFAULT_PREFIX: &str = "twoplane";
/// Frames the background writer may hold before `publish` starts dropping them.
pub const DEFAULT_PUBLISH_QUEUE: usize = 4096;
/// How long a failed write is retried (a Redis restart) before its frames are given up.
pub const DEFAULT_PUBLISH_RETRY_MS: u64 = 10_000;
/// A source that receives nothing at all for this long ends with `absent`.
pub const DEFAULT_FIRST_FRAME_TIMEOUT_MS: u64 = 10_000;
/// A source whose stream falls silent for this long ends with `stale`.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 60_000;
/// Messages buffered per attached reader before it is dropped as too slow.
pub const DEFAULT_READER_BUFFER: usize = 1024;
/// Bound on dialing Redis (and on each command of the writer and the replay).
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 2_000;
/// Entries kept per stream by the log (`XADD ... MAXLEN ~`).
pub const DEFAULT_MAX_LEN: usize = 10_000;
/// Expiry of a log key, renewed on every append (the log of a producer that died goes away).
pub const DEFAULT_LIVE_TTL_MS: u64 = 60 * 60 * 1000;
/// Expiry of a log key after its stream's `end`.
pub const DEFAULT_END_TTL_MS: u64 = 60_000;

/// Options both adapters share. Build with struct update syntax over `default()`.
#[derive(Clone)]
pub struct RedisRelayOptions {
    /// Prefix of every key and channel. Default `twoplane`.
    pub prefix: String,
    /// Capacity of the queue between `publish` and the writer task. Default 4096.
    pub publish_queue: usize,
    /// How long the writer retries a failed write before dropping it. Default 10000.
    pub publish_retry_ms: u64,
    /// Nothing received at all for this long: the source ends with `absent`. Default 10000.
    pub first_frame_timeout_ms: u64,
    /// The stream silent for this long: the source ends with `stale`. Default 60000.
    pub idle_timeout_ms: u64,
    /// Messages buffered per attached reader. Default 1024.
    pub reader_buffer: usize,
    /// Bound on connecting and on single commands. Default 2000.
    pub connect_timeout_ms: u64,
    /// Where failures of the background writer go (they happen after `publish` returned).
    /// Default: `tracing::warn!`.
    pub on_error: Option<RelayErrorHook>,
    /// Trusted CA certificates (PEM) for a `rediss://` URL instead of the system's roots.
    /// Default: none.
    pub tls_ca_file: Option<PathBuf>,
}

impl Default for RedisRelayOptions {
    fn default() -> Self {
        RedisRelayOptions {
            prefix: DEFAULT_PREFIX.to_owned(),
            publish_queue: DEFAULT_PUBLISH_QUEUE,
            publish_retry_ms: DEFAULT_PUBLISH_RETRY_MS,
            first_frame_timeout_ms: DEFAULT_FIRST_FRAME_TIMEOUT_MS,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            reader_buffer: DEFAULT_READER_BUFFER,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            on_error: None,
            tls_ca_file: None,
        }
    }
}

impl fmt::Debug for RedisRelayOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRelayOptions")
            .field("prefix", &self.prefix)
            .field("publish_queue", &self.publish_queue)
            .field("publish_retry_ms", &self.publish_retry_ms)
            .field("first_frame_timeout_ms", &self.first_frame_timeout_ms)
            .field("idle_timeout_ms", &self.idle_timeout_ms)
            .field("reader_buffer", &self.reader_buffer)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("on_error", &self.on_error.is_some())
            .field("tls_ca_file", &self.tls_ca_file)
            .finish()
    }
}

impl RedisRelayOptions {
    pub(crate) fn check(&self) -> Result<(), RedisRelayError> {
        let bad = |m: &str| Err(RedisRelayError::new(m.to_owned()));
        if self.prefix.is_empty() {
            return bad("prefix is empty: keys of unrelated applications would collide");
        }
        if self.publish_queue == 0 {
            return bad("publish_queue must be at least 1 (a zero queue drops every frame)");
        }
        if self.reader_buffer == 0 {
            return bad("reader_buffer must be at least 1 (a reader needs room for one message)");
        }
        if self.first_frame_timeout_ms == 0 || self.idle_timeout_ms == 0 || self.connect_timeout_ms == 0 {
            return bad("first_frame_timeout_ms, idle_timeout_ms and connect_timeout_ms must be at least 1");
        }
        Ok(())
    }

    pub(crate) fn first_frame_timeout(&self) -> Duration {
        Duration::from_millis(self.first_frame_timeout_ms)
    }

    pub(crate) fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }

    pub(crate) fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }
}

/// Options of the log topology ([`crate::LogRelay`]).
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// Entries kept per stream (`MAXLEN ~`, so Redis may keep slightly more). A join below the
    /// oldest retained entry ends with `stale`. Default 10000.
    pub max_len: usize,
    /// Expiry of a stream's key, renewed on every append. Default one hour.
    pub live_ttl_ms: u64,
    /// Expiry after the stream's `end`: how long a late reader can still replay it. Default 60000.
    pub end_ttl_ms: u64,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions { max_len: DEFAULT_MAX_LEN, live_ttl_ms: DEFAULT_LIVE_TTL_MS, end_ttl_ms: DEFAULT_END_TTL_MS }
    }
}

impl LogOptions {
    pub(crate) fn check(&self) -> Result<(), RedisRelayError> {
        if self.max_len == 0 {
            return Err(RedisRelayError::new("max_len must be at least 1 (an empty log serves nobody)"));
        }
        if self.live_ttl_ms == 0 || self.end_ttl_ms == 0 {
            return Err(RedisRelayError::new("live_ttl_ms and end_ttl_ms must be at least 1"));
        }
        Ok(())
    }
}
