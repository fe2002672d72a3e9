//! The streams this server opened for producers: each one's handle, the lock that orders its
//! appends, its cancel signal and how it was sealed; and the sweep that seals a stream whose
//! producer went quiet and forgets sealed ones after their linger time (the guarantees are the
//! producer API's, in `mod.rs`).

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use twoplane_stream::{CancelHook, Plane, PlaneError, StreamHandle, StreamStatus};

use crate::access::Access;
use crate::store::Database;
use twoplane_runtime::lock;

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

/// The part ids a producer named for its message (`events.rs`): its own names for the parts, by
/// their numbers.
#[derive(Default)]
pub(crate) struct PartIds {
    ids: HashMap<Vec<u16>, u32>,
}

impl PartIds {
    pub fn get(&self, name: &[u16]) -> Option<u32> {
        self.ids.get(name).copied()
    }

    pub fn insert(&mut self, name: Vec<u16>, part: u32) {
        self.ids.insert(name, part);
    }
}

/// How a producer says its stream ended.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ending<'a> {
    /// It is complete (`cancelled` if a reader cancelled it meanwhile).
    Done,
    /// It failed, with this message (`error`).
    Failed(&'a str),
    /// Its run was aborted (`cancelled`), with this reason if any.
    Cancelled(Option<&'a str>),
    /// It went away without saying (`interrupted`).
    Interrupted,
}

/// One stream opened through this API.
pub(crate) struct Producing {
    pub id: String,
    pub handle: StreamHandle,
    /// Held across an offset check and its push, so appends to one stream are serialized.
    pub order: Mutex<()>,
    /// Cancelled when the plane reports a reader's cancel (a streaming body ends on it).
    pub cancel: CancellationToken,
    /// A streaming body is being read right now.
    pub body_active: AtomicBool,
    /// The part ids its producer named (`events.rs`).
    pub part_ids: Mutex<PartIds>,
    touched: Mutex<Instant>,
    /// How the stream was sealed (the first seal wins) and when.
    sealed: Mutex<Option<(StreamStatus, Instant)>>,
    /// The refusal that ended its last streaming body (`kind`, message): the status answer
    /// repeats it, for a client whose connection was reset before the refusal reached it.
    pub refused: Mutex<Option<(&'static str, String)>>,
}

impl Producing {
    fn new(handle: StreamHandle) -> Arc<Producing> {
        Arc::new(Producing {
            id: handle.stream_id().to_owned(),
            handle,
            order: Mutex::new(()),
            cancel: CancellationToken::new(),
            body_active: AtomicBool::new(false),
            part_ids: Mutex::new(Default::default()),
            touched: Mutex::new(Instant::now()),
            sealed: Mutex::new(None),
            refused: Mutex::new(None),
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
        self.seal_as(match error {
            Some(message) => Ending::Failed(message),
            None => Ending::Done,
        })
        .await
    }

    /// [`Producing::seal`] with how the producer says its stream ended.
    pub async fn seal_as(&self, ending: Ending<'_>) -> (StreamStatus, Result<(), PlaneError>) {
        let ended = {
            let mut sealed = lock(&self.sealed);
            let ended = match (*sealed, ending) {
                (Some((ended, _)), _) => ended,
                // Sealed by the plane itself (a drain at shutdown): its seal stands.
                (None, _) if self.handle.is_sealed() => StreamStatus::Interrupted,
                (None, Ending::Failed(_)) => StreamStatus::Error,
                (None, Ending::Cancelled(_)) => StreamStatus::Cancelled,
                (None, Ending::Interrupted) => StreamStatus::Interrupted,
                (None, Ending::Done) if self.handle.cancelled() => StreamStatus::Cancelled,
                (None, Ending::Done) => StreamStatus::Complete,
            };
            if sealed.is_none() {
                *sealed = Some((ended, Instant::now()));
            }
            ended
        };
        // The plane keeps the first seal asked for and hands every caller its outcome.
        let outcome = match ending {
            Ending::Failed(message) if ended == StreamStatus::Error => self.handle.fail(message).await,
            Ending::Cancelled(reason) if ended == StreamStatus::Cancelled => {
                self.handle.close_as(StreamStatus::Cancelled, reason).await
            }
            Ending::Interrupted if ended == StreamStatus::Interrupted => {
                self.handle.close_as(StreamStatus::Interrupted, None).await
            }
            _ => self.handle.close().await,
        };
        (ended, outcome)
    }

    /// A reader's cancel reached the stream: tell a streaming body, and seal `cancelled` so the
    /// readers end.
    async fn on_cancel(self: Arc<Self>) {
        tracing::info!(stream_id = ?self.id, seq = self.handle.seq(), "a reader cancelled the stream");
        self.cancel.cancel();
        let _ = self.seal(None).await;
    }
}

/// The ids of the streams a reader cancelled, as the plane reports them through the hook
/// [`cancel_feed`] makes. Unbounded, and bounded all the same: the plane reports a stream's cancel
/// once, so it holds at most one id per stream hosted here.
pub struct Cancels(UnboundedReceiver<String>);

/// The plane's cancel hook (for [`twoplane_stream::PlaneOptions::on_cancel`]) and the feed of
/// what it reports, for the producer API (`routes`).
pub fn cancel_feed() -> (CancelHook, Cancels) {
    let (tx, rx) = unbounded_channel();
    let hook: CancelHook = Arc::new(move |id: &str| {
        // Refused only once the API's task is gone, when there is no producer left to tell.
        let _ = tx.send(id.to_owned());
    });
    (hook, Cancels(rx))
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
    pub fn new(plane: Plane, db: Database, access: Arc<Access>, limits: Limits) -> Producers {
        Producers { plane, db, access, limits, streams: Arc::new(Mutex::new(HashMap::new())) }
    }

    pub fn get(&self, id: &str) -> Option<Arc<Producing>> {
        lock(&self.streams).get(id).cloned()
    }

    /// Register a stream the plane just opened. A cancel that reached it before it was in the
    /// map found nothing to act on ([`Producers::follow_cancels`]), so it is acted on here (the
    /// flag is set before the hook runs: a cancel is never missed by both).
    pub fn adopt(&self, handle: StreamHandle) -> Arc<Producing> {
        let producing = Producing::new(handle);
        lock(&self.streams).insert(producing.id.clone(), producing.clone());
        if producing.handle.cancelled() {
            tokio::spawn(producing.clone().on_cancel());
        }
        producing
    }

    /// Act on each reader's cancel the plane reports ([`cancel_feed`]): one task for every
    /// stream, where a task per stream waited for it before (its memory was paid by each open
    /// stream). Runs until the process ends.
    pub(super) async fn follow_cancels(self, mut cancels: Cancels) {
        while let Some(id) = cancels.0.recv().await {
            // A seal waits for its checkpoint: each runs on its own, so one slow store call
            // does not hold up the next cancel. Acting twice is harmless (the first seal wins).
            if let Some(p) = self.get(&id) {
                tokio::spawn(p.on_cancel());
            }
        }
    }

    /// Forget sealed streams after the linger time, and seal `interrupted` the streams whose
    /// producer went quiet for the idle time. Runs until the process ends.
    pub(super) async fn sweep(self) {
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
                tracing::warn!(stream_id = ?p.id, seq = p.handle.seq(), "producer went quiet; sealing the stream interrupted");
                *lock(&p.sealed) = Some((StreamStatus::Interrupted, now));
                // The map's reference is gone; the last one dropping the handle seals it
                // `interrupted` (the plane's rule for a producer that disappeared).
            }
        }
    }
}
