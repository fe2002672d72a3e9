//! The plane: hosts streams, opens them on the store, routes subscribers, drains on shutdown.
//!
//! Guarantees:
//! - `open` checks the store's precondition once (row present, `seq = 0`, not `streaming`),
//!   then marks the row `streaming` with retries (with a host column: a compare-and-swap whose
//!   read-back names the winner); one plane hosts at most one live stream per id.
//! - `subscribe` asks the authorizer before anything is looked up, and a denial is the same
//!   error whether or not the stream exists. Then: hosted here, one atomic replay; otherwise
//!   the relay (bounded, conformed), otherwise `absent`.
//! - A UI reader is asked for once per request: [`Plane::authorize_read`] asks the authorizer and
//!   returns an [`Authorized`] (only the plane makes one, for one stream id), which a join of a
//!   hosted stream ([`HostedUi::join`]) or of the relay ([`Plane::relayed_ui`]) takes by value
//!   instead of asking again. Whether the stream is hosted here is looked up once
//!   ([`Plane::hosted_ui`]), so a server decides between the plane and its store on one answer.
//! - `drain` seals every live stream `interrupted` and refuses new streams from then on, waits
//!   for the seals (each retries a failing store until its deadline; the drain waits at most
//!   `drain_seal_ms` and reports a seal still trying with its durable prefix), then waits
//!   (bounded) for the relay to write out the `end` frames it queued.
//! - A sealed stream stays joinable for `linger_ms`, then is evicted: the plane spawns each
//!   stream's checkpoint driver and removes the stream from its map when the driver returns
//!   (unless a newer stream took the id), so the stream needs no pointer back to the plane.
//! - The plane alone turns what a stream's join or the relay leg returned into a
//!   [`Subscription`].

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::FutureExt;
use twoplane_core::Text;

use crate::auth::AuthRequest;
use crate::error::{PlaneError, PlaneErrorKind};
use crate::handle::StreamHandle;
use crate::hosted::{wait_seal, LiveStream, Seal};
use crate::options::{Config, PlaneOptions};
use crate::relay_leg;
use crate::subscription::Subscription;
use crate::target::{DurableTarget, ExpandRow, OpenRequest, ReopenRequest, TargetCaps};

/// A cheaply cloneable handle on one plane.
#[derive(Clone)]
pub struct Plane {
    shared: Arc<PlaneShared>,
}

struct PlaneShared {
    cfg: Arc<Config>,
    live: Mutex<HashMap<String, Arc<LiveStream>>>,
    /// Ids with an `open` in flight, so two opens of one id in one process cannot both win.
    opening: Mutex<HashSet<String>>,
    draining: AtomicBool,
}

impl PlaneShared {
    fn live(&self) -> MutexGuard<'_, HashMap<String, Arc<LiveStream>>> {
        twoplane_runtime::lock(&self.live)
    }

    /// Remove `stream` from the map if it is still the entry for its id (a newer stream with
    /// the same id may have replaced it).
    fn evict(&self, stream: &Arc<LiveStream>) {
        let mut live = self.live();
        if live.get(&stream.id).is_some_and(|s| Arc::ptr_eq(s, stream)) {
            live.remove(&stream.id);
        }
    }
}

/// Proof that the plane's authorizer let a reader read one stream ([`Plane::authorize_read`]):
/// only the plane makes one. A UI join takes it by value, so one check serves one join; a later
/// request (a continuation of a long response) asks again.
#[derive(Debug)]
pub struct Authorized {
    stream_id: String,
}

impl Authorized {
    /// The stream the reader may read.
    pub fn stream_id(&self) -> &str {
        &self.stream_id
    }
}

/// A stream hosted here, as [`Plane::hosted_ui`] found it.
pub struct HostedUi {
    stream: Arc<LiveStream>,
}

