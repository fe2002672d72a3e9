//! Plane options, their defaults (docs/contract.md §7), and the construction-time check.
//!
//! Guarantees: [`PlaneOptions::default`] carries the contract's defaults; an option that would
//! do nothing in the chosen mode, or a combination that cannot work, is refused by
//! [`crate::Plane::new`] with an `invalid_options` error that says why, never silently ignored.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::Authorizer;
use crate::error::PlaneError;
use crate::relay::{Relay, RelayErrorHook, RelayTopology};
use crate::target::{DurableTarget, TargetCaps, TargetMode};
use twoplane_runtime::Backoff;

pub const DEFAULT_CHECKPOINT_CHARS: u64 = 512;
pub const DEFAULT_CHECKPOINT_INTERVAL_MS: u64 = 750;
pub const DEFAULT_CHECKPOINT_RETRIES: u32 = 3;
pub const DEFAULT_RETRY_BACKOFF_MS: u64 = 50;
pub const DEFAULT_RETAIN_CHARS: u64 = 64 * 1024;
pub const DEFAULT_LINGER_MS: u64 = 30_000;
/// Four times the old 1,024: subscribers read one shared log, so the bound no longer multiplies
/// by the number of subscribers, and a burst (a tool result or a cached answer pushed as a few
/// thousand deltas at once) must not outrun every subscriber before its task first runs.
pub const DEFAULT_MAX_QUEUED_FRAMES: usize = 4096;
pub const DEFAULT_RELAY_ATTACH_TIMEOUT_MS: u64 = 2_000;
/// The default checkpoint jitter bound is this fraction of the interval (1/5: 150 ms of 750).
pub const DEFAULT_INTERVAL_JITTER_DIVISOR: u64 = 5;
pub const DEFAULT_DRAIN_RELAY_MS: u64 = 5_000;
/// The longest display-rate write interval `PlaneOptions::write_interval_ms` takes.
pub const MAX_WRITE_INTERVAL_MS: u64 = 1_000;
/// Text one stream may hold only in memory: 4 Mi code units (8 MiB), minutes of any model's
/// output, so only a store that stopped answering reaches it.
pub const DEFAULT_MAX_UNDURABLE_CHARS: u64 = 4 * 1024 * 1024;
/// How long a stream takes text once the store stopped answering its checkpoints: 40 intervals.
pub const DEFAULT_MAX_UNDURABLE_MS: u64 = 30_000;
/// How long a seal keeps trying a store that fails: a database restart or a failover fits.
pub const DEFAULT_SEAL_DEADLINE_MS: u64 = 60_000;
/// The longest wait between two attempts of a seal (the backoff doubles up to it), so a store
/// that comes back is written to within this much of its return.
pub const SEAL_RETRY_CAP: Duration = Duration::from_secs(2);

/// Context for [`CheckpointErrorHook`]: the slice that failed.
#[derive(Clone, Copy, Debug)]
pub struct CheckpointErrorInfo<'a> {
    pub stream_id: &'a str,
    pub from: u64,
    pub seq: u64,
}

