//! The producer API of `twoplane serve`: an application in any language opens a stream for a
//! message row, sends the model's text, and seals it, over HTTP (docs/server.md, "Producer
//! API", is the reference; the handlers are in [`routes`]).
//!
//! Guarantees:
//! - The same contract as the plane's producer handle ([`twoplane_stream::StreamHandle`]): the
//!   open is the plane's single-flight claim of the row; every appended piece is a delta pushed
//!   in arrival order; flush resolves once the store holds everything so far; close and fail
//!   seal; a reader's cancel seals the stream `cancelled` and is reported to the producer.
//! - Offsets are UTF-16 code units (docs/contract.md §0). An append that names an offset other
//!   than the stream's produced length is refused with that length, and the check and the push
//!   happen under one lock per stream, so a retried append can never duplicate or skip text.
//! - A stream stays registered after its seal for [`Limits::linger`], so a late or retried call
//!   learns how it ended (`cancelled`, `stream_closed`) instead of `not_open`; a stream nobody
//!   touched for [`Limits::idle`] is sealed `interrupted` (its producer is presumed gone).

mod body;
mod errors;
mod routes;
mod rows;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use twoplane_stream::{Plane, PlaneError, StreamHandle, StreamStatus};

use crate::access::Access;
use crate::lock::lock;
use crate::store::Database;

pub use errors::ApiError;

/// Bounds of the producer API.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest body of one `append` request, in bytes.
    pub max_delta_bytes: usize,
    /// Largest streaming `body` request, in bytes.
    pub max_body_bytes: u64,
    /// A stream with no producer call (and no body in flight) for this long is sealed
    /// `interrupted`.
    pub idle: Duration,
    /// How long a sealed stream still answers calls with how it ended.
    pub linger: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_delta_bytes: 1 << 20,
            max_body_bytes: 64 << 20,
            idle: Duration::from_secs(300),
            linger: Duration::from_secs(60),
        }
    }
}

/// One stream opened through this API.
pub(crate) struct Producing {
    pub id: String,
    pub handle: StreamHandle,
    /// Held across an offset check and its push, so appends to one stream are serialized.
    pub order: Mutex<()>,
    /// Turns true when the plane reports a reader's cancel (a streaming body ends on it). Still a
    /// watch because `routes::body` subscribes to it; a `CancellationToken` (`is_cancelled`,
    /// `cancelled`) says the same and is the crate's stop signal, so that reader should move to
    /// one and this field with it.
    pub cancel: watch::Sender<bool>,
    /// Stops the cancel watcher once the stream is sealed.
    stop_watch: CancellationToken,
    /// A streaming body is being read right now.
    pub body_active: AtomicBool,
    touched: Mutex<Instant>,
    /// How the stream was sealed (the first seal wins) and when.
    sealed: Mutex<Option<(StreamStatus, Instant)>>,
}

impl Producing {
    fn new(handle: StreamHandle) -> Arc<Producing> {
        Arc::new(Producing {
            id: handle.stream_id().to_owned(),
            handle,
            order: Mutex::new(()),
            cancel: watch::channel(false).0,
            stop_watch: CancellationToken::new(),
            body_active: AtomicBool::new(false),
            touched: Mutex::new(Instant::now()),
            sealed: Mutex::new(None),
        })
    }

    pub fn touch(&self) {
        *lock(&self.touched) = Instant::now();
    }

    /// How the stream was sealed through this API, if it was.
    pub fn ended(&self) -> Option<StreamStatus> {
        lock(&self.sealed).map(|(e, _)| e)
    }