impl HostedUi {
    /// Join it as a UI reader that holds the message at `from` ([`Plane::subscribe_ui`]), with
    /// the proof that the reader may read it (a proof for another stream is refused as a denial).
    pub fn join(self, authorized: Authorized, from: u64, fresh: bool) -> Result<Subscription, PlaneError> {
        if authorized.stream_id != self.stream.id {
            return Err(PlaneError::forbidden(&authorized.stream_id));
        }
        let stream = self.stream;
        Ok(match stream.join_ui(from, fresh) {
            Some(join) => Subscription::joined_ui(join),
            None => {
                Subscription::as_ui(Subscription::joined(stream.join(from)), stream.id.as_str().into(), from, fresh)
            }
        })
    }
}

/// Clears an `opening` reservation however `open` ends (including cancellation).
struct OpeningGuard<'a> {
    shared: &'a PlaneShared,
    id: String,
}

impl Drop for OpeningGuard<'_> {
    fn drop(&mut self) {
        twoplane_runtime::lock(&self.shared.opening).remove(&self.id);
    }
}

/// What a plane hosts right now ([`Plane::census`]): for metrics and health checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Streams taking text.
    pub live: usize,
    /// Streams whose seal was asked for and has not settled.
    pub sealing: usize,
    /// Sealed streams still joinable (their linger).
    pub ended: usize,
    /// Code units produced that the store has not confirmed, over every hosted stream.
    pub undurable_units: u64,
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

    /// How many streams are hosted here, by status, and the text they hold that is not durable
    /// yet. One pass over the hosted streams under the map's lock, each stream's own lock taken
    /// briefly: cheap at a scrape's rate, not meant for a per-frame path.
    pub fn census(&self) -> Census {
        let streams: Vec<Arc<LiveStream>> = self.shared.live().values().cloned().collect();
        let mut census = Census::default();
        for stream in streams {
            if stream.is_ended() {
                census.ended += 1;
            } else if stream.is_sealing_or_ended() {
                census.sealing += 1;
            } else {
                census.live += 1;
            }
            census.undurable_units += stream.seq().saturating_sub(stream.durable_seq());
        }
        census
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
        let _reservation = self.reserve(stream_id)?;
        self.open_in_store(stream_id).await?;
        self.host(LiveStream::new(stream_id, shared.cfg.clone())).await
    }

    /// Go on with a stream from `at`, the durable end of the message it made (docs/contract.md
    /// §9): after it ended (`complete`, `interrupted`, `cancelled`, `error`, or a seal that came
    /// up short), or after its producer died. The stream's row goes back to `streaming` for this
    /// producer, the same coordinate goes on from `at` (readers resuming from their offset get
    /// what follows), and the next seal compacts the whole message at its new end.
    ///
    /// Refused, changing nothing: `open_refused` without a row or while a producer holds it (of
    /// two producers going on at once, one wins), `wrong_offset` when the row does not stand at
    /// `at`, `already_open` while this plane streams it, and `invalid_argument` when the store
    /// cannot give the message back exactly (a callback target; a message with parts compacted
    /// by a version whose document kept no order of its events, no `spans`).
    pub async fn reopen(&self, stream_id: &str, at: u64) -> Result<StreamHandle, PlaneError> {
        let _reservation = self.reserve(stream_id)?;
        let cfg = &self.shared.cfg;
        let stored = self
            .with_retries(|| cfg.target.load(stream_id))
            .await?
            .ok_or_else(|| PlaneError::open_refused(format!("stream {stream_id}: no message row to go on with")))?;
        if stored.seq != at {
            return Err(crate::verdict::wrong_offset(stream_id, at, stored.seq));
        }
        // The message: exactly as the ended stream still hosted here made it, else as the store
        // gives it back.
        let lingering = self.shared.live().get(stream_id).cloned();
        // A row still `streaming` is held by a producer, unless it is this host's own stream,
        // ended with a seal that never landed (`not_durable`): where the table names the host,
        // the claim itself decides (it takes a row held by this host's token only); without a
        // host column, only the stream that ended here is known to be this host's.
        let own = cfg.target.caps().has_host || lingering.as_ref().is_some_and(|s| s.is_ended());
        if stored.status.as_deref() == Some(twoplane_core::STREAM_STATUS_STREAMING) && !own {
            return Err(PlaneError::open_refused(format!(
                "stream {stream_id}: a producer holds the row (if it died, the sweeper releases it once its lease ends)"
            )));
        }
        let frames = match lingering.and_then(|s| s.frames_until(at)) {
            Some(frames) => frames,
            None => {
                let text = |s: &Option<String>| s.as_deref().map(Text::from);
                twoplane_core::message::stored_frames(
                    text(&stored.body).as_ref(),
                    text(&stored.document).as_ref(),
                    &stored.chunks,
                )
                .map_err(|e| PlaneError::store(format!("stream {stream_id}: its stored rows do not read back: {}", e.message())))?
                .ok_or_else(|| {
                    PlaneError::new(
                        PlaneErrorKind::InvalidArgument,
                        format!(
                            "stream {stream_id}: its message was compacted without the order of its parts' events, so it \
                             cannot go on exactly"
                        ),
                    )
                })?
            }
        };
        let stream = LiveStream::new(stream_id, cfg.clone());
        stream.seed(&frames, at)?;
        // A compacted row goes back to chunk rows in the same claim; one with its chunk rows
        // (a producer that died) keeps them.
        let expanded = if stored.chunks.is_empty() && at > 0 { Some(stream.expanded_row()?) } else { None };
        let expand = expanded.as_ref().map(|(text, parts)| ExpandRow { text, parts: parts.as_deref() });
        let request = ReopenRequest { stream_id, host_token: &cfg.host_token, at, expand };
        self.with_retries(|| cfg.target.reopen(request)).await?;
        self.host(stream).await
    }

    /// Reserve `stream_id` for an open (refused while it streams here or another open runs).
    fn reserve(&self, stream_id: &str) -> Result<OpeningGuard<'_>, PlaneError> {
        let shared = &self.shared;
        if shared.draining.load(Ordering::SeqCst) {
            return Err(draining());
        }
        let live = shared.live();
        if live.get(stream_id).is_some_and(|s| !s.is_ended()) {
            return Err(already_open(stream_id));
        }
        let mut opening = twoplane_runtime::lock(&shared.opening);
        if !opening.insert(stream_id.to_owned()) {
            return Err(already_open(stream_id));
        }
        Ok(OpeningGuard { shared, id: stream_id.to_owned() })
    }

    /// Host `stream`, whose row this plane just claimed: in the map (in place of an ended one),
    /// its checkpoint driver started, a handle for its producer.
    async fn host(&self, stream: Arc<LiveStream>) -> Result<StreamHandle, PlaneError> {
        let shared = &self.shared;
        let stream_id = stream.id.clone();
        shared.live().insert(stream_id.clone(), stream.clone());
        // The driver returns when the stream is to leave the map; a plane already dropped has
        // no map to leave.
        let plane = Arc::downgrade(shared);
        let driven = stream.clone();
        tokio::spawn(async move {
            driven.clone().drive().await;
            if let Some(plane) = plane.upgrade() {
                plane.evict(&driven);
            }
        });
        let handle = StreamHandle::new(stream);
        if shared.draining.load(Ordering::SeqCst) {
            // A drain began while the store was being opened: this stream is sealed with the
            // rest rather than left streaming.
            let _ = handle.seal(Seal::interrupted()).await;
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
        self.authorize(user, stream_id, from).await?;
        let hosted = self.shared.live().get(stream_id).cloned();
        if let Some(stream) = hosted {
            return Ok(Subscription::joined(stream.join(from)));
        }
        Ok(self.relayed(stream_id, from).await)
    }

    /// Authorize FIRST: nothing about the stream has been looked at yet, so a denial (or its
    /// timing) cannot reveal existence. A panicking authorizer denies.
    async fn authorize<U: Any + Send + Sync>(&self, user: &U, stream_id: &str, from: u64) -> Result<(), PlaneError> {
        let request = AuthRequest { user_any: user, stream_id, from };
        let allowed =
            AssertUnwindSafe(self.shared.cfg.authorizer.authorize(request)).catch_unwind().await.unwrap_or(false);
        if allowed {
            Ok(())
        } else {
            Err(PlaneError::forbidden(stream_id))
        }
    }

    /// Ask the authorizer whether `user` may read `stream_id` (from `from`), as
    /// [`Plane::subscribe`] does, before anything about the stream is looked at; the answer is
    /// the proof a UI join takes instead of asking again ([`HostedUi::join`],
    /// [`Plane::relayed_ui`]). A denial is the same error whether or not the stream exists.
    pub async fn authorize_read<U: Any + Send + Sync>(
        &self,
        user: &U,
        stream_id: &str,
        from: u64,
    ) -> Result<Authorized, PlaneError> {
        self.authorize(user, stream_id, from).await?;
        Ok(Authorized { stream_id: stream_id.to_owned() })
    }

    /// The stream `stream_id` if it is hosted here (live, or lingering after its seal), to join
    /// as a UI reader; `None`: it is not, and a reader is served by the store or the relay
    /// ([`Plane::relayed_ui`]). One lookup: what is decided on it is decided once.
    pub fn hosted_ui(&self, stream_id: &str) -> Option<HostedUi> {
        self.shared.live().get(stream_id).cloned().map(|stream| HostedUi { stream })
    }

    /// A stream not hosted here, read as the UI message stream ([`Plane::subscribe_ui`]) from the
    /// relay's frames (or `absent`), encoded for this reader alone: the stream `authorized` says
    /// the reader may read.
    pub async fn relayed_ui(&self, authorized: Authorized, from: u64, fresh: bool) -> Subscription {
        let frames = self.relayed(&authorized.stream_id, from).await;
        Subscription::as_ui(frames, Text::from(authorized.stream_id.as_str()), from, fresh)
    }

    /// A stream not hosted here: through the relay, or `absent`.
    async fn relayed(&self, stream_id: &str, from: u64) -> Subscription {
        relay_leg::attach(&self.shared.cfg, stream_id, from)
            .await
            .map_or_else(Subscription::absent, Subscription::relayed)
    }

    /// A subscription read as the AI SDK's UI message stream (docs/ai-sdk.md, "Resuming") by a
    /// reader that holds the message at `from`, authorized as [`Plane::subscribe`] is. With
    /// `fresh` (a new response) it starts with `start` and the message at `from`, so the SDK
    /// rebuilds what it holds; without, it starts with what takes the reader from there to the
    /// message now (a response already under way continues). Then the tail, as UI events, read
    /// with [`Subscription::poll_sse`]; a hosted stream encodes each frame once for all its UI
    /// readers. It ends with `[DONE]` after the stream's end, or without it (a `stale`, an
    /// `absent`): [`Subscription::ui_outcome`] then says from where to continue.
    pub async fn subscribe_ui<U: Any + Send + Sync>(
        &self,
        user: &U,
        stream_id: &str,
        from: u64,
        fresh: bool,
    ) -> Result<Subscription, PlaneError> {
        let authorized = self.authorize_read(user, stream_id, from).await?;
        match self.hosted_ui(stream_id) {
            Some(hosted) => hosted.join(authorized, from, fresh),
            None => Ok(self.relayed_ui(authorized, from, fresh).await),
        }
    }

    /// Seal every live stream `interrupted` and take no new ones. Wire it to SIGTERM.
    pub async fn drain(&self) -> DrainReport {
        self.shared.draining.store(true, Ordering::SeqCst);
        let streams: Vec<Arc<LiveStream>> = self.shared.live().values().cloned().collect();
        let bound = self.shared.cfg.drain_seal;
        let seals = streams.into_iter().map(|stream| async move {
            let rx = stream.request_seal(Seal::interrupted());
            let outcome = match tokio::time::timeout(bound, wait_seal(rx)).await {
                Ok(outcome) => outcome,
                // The seal goes on trying until the process exits; what the store holds is
                // what the durable length says.
                Err(_) => Err(PlaneError::new(
                    PlaneErrorKind::NotDurable,
                    format!(
                        "stream {}: the seal was still trying when the drain's {} ms passed; {} of {} code units are durable",
                        stream.id,
                        bound.as_millis(),
                        stream.durable_seq(),
                        stream.seq()
                    ),
                )),
            };
            (stream.id.clone(), outcome)
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
