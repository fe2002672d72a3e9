//! The plane: hosts streams, opens them on the store, routes subscribers, drains on shutdown.
//!
//! Guarantees:
//! - `open` checks the store's precondition once (row present, `seq = 0`, not `streaming`),
//!   then marks the row `streaming` with retries (with a host column: a compare-and-swap whose
//!   read-back names the winner); one plane hosts at most one live stream per id.
//! - `subscribe` asks the authorizer before anything is looked up, and a denial is the same
//!   error whether or not the stream exists. Then: hosted here, one atomic replay; otherwise
//!   the relay (bounded, conformed), otherwise `absent`.
//! - `drain` seals every live stream `interrupted` and refuses new streams from then on, then
//!   waits (bounded) for the relay to write out the `end` frames it queued.
//! - A sealed stream stays joinable for `linger_ms`, then is evicted.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::{FutureExt, Stream, StreamExt};
use twoplane_core::{StreamStatus, Text};

use crate::auth::AuthRequest;
use crate::error::{PlaneError, PlaneErrorKind};
use crate::live::{FlushWait, LiveStream, Seal};
use crate::options::{Config, PlaneOptions};
use crate::relay_leg;
use crate::subscription::Subscription;
use crate::target::{DurableTarget, OpenRequest, TargetCaps};

/// A cheaply cloneable handle on one plane.
#[derive(Clone)]
pub struct Plane {
    shared: Arc<PlaneShared>,
}

pub(crate) struct PlaneShared {
    cfg: Arc<Config>,
    live: Mutex<HashMap<String, Arc<LiveStream>>>,
    /// Ids with an `open` in flight, so two opens of one id in one process cannot both win.
    opening: Mutex<HashSet<String>>,
    draining: AtomicBool,
}

impl PlaneShared {
    fn live(&self) -> MutexGuard<'_, HashMap<String, Arc<LiveStream>>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remove `stream` from the map if it is still the entry for its id (a newer stream with
    /// the same id may have replaced it).
    pub(crate) fn evict(&self, stream: &Arc<LiveStream>) {
        let mut live = self.live();
        if live.get(&stream.id).is_some_and(|s| Arc::ptr_eq(s, stream)) {
            live.remove(&stream.id);
        }
    }
}

/// Clears an `opening` reservation however `open` ends (including cancellation).
struct OpeningGuard<'a> {
    shared: &'a PlaneShared,
    id: String,
}