/// Called when a checkpoint exhausted its retries or a seal failed (default: `tracing::warn!`).
/// Readers still get every delta meanwhile; only the store falls behind, which is exactly why the
/// failure has to be reported rather than swallowed.
pub type CheckpointErrorHook = Arc<dyn Fn(CheckpointErrorInfo<'_>, &PlaneError) + Send + Sync>;

/// Called with the stream's id once, when a reader's cancel reaches a stream hosted here (a
/// checkpoint read the store's flag back, or [`crate::Plane::cancel`] was called), after the
/// stream's lock is released, on the thread that noticed it. It should only hand the id on (a
/// channel send): a producer that waits in [`crate::StreamHandle::pump`] is woken anyway; the
/// hook is for one place that watches every stream without a task per stream.
pub type CancelHook = Arc<dyn Fn(&str) + Send + Sync>;

/// Everything configurable about a plane. Build with struct update syntax over `default()`.
#[derive(Clone)]
pub struct PlaneOptions {
    /// Produced-but-not-durable code units that force a checkpoint. Default 512.
    pub chars: u64,
    /// Milliseconds after the first undurable push that force a checkpoint. Default 750.
    pub interval_ms: u64,
    /// Up to this many milliseconds are added to each interval deadline, drawn per stream and
    /// round, so streams opened in the same few milliseconds do not checkpoint together every
    /// interval. A deadline is always within `[interval_ms, interval_ms + interval_jitter_ms]`.
    /// Default `None`: a fifth of `interval_ms`; `Some(0)` turns jitter off; at most
    /// `interval_ms`.
    pub interval_jitter_ms: Option<u64>,
    /// Seed of the jitter draws, for reproducible tests. Default `None`: random per plane.
    pub jitter_seed: Option<u64>,
    /// Retries of a failing commit before the slice waits for the next trigger. Default 3.
    pub retries: u32,
    /// First retry backoff; it doubles per retry. Default 50.
    pub retry_backoff_ms: u64,
    /// Text kept below the durable length for late joiners. Callback mode only (default 65536);
    /// table mode keeps everything for compaction and refuses this option.
    pub retain_chars: Option<u64>,
    /// After the seal, how long late subscribers can still join (and get `end`). Default 30000.
    pub linger_ms: u64,
    /// Per-subscriber queue bound; overflow drops that subscriber with `stale`. Default 4096.
    pub max_queued_frames: usize,
    /// Bound on `relay.attach`. Default 2000; refused without a relay that attaches.
    pub relay_attach_timeout_ms: Option<u64>,
    /// This process's producer identity for the open compare-and-swap. Refused in table mode
    /// unless the target maps a `host` column. Default: a random per-plane token.
    pub host_id: Option<String>,
    /// Required: who may subscribe ([`crate::AllowAll`] opts out explicitly).
    pub authorizer: Option<Arc<dyn Authorizer>>,
    pub relay: Option<Arc<dyn Relay>>,
    /// How long [`crate::Plane::drain`] waits, after sealing, for the relay to write out what it
    /// queued (the `end` frames above all). Default 5000. Past it the drain returns anyway and
    /// says so in its report; readers on other instances then fall back to the store.
    pub drain_relay_ms: u64,
    /// Text (UTF-16 code units) one stream may hold that the store has not confirmed; a push
    /// that would pass it, onto a stream with text already waiting, is refused with
    /// `backpressure` and appends nothing. Default 4 Mi; at least `chars`.
    pub max_undurable_chars: u64,
    /// How long a stream takes pushes, with text waiting, after the oldest checkpoint round the
    /// store has not answered with progress began; past it, pushes are refused with
    /// `backpressure` until a checkpoint lands. Default 30000.
    pub max_undurable_ms: u64,
    /// How long a seal keeps retrying a failing store (backing off from `retry_backoff_ms`, at
    /// most 2 s between attempts) before the stream ends at the durable length it has. Readers
    /// get `end` only when the seal landed or this passed. Default 60000.
    pub seal_deadline_ms: u64,
    /// How long [`crate::Plane::drain`] waits for the seals; a seal still trying then is
    /// reported failed with the prefix that is durable. Default `None`: the seal deadline plus
    /// one second, so every seal ends by its own deadline first.
    pub drain_seal_ms: Option<u64>,
    /// Refused without a relay (it would never be called).
    pub on_relay_error: Option<RelayErrorHook>,
    pub on_checkpoint_error: Option<CheckpointErrorHook>,
    pub on_cancel: Option<CancelHook>,
    /// Display-rate writes (docs/server.md, "Display-rate writes"): a frame that would reach a
    /// stream's readers within this many milliseconds of its previous write waits for the end of
    /// that interval, and everything that arrived meanwhile goes out merged, as one write per
    /// reader; a reader of a stream hosted elsewhere is held to it by its relay leg. Default 0:
    /// off, every frame is written as it comes (`twoplane serve` defaults to 16). At most 1000.
    pub write_interval_ms: u64,
}

impl Default for PlaneOptions {
    fn default() -> Self {
        PlaneOptions {
            chars: DEFAULT_CHECKPOINT_CHARS,
            interval_ms: DEFAULT_CHECKPOINT_INTERVAL_MS,
            interval_jitter_ms: None,
            jitter_seed: None,
            retries: DEFAULT_CHECKPOINT_RETRIES,
            retry_backoff_ms: DEFAULT_RETRY_BACKOFF_MS,
            retain_chars: None,
            linger_ms: DEFAULT_LINGER_MS,
            max_queued_frames: DEFAULT_MAX_QUEUED_FRAMES,
            relay_attach_timeout_ms: None,
            host_id: None,
            authorizer: None,
            relay: None,
            drain_relay_ms: DEFAULT_DRAIN_RELAY_MS,
            max_undurable_chars: DEFAULT_MAX_UNDURABLE_CHARS,
            max_undurable_ms: DEFAULT_MAX_UNDURABLE_MS,
            seal_deadline_ms: DEFAULT_SEAL_DEADLINE_MS,
            drain_seal_ms: None,
            on_relay_error: None,
            on_checkpoint_error: None,
            on_cancel: None,
            write_interval_ms: 0,
        }
    }
}

impl PlaneOptions {
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    pub fn with_relay(mut self, relay: Arc<dyn Relay>) -> Self {
        self.relay = Some(relay);
        self
    }
}

impl fmt::Debug for PlaneOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlaneOptions")
            .field("chars", &self.chars)
            .field("interval_ms", &self.interval_ms)
            .field("interval_jitter_ms", &self.interval_jitter_ms)
            .field("jitter_seed", &self.jitter_seed)
            .field("retries", &self.retries)
            .field("retry_backoff_ms", &self.retry_backoff_ms)
            .field("retain_chars", &self.retain_chars)
            .field("linger_ms", &self.linger_ms)
            .field("max_queued_frames", &self.max_queued_frames)
            .field("relay_attach_timeout_ms", &self.relay_attach_timeout_ms)
            .field("host_id", &self.host_id)
            .field("authorizer", &self.authorizer.is_some())
            .field("relay", &self.relay.is_some())
            .field("drain_relay_ms", &self.drain_relay_ms)
            .field("max_undurable_chars", &self.max_undurable_chars)
            .field("max_undurable_ms", &self.max_undurable_ms)
            .field("seal_deadline_ms", &self.seal_deadline_ms)
            .field("drain_seal_ms", &self.drain_seal_ms)
            .field("on_relay_error", &self.on_relay_error.is_some())
            .field("on_checkpoint_error", &self.on_checkpoint_error.is_some())
            .field("on_cancel", &self.on_cancel.is_some())
            .field("write_interval_ms", &self.write_interval_ms)
            .finish()
    }
}