    /// Seal `complete` (or `cancelled` after a reader's cancel), or `error` with `message`. The
    /// first seal wins; a later call waits for it and reports it.
    pub async fn seal(&self, error: Option<&str>) -> (StreamStatus, Result<(), PlaneError>) {
        let ended = {
            let mut sealed = lock(&self.sealed);
            let ended = match (*sealed, error) {
                (Some((ended, _)), _) => ended,
                // Sealed by the plane itself (a drain at shutdown): its seal stands.
                (None, _) if self.handle.is_sealed() => StreamStatus::Interrupted,
                (None, Some(_)) => StreamStatus::Error,
                (None, None) if self.handle.cancelled() => StreamStatus::Cancelled,
                (None, None) => StreamStatus::Complete,
            };
            if sealed.is_none() {
                *sealed = Some((ended, Instant::now()));
            }
            ended
        };
        self.stop_watch.cancel();
        // The plane keeps the first seal asked for and hands every caller its outcome.
        let outcome = match error {
            Some(message) if ended == StreamStatus::Error => self.handle.fail(message).await,
            _ => self.handle.close().await,
        };
        (ended, outcome)
    }

    /// Watch for a reader's cancel until the stream is sealed; on one, tell a streaming body and
    /// seal `cancelled` so the readers end.
    async fn watch_cancel(self: Arc<Self>) {
        let cancelled = async {
            // `pump` of a source that never yields returns exactly when the store reports a cancel.
            let _ = self.handle.pump(futures::stream::pending::<&str>()).await;
        };
        tokio::select! {
            () = cancelled => {
                if self.handle.cancelled() {
                    tracing::info!(stream_id = %self.id, seq = self.handle.seq(), "a reader cancelled the stream");
                    self.cancel.send_replace(true);
                    let _ = self.seal(None).await;
                }
            }
            () = self.stop_watch.cancelled() => {}
        }
    }
}

/// The streams this server opened for producers.
#[derive(Clone)]
pub(crate) struct Producers {
    pub plane: Plane,
    pub db: Database,
    pub access: Arc<Access>,
    pub limits: Limits,
    streams: Arc<Mutex<HashMap<String, Arc<Producing>>>>,
}

impl Producers {
    pub fn get(&self, id: &str) -> Option<Arc<Producing>> {
        lock(&self.streams).get(id).cloned()
    }

    /// Register a stream the plane just opened and start watching it for a cancel.
    pub fn adopt(&self, handle: StreamHandle) -> Arc<Producing> {
        let producing = Producing::new(handle);
        lock(&self.streams).insert(producing.id.clone(), producing.clone());
        tokio::spawn(producing.clone().watch_cancel());
        producing
    }

    /// Forget sealed streams after the linger time, and seal `interrupted` the streams whose
    /// producer went quiet for the idle time. Runs until the process ends.
    async fn sweep(self) {
        let period = (self.limits.linger.min(self.limits.idle) / 4).max(Duration::from_millis(100));
        loop {
            tokio::time::sleep(period).await;
            let now = Instant::now();
            let mut gone = Vec::new();
            lock(&self.streams).retain(|_, p| {
                if let Some((_, at)) = *lock(&p.sealed) {
                    return now.duration_since(at) < self.limits.linger;
                }
                let idle = now.duration_since(*lock(&p.touched)) >= self.limits.idle;
                if idle && !p.body_active.load(std::sync::atomic::Ordering::SeqCst) {
                    gone.push(p.clone());
                    return false;
                }
                true
            });
            for p in gone {
                tracing::warn!(stream_id = %p.id, seq = p.handle.seq(), "producer went quiet; sealing the stream interrupted");
                *lock(&p.sealed) = Some((StreamStatus::Interrupted, now));
                // The watcher's reference goes; the last one dropping the handle seals it
                // `interrupted` (the plane's rule for a producer that disappeared).
                p.stop_watch.cancel();
            }
        }
    }
}

/// The producer routes (`/v1/streams/...`, behind [`crate::access::require_producer`]) and the
/// reader's cancel route (`POST /v1/streams/{id}/cancel`, behind a read token). Starts the
/// sweeper of idle and sealed streams on the current runtime.
pub fn routes(plane: Plane, db: Database, access: Arc<Access>, limits: Limits) -> Router {
    let producers = Producers { plane, db, access, limits, streams: Arc::new(Mutex::new(HashMap::new())) };
    tokio::spawn(producers.clone().sweep());
    routes::router(producers)
}