impl Drop for OpeningGuard<'_> {
    fn drop(&mut self) {
        self.shared.opening.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

/// The outcome of [`Plane::drain`].
#[derive(Debug, Default)]
pub struct DrainReport {
    /// Streams whose seal landed.
    pub sealed: Vec<String>,
    /// Streams whose seal came up short, with why.
    pub failed: Vec<(String, PlaneError)>,
    /// The relay's flush after the seals: `None` without a relay that publishes, `Some(Ok)` when
    /// everything it had queued left the process, `Some(Err)` when it failed or ran past
    /// [`PlaneOptions::drain_relay_ms`](crate::PlaneOptions::drain_relay_ms).
    pub relay_flush: Option<Result<(), String>>,
}

impl Plane {
    /// Check the options against the target and build the plane. See [`PlaneOptions`] for what
    /// is refused.
    pub fn new(options: PlaneOptions, target: Arc<dyn DurableTarget>) -> Result<Plane, PlaneError> {
        let cfg = Config::resolve(options, target)?;
        Ok(Plane {
            shared: Arc::new(PlaneShared {
                cfg: Arc::new(cfg),
                live: Mutex::new(HashMap::new()),
                opening: Mutex::new(HashSet::new()),
                draining: AtomicBool::new(false),
            }),
        })
    }

    /// The token this plane writes into a mapped `host` column.
    pub fn host_token(&self) -> &str {
        &self.shared.cfg.host_token
    }

    pub fn target_caps(&self) -> TargetCaps {
        self.shared.cfg.caps
    }

    /// Whether a stream with this id is hosted here (live or lingering after its seal).
    pub fn is_hosted(&self, stream_id: &str) -> bool {
        self.shared.live().contains_key(stream_id)
    }

    /// Ids of the streams hosted here.
    pub fn hosted_ids(&self) -> Vec<String> {
        self.shared.live().keys().cloned().collect()
    }

    /// A reader's cancel of a stream hosted here, noticed at once: its handle reports
    /// `cancelled`, `pump` stops and `close` seals `cancelled`, exactly as when a checkpoint reads
    /// the store's cancel flag back. That read-back stays the way a cancel set in the store
    /// reaches the host from anywhere else, so a caller sets the flag first. `false` when the
    /// stream is not hosted here or is already sealed.
    pub fn cancel(&self, stream_id: &str) -> bool {
        let stream = self.shared.live().get(stream_id).cloned();
        stream.is_some_and(|s| s.request_cancel())
    }

    /// Start producing into a message row the application already inserted. Must be called inside a tokio runtime (the
    /// stream's checkpoint driver is spawned on it).
    pub async fn open(&self, stream_id: &str) -> Result<StreamHandle, PlaneError> {
        let shared = &self.shared;
        if shared.draining.load(Ordering::SeqCst) {
            return Err(draining());
        }
        {
            let live = shared.live();
            if live.get(stream_id).is_some_and(|s| !s.is_ended()) {
                return Err(already_open(stream_id));
            }
            let mut opening = shared.opening.lock().unwrap_or_else(|e| e.into_inner());
            if !opening.insert(stream_id.to_owned()) {
                return Err(already_open(stream_id));
            }
        }
        let _reservation = OpeningGuard { shared, id: stream_id.to_owned() };
        self.open_in_store(stream_id).await?;
        let stream = LiveStream::new(stream_id, shared.cfg.clone(), Arc::downgrade(shared));
        shared.live().insert(stream_id.to_owned(), stream.clone());
        tokio::spawn(stream.clone().drive());
        let handle = StreamHandle { stream };
        if shared.draining.load(Ordering::SeqCst) {
            // A drain began while the store was being opened: this stream is sealed with the
            // rest rather than left streaming.
            let _ = handle.seal(Seal { status: StreamStatus::Interrupted, error: None }).await;
            return Err(draining());
        }
        Ok(handle)
    }

    async fn open_in_store(&self, stream_id: &str) -> Result<(), PlaneError> {
        let cfg = &self.shared.cfg;
        // The precondition is read once (retrying only read failures): re-deciding it after
        // the open write would make a lost acknowledgement refuse its own success.
        self.with_retries(|| cfg.target.check_openable(stream_id)).await?;
        let request = OpenRequest { stream_id, host_token: &cfg.host_token };
        self.with_retries(|| cfg.target.open(request)).await
    }

    async fn with_retries<T, F, Fut>(&self, mut op: F) -> Result<T, PlaneError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, PlaneError>>,
    {
        let retry = |attempt| {
            if attempt > 0 {
                tracing::debug!(attempt, "retrying a store call");
            }
            op()
        };
        self.shared.cfg.retry.retry(retry, PlaneError::is_retryable).await
    }

    /// Subscribe `user` to `stream_id` from `from` (see the module guarantees).
    ///
    /// `user` reaches the authorizer as `&dyn Any`; pass the same type the authorizer expects.
    pub async fn subscribe<U: Any + Send + Sync>(
        &self,
        user: &U,
        stream_id: &str,
        from: u64,
    ) -> Result<Subscription, PlaneError> {
        let cfg = &self.shared.cfg;
        let request = AuthRequest { user_any: user, stream_id, from };
        // Authorize FIRST: nothing about the stream has been looked at yet, so a denial (or its
        // timing) cannot reveal existence. A panicking authorizer denies.
        let allowed = AssertUnwindSafe(cfg.authorizer.authorize(request)).catch_unwind().await.unwrap_or(false);
        if !allowed {
            return Err(PlaneError::forbidden(stream_id));
        }
        let hosted = self.shared.live().get(stream_id).cloned();
        if let Some(stream) = hosted {
            return Ok(stream.subscribe(from));
        }
        Ok(relay_leg::attach(cfg, stream_id, from).await.map_or_else(Subscription::absent, Subscription::relayed))
    }

    /// Seal every live stream `interrupted` and take no new ones. Wire it to SIGTERM.
    pub async fn drain(&self) -> DrainReport {
        self.shared.draining.store(true, Ordering::SeqCst);
        let streams: Vec<Arc<LiveStream>> = self.shared.live().values().cloned().collect();
        let seals = streams.into_iter().map(|stream| async move {
            let rx = stream.request_seal(Seal { status: StreamStatus::Interrupted, error: None });
            (stream.id.clone(), await_seal(rx).await)
        });
        let mut report = DrainReport::default();
        for (id, outcome) in futures::future::join_all(seals).await {
            match outcome {
                Ok(()) => report.sealed.push(id),
                Err(e) => report.failed.push((id, e)),
            }
        }
        // The seals above published their `end` frames into the relay's queue; without this wait
        // the process could exit with them still queued, and readers on other instances would
        // sit until their idle timeout and end `stale`.
        let cfg = &self.shared.cfg;
        if let Some(relay) = cfg.relay.as_ref().filter(|_| cfg.topology.publish) {
            let limit = cfg.drain_relay;
            report.relay_flush = Some(match tokio::time::timeout(limit, relay.flush()).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(format!("the relay could not write out its queue: {e}")),
                Err(_) => Err(format!("the relay's queue was not written out within {} ms", limit.as_millis())),
            });
        }
        report
    }

    /// Whether `drain` has been called.
    pub fn is_draining(&self) -> bool {
        self.shared.draining.load(Ordering::SeqCst)
    }

    /// Drain the plane when the process receives SIGTERM or SIGINT. The handlers are installed
    /// before this returns (so no signal is missed); the returned task resolves with the drain's
    /// report. Must be called inside a tokio runtime.
    #[cfg(unix)]
    pub fn drain_on_sigterm(&self) -> Result<tokio::task::JoinHandle<DrainReport>, PlaneError> {
        use tokio::signal::unix::{signal, SignalKind};
        let install = |kind: SignalKind| {
            signal(kind).map_err(|e| {
                PlaneError::new(PlaneErrorKind::InvalidOptions, "cannot install a signal handler").with_source(e)
            })
        };
        let mut term = install(SignalKind::terminate())?;
        let mut int = install(SignalKind::interrupt())?;
        let plane = self.clone();
        Ok(tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            tracing::info!("signal received: draining the stream plane");
            plane.drain().await
        }))
    }
}