/// The bound on text a stream holds only in memory (`hosted/backlog.rs`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BacklogLimits {
    pub max_chars: u64,
    pub max_age: Duration,
}

/// The options after the check, with the mode's defaults applied.
pub(crate) struct Config {
    pub chars: u64,
    pub interval: Duration,
    /// The interval deadlines' jitter (`jitter.rs`).
    pub jitter: crate::jitter::Jitter,
    /// Every store call's retries (`retries`, backing off from `retry_backoff_ms`).
    pub retry: Backoff,
    /// `None`: keep everything (table mode).
    pub retain_chars: Option<u64>,
    pub linger: Duration,
    pub max_queued_frames: usize,
    pub attach_timeout: Duration,
    pub host_token: String,
    pub caps: TargetCaps,
    /// Streams may carry parts (docs/contract.md §8): the target keeps them, and the plane keeps
    /// the whole text (the seal folds every run and event into the stored document).
    pub parts: bool,
    pub target: Arc<dyn DurableTarget>,
    pub authorizer: Arc<dyn Authorizer>,
    pub relay: Option<Arc<dyn Relay>>,
    pub drain_relay: Duration,
    pub backlog: BacklogLimits,
    /// The seal's schedule: no count, until `seal_deadline` after it starts.
    pub seal_retry: Backoff,
    pub seal_deadline: Duration,
    pub drain_seal: Duration,
    pub topology: RelayTopology,
    pub on_relay_error: Option<RelayErrorHook>,
    pub on_checkpoint_error: Option<CheckpointErrorHook>,
    pub on_cancel: Option<CancelHook>,
    /// Zero: every frame is published as it comes (`display.rs`).
    pub write_interval: Duration,
    /// The plane's one timer for the display-rate writes due later (`display_clock.rs`).
    pub display_clock: Arc<crate::display_clock::DisplayClock>,
}

