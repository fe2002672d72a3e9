//! The SSE endpoint's settings ([`SseConfig`]) and its counters ([`SseStats`]), shared by every
//! reader endpoint (this one and the AI SDK's resume route) and by the direct SSE path.
//!
//! Guarantees:
//! - A setting is read where a reader is admitted or its body built; nothing here changes while
//!   the server runs.
//! - Counting costs one relaxed atomic add per event; [`SseStats::active`] (what the
//!   server-wide bound compares against) is sequentially consistent.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use twoplane_core::sse::DEFAULT_KEEP_ALIVE_MS;

use crate::conn_limits::SubscriberCaps;

/// Settings of the SSE endpoint.
#[derive(Clone, Debug)]
pub struct SseConfig {
    /// Interval of the `: ping` comment. Default 15 s (docs/contract.md §5).
    pub keep_alive: Duration,
    /// A batch stops growing at this many bytes; the rest goes in the next write. Bounds the
    /// memory one connection can hold between the subscription and the socket.
    pub max_batch_bytes: usize,
    /// At most this many subscriptions at once; past it a subscribe is `503` (none: no bound).
    pub max_subscribers: Option<usize>,
    /// Bounds per stream and per client address; past one a subscribe is `503` with the JSON
    /// error `too_many_subscribers` and a `Retry-After` (none: no such bounds).
    pub subscriber_caps: Option<Arc<SubscriberCaps>>,
}

impl SseConfig {
    /// A 15 s keep-alive (docs/contract.md §5), 32 KiB batches, no bound on subscribers.
    pub const DEFAULT: SseConfig = SseConfig {
        keep_alive: Duration::from_millis(DEFAULT_KEEP_ALIVE_MS),
        max_batch_bytes: 32 * 1024,
        max_subscribers: None,
        subscriber_caps: None,
    };
}

impl Default for SseConfig {
    fn default() -> Self {
        SseConfig::DEFAULT
    }
}

/// Counters of the endpoint, shared by every response it serves (tests and health checks read
/// them; updating them is one relaxed atomic add per event).
#[derive(Debug, Default)]
pub struct SseStats {
    /// SSE responses whose body (and so whose subscription) is still alive.
    pub active: AtomicUsize,
    /// Responses started.
    pub opened: AtomicU64,
    /// Frames encoded.
    pub frames: AtomicU64,
    /// Body chunks handed to the writer (one per wakeup).
    pub writes: AtomicU64,
    /// Bytes of events in those chunks (keep-alive comments and chunk framing not counted).
    pub bytes: AtomicU64,
    /// Keep-alive comments sent.
    pub pings: AtomicU64,
    /// Times a caught-up subscription was handed to its stream's writer task
    /// ([`crate::sse_conn`]'s direct delivery).
    pub handovers: AtomicU64,
    /// Times direct delivery found the socket full and handed the rest back to the connection.
    pub holds: AtomicU64,
    /// Of the `active` bodies, those of the AI SDK's resume route (`crate::ui_stream`).
    pub ui_active: AtomicUsize,
}

impl SseStats {
    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }
}