impl std::fmt::Debug for Plane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plane").field("hosted", &self.shared.live().len()).finish()
    }
}

fn draining() -> PlaneError {
    PlaneError::new(PlaneErrorKind::Draining, "the plane is draining and opens no new streams")
}

fn already_open(stream_id: &str) -> PlaneError {
    PlaneError::new(PlaneErrorKind::AlreadyOpen, format!("stream {stream_id} is already open on this plane"))
}

async fn await_seal(mut rx: tokio::sync::watch::Receiver<Option<Result<(), PlaneError>>>) -> Result<(), PlaneError> {
    match rx.wait_for(|v| v.is_some()).await {
        Ok(v) => v.clone().unwrap_or(Ok(())),
        Err(_) => Err(PlaneError::new(PlaneErrorKind::Shutdown, "the plane stopped before the seal finished")),
    }
}

/// The producer's handle on one stream. Dropping it without a seal seals the stream
/// `interrupted` (a producer that died must not leave readers waiting).
pub struct StreamHandle {
    stream: Arc<LiveStream>,
}

impl StreamHandle {
    pub fn stream_id(&self) -> &str {
        &self.stream.id
    }

    /// Produced code units.
    pub fn seq(&self) -> u64 {
        self.stream.seq()
    }

    /// Code units the store confirmed; never more than [`StreamHandle::seq`].
    pub fn durable_seq(&self) -> u64 {
        self.stream.durable_seq()
    }