impl Config {
    pub fn resolve(options: PlaneOptions, target: Arc<dyn DurableTarget>) -> Result<Config, PlaneError> {
        let caps = target.caps();
        let bad = PlaneError::invalid_options;
        if options.chars == 0 {
            return Err(bad("chars must be at least 1 (a checkpoint every 0 code units is a loop)"));
        }
        if options.interval_ms == 0 {
            return Err(bad("interval_ms must be at least 1"));
        }
        let jitter_ms = options.interval_jitter_ms.unwrap_or(options.interval_ms / DEFAULT_INTERVAL_JITTER_DIVISOR);
        if jitter_ms > options.interval_ms {
            return Err(bad("interval_jitter_ms must be at most interval_ms (the jitter spreads an interval, it does not replace it)"));
        }
        if options.max_queued_frames == 0 {
            return Err(bad("max_queued_frames must be at least 1 (a subscriber needs room for one frame)"));
        }
        if options.write_interval_ms > MAX_WRITE_INTERVAL_MS {
            return Err(bad(
                "write_interval_ms must be at most 1000: a reader would wait more than a second for text \
                 the server already has",
            ));
        }
        if options.retries > 20 {
            return Err(bad("retries above 20 would back off for days; use a smaller number"));
        }
        if options.max_undurable_chars < options.chars {
            return Err(bad("max_undurable_chars must be at least chars: a stream would refuse text before its \
                 first checkpoint could start"));
        }
        if options.max_undurable_ms == 0 {
            return Err(bad("max_undurable_ms must be at least 1 (0 would refuse text while any round is in flight)"));
        }
        let authorizer = options.authorizer.ok_or_else(|| {
            bad("an authorizer is required: subscribing is reading someone's stream, so there is no default-allow \
                 (pass twoplane_stream::AllowAll to opt out explicitly)")
        })?;
        let retain_chars = match (caps.mode, options.retain_chars) {
            (TargetMode::Tables, Some(_)) => {
                return Err(bad(
                    "retain_chars is callback-mode only: table mode keeps the whole text because the seal \
                     compacts it into the message body",
                ))
            }
            (TargetMode::Tables, None) => None,
            (TargetMode::Callback, r) => Some(r.unwrap_or(DEFAULT_RETAIN_CHARS)),
        };
        if caps.mode == TargetMode::Tables && options.host_id.is_some() && !caps.has_host {
            return Err(bad("host_id does nothing in table mode until the target maps a host column to persist it"));
        }
        let topology = options.relay.as_ref().map(|r| r.topology()).unwrap_or_default();
        match &options.relay {
            None => {
                if options.relay_attach_timeout_ms.is_some() || options.on_relay_error.is_some() {
                    return Err(bad("relay_attach_timeout_ms and on_relay_error do nothing without a relay"));
                }
            }
            Some(_) => {
                if !topology.publish && !topology.attach {
                    return Err(bad(
                        "the relay reports neither publish nor attach, so it cannot carry frames either way",
                    ));
                }
                if !topology.attach && options.relay_attach_timeout_ms.is_some() {
                    return Err(bad("relay_attach_timeout_ms does nothing: the relay does not attach"));
                }
            }
        }
        let host_token = options.host_id.unwrap_or_else(random_token);
        Ok(Config {
            chars: options.chars,
            interval: Duration::from_millis(options.interval_ms),
            jitter: crate::jitter::Jitter::new(jitter_ms, options.jitter_seed.unwrap_or_else(random_seed)),
            retry: Backoff::new(Duration::from_millis(options.retry_backoff_ms), options.retries),
            retain_chars,
            linger: Duration::from_millis(options.linger_ms),
            max_queued_frames: options.max_queued_frames,
            attach_timeout: Duration::from_millis(
                options.relay_attach_timeout_ms.unwrap_or(DEFAULT_RELAY_ATTACH_TIMEOUT_MS),
            ),
            host_token,
            caps,
            parts: caps.has_parts && retain_chars.is_none(),
            target,
            authorizer,
            relay: options.relay,
            drain_relay: Duration::from_millis(options.drain_relay_ms),
            backlog: BacklogLimits {
                max_chars: options.max_undurable_chars,
                max_age: Duration::from_millis(options.max_undurable_ms),
            },
            seal_retry: Backoff::new(Duration::from_millis(options.retry_backoff_ms.max(1)), 0)
                .with_cap(SEAL_RETRY_CAP),
            seal_deadline: Duration::from_millis(options.seal_deadline_ms),
            drain_seal: Duration::from_millis(
                options.drain_seal_ms.unwrap_or_else(|| options.seal_deadline_ms.saturating_add(1_000)),
            ),
            topology,
            on_relay_error: options.on_relay_error,
            on_checkpoint_error: options.on_checkpoint_error,
            on_cancel: options.on_cancel,
            display_clock: Arc::default(),
            write_interval: Duration::from_millis(options.write_interval_ms),
        })
    }
}

/// A per-plane jitter seed, from the same per-process randomness as [`random_token`].
fn random_seed() -> u64 {
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// A per-plane stand-in for `host_id`: unique enough to tell two producer processes apart.
fn random_token() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    // RandomState is seeded from the OS per process: a cheap source of randomness without a
    // dependency.
    let mut h = RandomState::new().build_hasher();
    h.write_u64(nanos);
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("plane-{}-{:016x}", std::process::id(), h.finish())
}