    /// Whether a reader cancelled: a checkpoint read the store's cancel flag back, or
    /// [`Plane::cancel`] was called here.
    pub fn cancelled(&self) -> bool {
        self.stream.cancelled()
    }

    /// Whether a seal was requested (by `close`, `fail`, `drain` or a dropped handle).
    pub fn is_sealed(&self) -> bool {
        self.stream.is_sealing_or_ended()
    }

    /// Append a delta: fanned out to subscribers now, checkpointed on policy.
    pub fn push(&self, text: &str) -> Result<(), PlaneError> {
        self.stream.push(Text::from(text))
    }

    /// Append raw UTF-16 code units (text that came from JavaScript: a delta may end in half a
    /// surrogate pair, and unpaired surrogates are kept as they are).
    pub fn push_units(&self, units: &[u16]) -> Result<(), PlaneError> {
        self.stream.push(Text::from_slice(units))
    }

    /// Resolve once the store holds everything produced so far (the ordering primitive), with
    /// the durable length; rejected when that text did not land.
    pub async fn flush(&self) -> Result<u64, PlaneError> {
        let rx = match self.stream.flush_waiter()? {
            FlushWait::Done(durable) => return Ok(durable),
            FlushWait::Pending(rx) => rx,
        };
        self.stream.kick.notify_one();
        rx.await.unwrap_or_else(|_| Err(PlaneError::new(PlaneErrorKind::Shutdown, "the plane stopped")))
    }

    /// Push every delta of `deltas`, stopping early (and dropping the source, which aborts the
    /// request behind it) once a reader cancels (see [`StreamHandle::cancelled`]).
    pub async fn pump<S>(&self, deltas: S) -> Result<(), PlaneError>
    where
        S: Stream,
        S::Item: AsRef<str>,
    {
        let mut deltas = pin!(deltas);
        loop {
            let cancelled = self.stream.cancel_signal.notified();
            let mut cancelled = pin!(cancelled);
            cancelled.as_mut().enable();
            if self.cancelled() {
                return Ok(());
            }
            tokio::select! {
                biased;
                _ = &mut cancelled => return Ok(()),
                next = deltas.next() => match next {
                    None => return Ok(()),
                    Some(delta) => self.push(delta.as_ref())?,
                },
            }
        }
    }

    /// Seal `complete`, or `cancelled` when a reader asked the producer to stop. Resolves when
    /// the seal landed; rejected (the stream still ends) when it did not.
    pub async fn close(&self) -> Result<(), PlaneError> {
        let status = if self.cancelled() { StreamStatus::Cancelled } else { StreamStatus::Complete };
        self.seal(Seal { status, error: None }).await
    }

    /// Seal `error` with `error` as the message.
    pub async fn fail(&self, error: &str) -> Result<(), PlaneError> {
        self.seal(Seal { status: StreamStatus::Error, error: Some(error.to_owned()) }).await
    }

    async fn seal(&self, seal: Seal) -> Result<(), PlaneError> {
        await_seal(self.stream.request_seal(seal)).await
    }
}

impl Drop for StreamHandle {
    fn drop(&mut self) {
        if !self.stream.is_sealing_or_ended() {
            tracing::debug!(stream_id = %self.stream.id, "stream handle dropped unsealed: sealing it interrupted");
            drop(self.stream.request_seal(Seal { status: StreamStatus::Interrupted, error: None }));
        }
    }
}

impl std::fmt::Debug for StreamHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamHandle").field("stream_id", &self.stream.id).finish()
    }
}
